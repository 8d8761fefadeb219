package lower

import (
	"cmp"

	"tec/backend/kir"
	"tec/contraction"
	"tec/schedule"
	"tec/te"
)

// This file lowers a contraction whose operands tensor cores can multiply
// (contraction.TensorCoreType: f16, bf16 or TF32 values, as the precision
// pass writes them) to tensor-core MMAs, in unfused kernels (-O0 to -O2):
// the products are exact in f32 on either path, so the tensor-core kernel
// computes the same sum as the SIMT one, in another order.
//
// A block of four warps computes a TM×TN tile (schedule.TensorCoreTile:
// 64, or 32 where the extent is at most 32), each warp a (TM/2)×(TN/2) quarter of it as
// m16n8 MMA tiles with f32 accumulators in registers. Each step of the
// k loop stages TM×32 operands of X and 32×TN of Y (or TN×32 of a
// k-major Y: an [out, in] weight, the K of Q·Kᵀ) in shared memory (in
// the operands' type, zero past K, each row's 16-byte chunks rotated as
// the package doc's "Shared tiles" says), as contraction.StagingOf
// decides: where both are bare loads of half tensors, contiguous and
// aligned along the tile's rows, by cp.async into a pipeline of stages
// (two, or the 3 or 4 of the plan's schedule.TCBlock.Stages where shared
// memory holds them without fewer blocks per SM), the next stages − 1
// steps' copies in flight while the warps compute this one, one barrier a
// step; where an
// operand's moving loads are contiguous but it is computed (a cast, a
// rounding, exp(s - max), a reshape's index map), or aligned to 8 or 4
// bytes only (rows of 196 halves, a weight packed at an offset of 4
// halves), by a register prefetch: every thread issues the next step's
// 16-byte loads (8- or 4-byte ones) before this step's MMAs, and at the
// next step computes its vectors from them and stores them with 16-byte
// stores into the other stage, one barrier a step; otherwise element by
// element. Every thread's chunks of a
// prefetch are a loop of a trip count known here, unrolled. Then every
// warp loads its fragments, with ldmatrix for f16 and bf16 (x4 for A,
// x2.trans for an n-major B, x2 for a k-major one) or element by element
// for TF32 (ldmatrix moves 16-bit elements only), and issues its MMAs.
// The epilogue evaluates the tensor's body (bias, GELU, residual...) on
// each accumulator element where the C fragment layout places it.
// Contractions with an extent below an MMA's keep the SIMT code.

// mmaShape returns the MMA shape for operands of type in.
func mmaShape(in te.DType) kir.MMAShape {
	if in == te.F32 {
		return kir.M16N8K8
	}
	return kir.M16N8K16
}

// tile is the layout of a staged operand tile in shared memory (the
// package doc's "Shared tiles"): rows of cols elements, each row cut into
// 16-byte chunks of vec elements, chunk j of row r stored at chunk
// j - j%p + (j%p + w·⌊r/q⌋) mod p of its row. p is min(chunks per row, 8)
// and q is max(8 / chunks per row, 1), the rows that share a 128-byte line,
// so that any 8 consecutive rows' chunk j lie in 8 different groups of 4
// banks; w is the chunks of one row that one wavefront of the tile's
// reads takes (1: an ldmatrix row or a TF32 A fragment's column of 4 words;
// 2: a TF32 B fragment's 8 columns). p = 1 is the plain row-major layout.
type tile struct {
	cols, vec int
	p, q, w   int
}

// newTile returns the layout of a tile of rows of cols elements of dt,
// rotated by w chunks per line of rows, or plain where flat is set or a
// row is one chunk.
func newTile(cols int, dt te.DType, w int, flat bool) tile {
	vec := kir.VecLen(dt)
	n := cols / vec // chunks per row
	if flat || n <= 1 {
		return tile{cols: cols, vec: vec, p: 1, q: 1, w: 0}
	}
	return tile{cols: cols, vec: vec, p: min(n, 8), q: max(8/n, 1), w: w}
}

// chunk returns the element index of the start of chunk j of row r. The
// rotation depends on r mod 8 only (q·p = 8), which rr, when not nil, gives
// as a simpler expression than r's (its lane-dependent part), so that the
// warps' indexes differ by constants wherever their rows do.
func (t tile) chunk(r, rr, j kir.Expr) kir.Expr {
	if rr == nil {
		rr = r
	}
	if t.p > 1 {
		rot := rr
		if t.q > 1 {
			rot = kir.Div(rot, kir.I(t.q))
		}
		if t.w > 1 {
			rot = kir.Mul(rot, kir.I(t.w))
		}
		if t.cols/t.vec == t.p { // j < p: the row is one group
			j = kir.Mod(kir.Add(j, rot), kir.I(t.p))
		} else {
			j = kir.Add(kir.Sub(j, kir.Mod(j, kir.I(t.p))), kir.Mod(kir.Add(kir.Mod(j, kir.I(t.p)), rot), kir.I(t.p)))
		}
	}
	return kir.Add(kir.Mul(r, kir.I(t.cols)), kir.Mul(j, kir.I(t.vec)))
}

// at returns the element index of element c of row r.
func (t tile) at(r, c kir.Expr) kir.Expr {
	if t.p == 1 {
		return kir.Add(kir.Mul(r, kir.I(t.cols)), c)
	}
	return kir.Add(t.chunk(r, nil, kir.Div(c, kir.I(t.vec))), kir.Mod(c, kir.I(t.vec)))
}

// tensorCoreType returns the operand type and the block of a tensor-core
// lowering of the contraction sum(X·Y) over extents M, N, K in a kernel of
// its own, and whether it applies: both operands of one MMA type, extents
// of at least an MMA's, and a block of four warps within the plan's. A
// fused kernel's stages take the plan's word instead (tensorCoreStage).
func (l *lowerer) tensorCoreType(X, Y te.Expr, M, N, K int) (te.DType, schedule.TCBlock, bool) {
	if l.tm > 0 {
		return 0, schedule.TCBlock{}, false // a fused kernel's SIMT stage
	}
	if l.opts.Plan != nil && l.opts.Plan.Threads < schedule.TensorCoreWarps*kir.WarpSize {
		return 0, schedule.TCBlock{}, false
	}
	x, ok := contraction.TensorCoreType(X, Y)
	if !ok || !contraction.TensorCoreFits(x, M, N, K) {
		return 0, schedule.TCBlock{}, false
	}
	return x, schedule.TensorCoreBlock(M, N), true
}

// affine returns the expression base + cg·g + ct·t, the row or column of
// a fragment element as FragElem gives it, which is affine in the lane's
// groupID g and threadID_in_group t.
func affine(base, cg, ct int, g, t kir.Expr) kir.Expr {
	e := kir.Expr(kir.I(base))
	if cg != 0 {
		e = kir.Add(kir.Mul(g, kir.I(cg)), e)
	}
	if ct != 0 {
		e = kir.Add(kir.Mul(t, kir.I(ct)), e)
	}
	return e
}

// fragIndex returns the row and column, as expressions of g and t, of the
// element of operand op of an MMA of the shape and operand type in that
// register i of a lane holds.
func fragIndex(shape kir.MMAShape, in te.DType, op kir.MMAOperand, i int, g, t kir.Expr) (row, col kir.Expr) {
	r0, c0 := kir.FragElem(shape, in, op, 0, i)
	r1, c1 := kir.FragElem(shape, in, op, 1, i) // t = 1
	r4, c4 := kir.FragElem(shape, in, op, 4, i) // g = 1
	return affine(r0, r4-r0, r1-r0, g, t), affine(c0, c4-c0, c1-c0, g, t)
}

// mmaContraction lowers t = f(sum[k](X·Y)) with tensor-core MMAs of
// operands of type in (see the file comment), in blocks of shape blk. ms,
// ns and batch are t's axes of X only, Y only and both; M, N, K and NB
// their extents. Where mask is set (a masked contraction), a tile that
// mask removes entirely skips its staging and k loop, as the SIMT tiles
// do (tileMask), and its epilogue writes the select's other branch.
func (l *lowerer) mmaContraction(t *te.Tensor, r *te.Reduce, X, Y te.Expr, in te.DType, ms, ns, batch []*te.Var, M, N, K, NB int, blk schedule.TCBlock, mask *schedule.Mask, k *kir.Kernel, body *[]kir.Stmt) {
	l.mmaSplitContraction(t, r, X, Y, in, ms, ns, batch, M, N, K, NB, blk, mask, 1, K, k, body)
}

// mmaSplitContraction is mmaContraction with K split over split blocks
// per output tile (a fused kernel's stage, schedule.Schedule.KSplit),
// block c of a tile summing k in [c·chunk, (c+1)·chunk), chunk = K/split a
// multiple of the staged k (each chunk's pipeline starts in stage 0). Each stores its tile's accumulators as
// f32 partials, in a global array of split × t's elements; after a grid
// sync, a finishing pass gives each thread an output, whose partials it
// adds in chunk order (the same sum on every run) before it evaluates t's
// body (the epilogue) on the sum. With split 1 it is mmaContraction.
func (l *lowerer) mmaSplitContraction(t *te.Tensor, r *te.Reduce, X, Y te.Expr, in te.DType, ms, ns, batch []*te.Var, M, N, K, NB int, blk schedule.TCBlock, mask *schedule.Mask, split, chunk int, k *kir.Kernel, body *[]kir.Stmt) {
	shape := mmaShape(in)
	_, _, mk := shape.Dims()
	TM, TN, tk := blk.TM, blk.TN, schedule.TensorCoreTileK
	WM, WN := TM/blk.WGM, TN/blk.WGN
	mt, nt := blk.WarpTile() // MMA tiles of a warp
	mtiles, ntiles := te.CeilDiv(M, TM), te.CeilDiv(N, TN)
	slices, group := blk.KSlices(), blk.WGM*blk.WGN // warps of a k slice
	k.Block = slices * group * kir.WarpSize
	k.Grid = kir.Grid{Blocks: NB * mtiles * ntiles * split}
	var part *kir.Buffer // the partials of a split K
	size := t.NumElements()
	if split > 1 {
		part = &kir.Buffer{Name: t.Name + ".part", Space: kir.Global, Role: kir.Temp, DType: te.F32, Shape: []int{split, size}}
		l.m.Buffers = append(l.m.Buffers, part)
	}
	// Operands moved 16 bytes at a time are double-buffered: the next
	// k step's copies or loads are in flight while the warps compute
	// this one (contraction.StagingOf).
	st := contraction.StagingOf(X, Y, in, ms, ns, r, M, N, K, l.arch.AsyncCopy())
	stages, async := st.Stages(), st.Async()
	if async {
		// cp.async copies into blk's pipeline of stages, the plan's
		// (partition.deepenPipelines), as deep as shared memory allows.
		stages = blk.PipelineStages()
	}
	kredBytes := 0
	if slices > 1 {
		kredBytes = (slices - 1) * mt * nt * 4 * group * kir.WarpSize * 4
	}
	// The epilogue's columns, staged once per tile where K is not split
	// and they fit beside the operands; counted, as partition counts
	// them, in the choice of the operands' stages either way.
	cols := contraction.EpilogueColumns(t, ns, N)
	colBytes := contraction.ColumnBytes(cols, TN)
	for stages > 2 && l.sharedPerBlock > 0 && stages*(TM+TN)*tk*in.Size()+kredBytes+colBytes > l.sharedPerBlock {
		stages--
	}
	if stages == 2 && l.sharedPerBlock > 0 && 2*(TM+TN)*tk*in.Size()+kredBytes+colBytes > l.sharedPerBlock {
		// Two stages do not fit the GPU's shared memory: one, still with
		// the register prefetch, but no copies in flight.
		stages, async = 1, false
		for _, op := range []*contraction.Operand{&st.X, &st.Y} {
			if op.Mode == contraction.StageAsync {
				op.Mode = contraction.StageVector
			}
		}
	}
	if split > 1 || l.sharedPerBlock > 0 && stages*(TM+TN)*tk*in.Size()+kredBytes+colBytes > l.sharedPerBlock {
		cols = nil
	}
	vector := !async && (st.X.Mode == contraction.StageVector || st.Y.Mode == contraction.StageVector)
	xo := l.operandTile(X, st.X, "xs", ms, TM, M, stages, in)
	yo := l.operandTile(Y, st.Y, "ys", ns, TN, N, stages, in)
	xs, ys := xo.s, yo.s
	na, nb := kir.FragLen(shape, kir.OperandA), kir.FragLen(shape, kir.OperandB)
	fa := &kir.Buffer{Name: "fa", Space: kir.Local, DType: in, Shape: []int{mt, na}}
	fb := &kir.Buffer{Name: "fb", Space: kir.Local, DType: in, Shape: []int{nt, nb}}
	acc := &kir.Buffer{Name: "acc", Space: kir.Local, DType: te.F32, Shape: []int{mt, nt, 4}}
	k.Shared = []*kir.Buffer{xs, ys}
	var kred *kir.Buffer // the accumulators of the k slices after the first
	if slices > 1 {
		kred = &kir.Buffer{Name: "kred", Space: kir.Shared, DType: te.F32, Shape: []int{(slices - 1) * acc.Len() * group * kir.WarpSize}}
		k.Shared = append(k.Shared, kred)
	}
	k.Locals = []*kir.Buffer{fa, fb, acc}
	buf := l.bufs[t]
	// The epilogue's stores of a lane's adjacent columns, paired.
	var pairs *kir.Buffer
	if dst := cmp.Or(part, buf); pairedColumns(t, ns, dst) {
		pairs = &kir.Buffer{Name: t.Name + ".pair", Space: kir.Local, DType: dst.DType, Shape: []int{2}}
		k.Locals = append(k.Locals, pairs)
	}

	tid, tile := kir.NewVar("tid", te.I32), kir.NewVar("tile", te.I32)
	lane, g, tg := kir.NewVar("lane", te.I32), kir.NewVar("g", te.I32), kir.NewVar("t", te.I32)
	wm, wn := kir.NewVar("wm", te.I32), kir.NewVar("wn", te.I32)
	kg, tig := kir.NewVar("kg", te.I32), kir.NewVar("tig", te.I32) // k slice, thread in it
	gen := l.gen(nil)
	inner := gen.into(func() {
		bt, mi, ni := kir.NewVar("b", te.I32), kir.NewVar("mt", te.I32), kir.NewVar("nt", te.I32)
		ot, c := tile, kir.NewVar("c", te.I32) // output tile, K chunk
		var klo kir.Expr = kir.I(0)
		if split > 1 {
			ot = kir.NewVar("ot", te.I32)
			kl := kir.NewVar("klo", te.I32)
			gen.emit(
				&kir.Let{Var: c, Value: kir.Mod(tile, kir.I(split))},
				&kir.Let{Var: ot, Value: kir.Div(tile, kir.I(split))},
				&kir.Let{Var: kl, Value: kir.Mul(c, kir.I(chunk))},
			)
			klo = kl
		}
		gen.emit(
			&kir.Let{Var: bt, Value: kir.Div(ot, kir.I(mtiles*ntiles))},
			&kir.Let{Var: mi, Value: digit(ot, ntiles, mtiles)},
			&kir.Let{Var: ni, Value: digit(ot, 1, ntiles)},
		)
		bind(gen, batch, bt)
		z := kir.NewVar("z", te.I32)
		gen.emit(&kir.For{Var: z, Kind: kir.Unrolled, Lo: kir.I(0), Hi: kir.I(acc.Len()), Step: 1,
			Body: []kir.Stmt{&kir.Store{Buf: acc, Index: z, Value: kir.F(0)}}})
		// k0 runs over the block's chunk, kc over its offset in it.
		k0, kc := kir.NewVar("k0", te.I32), kir.NewVar("k0", te.I32)
		if split == 1 {
			kc = k0
		}
		xo.ti, yo.ti = mi, ni
		var prefetched []*opTile // the operands of a register prefetch
		for _, o := range []*opTile{xo, yo} {
			if !vector || o.op.Mode != contraction.StageVector {
				continue
			}
			if l.prepareVector(gen, o, r, k.Block, o.s.Name[:1], k) {
				prefetched = append(prefetched, o)
			} else {
				o.op.Mode = contraction.StageElements
			}
		}
		fetch := func(from kir.Expr) []kir.Stmt {
			return gen.into(func() {
				for _, o := range prefetched {
					l.fetch(gen, o, r, tid, k.Block, from, K)
				}
			})
		}
		var products []kir.Stmt
		switch {
		case async:
			// The first stages − 1 steps, a group each (empty past the
			// chunk, so that every step waits on the same count).
			products = gen.into(func() {
				for q := range stages - 1 {
					if q*tk < chunk {
						l.stageAsync(gen, xo, r, addOffset(klo, kir.I(q*tk)), kir.I(q*TM*tk), K)
						l.stageAsync(gen, yo, r, addOffset(klo, kir.I(q*tk)), kir.I(q*tk*TN), K)
					}
					gen.emit(&kir.CommitGroup{})
				}
			})
		case vector:
			products = fetch(klo)
		}
		kloop := gen.into(func() {
			if split > 1 {
				gen.emit(&kir.Let{Var: k0, Value: kir.Add(klo, kc)})
			}
			var xoff, yoff kir.Expr = kir.I(0), kir.I(0)
			switch {
			case async:
				// Step i is in stage s = i mod stages, its group the
				// oldest of the stages − 1 in flight: once the thread's
				// is done, the barrier makes every thread's visible, and
				// every warp is done with step i − 1, whose stage then
				// takes step i + stages − 1's copies, in flight while
				// the warps compute this one. One barrier a step.
				iv, sv, ahead := kir.NewVar("i", te.I32), kir.NewVar("s", te.I32), kir.NewVar("sa", te.I32)
				gen.emit(
					&kir.Let{Var: iv, Value: kir.Div(kc, kir.I(tk))},
					&kir.Let{Var: sv, Value: kir.Mod(iv, kir.I(stages))},
					&kir.Let{Var: ahead, Value: kir.Mod(kir.Add(iv, kir.I(stages-1)), kir.I(stages))},
					&kir.WaitGroup{N: stages - 2},
					&kir.SyncThreads{},
				)
				next := gen.into(func() {
					l.stageAsync(gen, xo, r, kir.Add(k0, kir.I((stages-1)*tk)), kir.Mul(ahead, kir.I(TM*tk)), K)
					l.stageAsync(gen, yo, r, kir.Add(k0, kir.I((stages-1)*tk)), kir.Mul(ahead, kir.I(tk*TN)), K)
				})
				gen.emit(&kir.If{Cond: kir.Lt(kir.Add(kc, kir.I((stages-1)*tk)), kir.I(chunk)), Then: next},
					&kir.CommitGroup{})
				xoff, yoff = kir.Mul(sv, kir.I(TM*tk)), kir.Mul(sv, kir.I(tk*TN))
			case vector:
				// This step's tile goes to stage s, which no warp reads:
				// every warp passed the last barrier after its MMAs on
				// it. The next step's loads are issued before this
				// step's MMAs, one barrier a step (two with one stage).
				if stages == 2 {
					sv := kir.NewVar("s", te.I32)
					gen.emit(&kir.Let{Var: sv, Value: kir.Mod(kir.Div(kc, kir.I(tk)), kir.I(2))})
					xoff, yoff = kir.Mul(sv, kir.I(TM*tk)), kir.Mul(sv, kir.I(tk*TN))
				}
				for _, o := range []*opTile{xo, yo} {
					off := xoff
					if o == yo {
						off = yoff
					}
					if o.op.Mode == contraction.StageVector {
						l.put(gen, o, r, tid, k.Block, k0, off, K)
					} else {
						l.stageOperand(gen, o, r, k0, off, K)
					}
				}
				gen.emit(&kir.SyncThreads{})
				if next := fetch(kir.Add(k0, kir.I(tk))); len(next) > 0 {
					gen.emit(&kir.If{Cond: kir.Lt(kir.Add(kc, kir.I(tk)), kir.I(chunk)), Then: next})
				}
			default:
				l.stageOperand(gen, xo, r, k0, kir.I(0), K)
				l.stageOperand(gen, yo, r, k0, kir.I(0), K)
				gen.emit(&kir.SyncThreads{})
			}
			ks := kir.NewVar("ks", te.I32)
			step := mmaStep(shape, in, !l.arch.MMAK16(), xo, yo, xoff, yoff, fa, fb, acc, ks, lane, g, tg, wm, wn, WM, WN)
			if slices == 1 {
				gen.emit(&kir.For{Var: ks, Kind: kir.Unrolled, Lo: kir.I(0), Hi: kir.I(tk), Step: mk, Body: step})
			} else {
				// Slice kg takes the kg-th share of the staged k.
				kk := kir.NewVar("kk", te.I32)
				step = append([]kir.Stmt{&kir.Let{Var: ks, Value: kir.Add(kir.Mul(kg, kir.I(tk/slices)), kk)}}, step...)
				gen.emit(&kir.For{Var: kk, Kind: kir.Unrolled, Lo: kir.I(0), Hi: kir.I(tk / slices), Step: mk, Body: step})
			}
			if !async && (!vector || stages == 1) {
				gen.emit(&kir.SyncThreads{})
			}
		})
		products = append(products, &kir.For{Var: kc, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(chunk), Step: tk, Body: kloop})
		if vector && stages == 2 || async {
			// The next tile's first steps write stages from 0: every
			// warp must be done reading them.
			products = append(products, &kir.SyncThreads{})
		}
		if slices > 1 {
			products = append(products, sumSlices(acc, kred, kg, tig, slices, group*kir.WarpSize)...)
		}
		if live := mmaTileLive(gen, mask, mi, ni, bt, TM, TN, M, N); live != nil {
			// The same for every thread of the block: the barriers of the
			// k loop stay block-uniform.
			products = []kir.Stmt{&kir.If{Cond: live, Then: products}}
		}
		gen.emit(products...)
		for _, a := range r.Axes {
			delete(gen.env, a)
		}
		// The epilogue on each accumulator element, by the first k slice,
		// its loads of columns staged by the block.
		var nl *te.Var
		epiBody := t.Body
		if len(cols) > 0 {
			nl, epiBody = l.stageColumns(gen, t, cols, ns, ni, TN, N, k)
		}
		epilogue := gen.into(func() {
			mmaEpilogue(gen, t, epiBody, nl, r, buf, acc, part, pairs, c, shape, ms, ns, mi, ni, g, tg, wm, wn, TM, TN, WM, WN, M, N)
		})
		if slices > 1 {
			epilogue = []kir.Stmt{&kir.If{Cond: kir.Eq(kg, kir.I(0)), Then: epilogue}}
		}
		gen.emit(epilogue...)
	})
	w := kir.NewVar("w", te.I32)
	*body = append(*body,
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.Let{Var: lane, Value: kir.Mod(tid, kir.I(kir.WarpSize))},
		&kir.Let{Var: g, Value: kir.Div(lane, kir.I(4))},
		&kir.Let{Var: tg, Value: kir.Mod(lane, kir.I(4))},
		&kir.Let{Var: w, Value: kir.Div(tid, kir.I(kir.WarpSize))},
		&kir.Let{Var: wm, Value: digit(w, blk.WGN, blk.WGM)},
		&kir.Let{Var: wn, Value: digit(w, 1, blk.WGN)},
	)
	if slices > 1 {
		*body = append(*body,
			&kir.Let{Var: kg, Value: kir.Div(w, kir.I(group))},
			&kir.Let{Var: tig, Value: kir.Mod(tid, kir.I(group*kir.WarpSize))})
	}
	*body = append(*body, &kir.For{Var: tile, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(NB * mtiles * ntiles * split), Body: inner})
	if split > 1 {
		fin := l.finishSplitVector(t, r, part, split, size, k)
		if fin == nil {
			fin = l.finishSplit(t, r, part, split, size)
		}
		*body = append(*body, &kir.GridSync{}, fin)
	}
}

// finishSplitVector is finishSplit with a thread per vector of t's
// elements where vectorElems allows: 16-byte loads of each chunk's
// partials (two per chunk for 8 elements), added in chunk order, and the
// body's moving loads and store as storeVector makes them. It returns nil
// where that does not apply; k receives the local arrays.
func (l *lowerer) finishSplitVector(t *te.Tensor, r *te.Reduce, part *kir.Buffer, split, size int, k *kir.Kernel) kir.Stmt {
	buf := l.bufs[t]
	vec, moving := vectorElems(t, buf, r)
	if vec == 0 {
		return nil
	}
	acc := &kir.Buffer{Name: t.Name + ".acc", Space: kir.Local, DType: te.F32, Shape: []int{vec}}
	p := &kir.Buffer{Name: t.Name + ".p", Space: kir.Local, DType: te.F32, Shape: []int{vec}}
	iv, i := kir.NewVar("iv", te.I32), kir.NewVar("i", te.I32)
	g := l.gen(nil)
	ok := false
	fin := g.into(func() {
		g.emit(&kir.Let{Var: i, Value: kir.Mul(iv, kir.I(vec))})
		vl := kir.VecLen(te.F32)
		for c := range split {
			dst := acc
			if c > 0 {
				dst = p
			}
			for q := 0; q < vec; q += vl {
				g.emit(&kir.VecCopy{Dst: dst, DstIndex: kir.I(q), Src: part, SrcIndex: addIndex(kir.Add(kir.I(c*size), i), q)})
			}
			if c > 0 {
				for j := range vec {
					g.emit(&kir.Store{Buf: acc, Index: kir.I(j), Value: kir.Add(kir.Ld(acc, kir.I(j)), kir.Ld(p, kir.I(j)))})
				}
			}
		}
		bind(g, t.Axes, i)
		ok = l.storeVector(g, t, vec, moving, i, k, r, func(j int) kir.Expr { return kir.Ld(acc, kir.I(j)) })
	})
	if !ok {
		return nil
	}
	k.Locals = append(k.Locals, acc, p)
	return &kir.For{Var: iv, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(size / vec), Body: fin}
}

// finishSplit returns the finishing pass of a contraction t = f(r) whose K
// is split over blocks: a thread per output adds its split partials of
// part in chunk order and evaluates t's body on the sum.
func (l *lowerer) finishSplit(t *te.Tensor, r *te.Reduce, part *kir.Buffer, split, size int) kir.Stmt {
	i := kir.NewVar("i", te.I32)
	g := l.gen(nil)
	buf := l.bufs[t]
	fin := g.into(func() {
		bind(g, t.Axes, i)
		sum, c := kir.NewVar("acc", te.F32), kir.NewVar("c", te.I32)
		g.emit(
			&kir.Let{Var: sum, Value: kir.Ld(part, i)},
			&kir.For{Var: c, Kind: kir.Serial, Lo: kir.I(1), Hi: kir.I(split), Step: 1, Body: []kir.Stmt{
				&kir.Assign{Var: sum, Value: kir.Add(sum, kir.Ld(part, kir.Add(kir.Mul(c, kir.I(size)), i)))},
			}},
		)
		g.done[r] = sum
		g.emit(&kir.Store{Buf: buf, Index: i, Value: convert(g.expr(t.Body), buf.ValueType())})
	})
	return &kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(size), Body: fin}
}

// mmaEpilogue evaluates t's body (body: t.Body, or it with staged
// columns read at nl, stageColumns) on each accumulator element of a
// warp's tile (mi, ni), where the C fragment layout places it, and stores
// it; or,
// where part is set (a split K), stores the element itself as chunk c's
// partial of its output. Where pairs is set (pairedColumns), the two
// elements of a lane that sit in adjacent columns, t·2 and t·2 + 1 of the
// fragment, are stored together: computed into pairs, a local array of
// two, and written with one copy of twice the element's size.
func mmaEpilogue(gen *gen, t *te.Tensor, body te.Expr, nl *te.Var, r *te.Reduce, buf, acc, part, pairs *kir.Buffer, c kir.Expr, shape kir.MMAShape, ms, ns []*te.Var, mi, ni, g, tg, wm, wn *kir.Var, TM, TN, WM, WN, M, N int) {
	mt, nt := WM/16, WN/8
	width := 1
	if pairs != nil {
		width = 2
	}
	for i := range mt {
		for j := range nt {
			for c0 := 0; c0 < 4; c0 += width {
				row, col := fragIndex(shape, te.F32, kir.OperandC, c0, g, tg) // C's layout is the same for every operand type
				m, n := kir.NewVar("m", te.I32), kir.NewVar("n", te.I32)
				gen.emit(
					&kir.Let{Var: m, Value: kir.Add(kir.Add(kir.Mul(mi, kir.I(TM)), kir.Mul(wm, kir.I(WM))), kir.Add(row, kir.I(16*i)))},
					&kir.Let{Var: n, Value: kir.Add(kir.Add(kir.Mul(ni, kir.I(TN)), kir.Mul(wn, kir.I(WN))), kir.Add(col, kir.I(8*j)))},
				)
				epi := gen.into(func() {
					bind(gen, ms, m)
					at := kir.Expr(nil)
					for e := range width {
						z := kir.I((i*nt+j)*4 + c0 + e)
						ne := kir.Expr(n)
						if e > 0 {
							ne = addIndex(n, e)
						}
						bind(gen, ns, ne)
						if nl != nil {
							gen.env[nl] = kir.Sub(ne, kir.Mul(ni, kir.I(TN)))
						}
						ae := gen.flat(t.Shape, axisIndexes(t))
						if e == 0 {
							at = ae
						}
						var dst *kir.Buffer
						var index, value kir.Expr
						switch {
						case part != nil:
							dst, index, value = part, kir.Add(kir.Mul(c, kir.I(t.NumElements())), ae), kir.Ld(acc, z)
						default:
							gen.done[r] = kir.Ld(acc, z)
							dst, index, value = buf, ae, convert(gen.expr(body), buf.ValueType())
						}
						if pairs != nil {
							dst, index = pairs, kir.I(e)
						}
						gen.emit(&kir.Store{Buf: dst, Index: index, Value: value})
					}
					if pairs != nil {
						dst, index := buf, at
						if part != nil {
							dst, index = part, kir.Add(kir.Mul(c, kir.I(t.NumElements())), at)
						}
						gen.emit(&kir.VecCopy{Dst: dst, DstIndex: index, Src: pairs, SrcIndex: kir.I(0), Bytes: 2 * dst.DType.Size()})
					}
				})
				gen.emit(guard(epi, nil, bound{m, M, M%TM != 0}, bound{n, N, N%TN != 0})...)
			}
		}
	}
}

// pairedColumns reports whether the epilogue of t's tensor-core tiles may
// store a lane's two adjacent fragment columns (t·2 and t·2 + 1 of the
// C fragment, an even n and n + 1) with one copy into dst, the output's
// or the split K's partials' buffer in global memory (mmaEpilogue): where
// n is t's last axis, whose extent is even, so that n + 1 is the next
// element of the same row and the pair starts at an even element (every
// buffer starts 16-byte aligned), and dst holds 2- or 4-byte elements.
func pairedColumns(t *te.Tensor, ns []*te.Var, dst *kir.Buffer) bool {
	if dst.Space != kir.Global || len(ns) == 0 || len(t.Axes) == 0 {
		return false
	}
	last := t.Axes[len(t.Axes)-1]
	if ns[len(ns)-1] != last || last.Extent%2 != 0 {
		return false
	}
	switch dst.DType.Size() {
	case 2, 4:
		return true
	}
	return false
}

// sumSlices returns the statements that add the accumulators of k slices
// 1 to slices-1 to slice 0's: each thread tig of a later slice kg stores
// its acc in kred (element z of slice kg at ((kg-1)·len(acc) + z)·threads
// + tig, consecutive threads at consecutive words), a barrier, and the
// same thread of slice 0 adds them. The next tile's k loop, whose first
// barrier slice 0 reaches only after these reads, orders them before the
// next writes.
func sumSlices(acc, kred *kir.Buffer, kg, tig *kir.Var, slices, threads int) []kir.Stmt {
	n := acc.Len()
	at := func(s kir.Expr, z *kir.Var) kir.Expr {
		return kir.Add(kir.Mul(kir.Add(kir.Mul(s, kir.I(n)), z), kir.I(threads)), tig)
	}
	z, z2 := kir.NewVar("z", te.I32), kir.NewVar("z", te.I32)
	put := &kir.For{Var: z, Kind: kir.Unrolled, Lo: kir.I(0), Hi: kir.I(n), Step: 1, Body: []kir.Stmt{
		&kir.Store{Buf: kred, Index: at(kir.Sub(kg, kir.I(1)), z), Value: kir.Ld(acc, z)}}}
	var add []kir.Stmt
	for s := 1; s < slices; s++ {
		add = append(add, &kir.Store{Buf: acc, Index: z2, Value: kir.Add(kir.Ld(acc, z2), kir.Ld(kred, at(kir.I(s-1), z2)))})
	}
	return []kir.Stmt{
		&kir.If{Cond: kir.Ge(kg, kir.I(1)), Then: []kir.Stmt{put}},
		&kir.SyncThreads{},
		&kir.If{Cond: kir.Eq(kg, kir.I(0)), Then: []kir.Stmt{
			&kir.For{Var: z2, Kind: kir.Unrolled, Lo: kir.I(0), Hi: kir.I(n), Step: 1, Body: add}}},
	}
}

// mmaTileLive returns the condition under which tile (mi, ni) of batch
// entry b, TM×TN outputs of an M×N contraction, needs its products under
// mask, or nil when every tile does; g receives the loads of the mask's
// run-time scalars (see tileMask).
func mmaTileLive(g *gen, mask *schedule.Mask, mi, ni, b kir.Expr, TM, TN, M, N int) kir.Expr {
	if mask == nil {
		return nil
	}
	mLo, nLo := kir.Mul(mi, kir.I(TM)), kir.Mul(ni, kir.I(TN))
	mHi, nHi := kir.Add(mLo, kir.I(TM-1)), kir.Add(nLo, kir.I(TN-1))
	if M%TM != 0 {
		mHi = kir.Bin(te.Min, mHi, kir.I(M-1))
	}
	if N%TN != 0 {
		nHi = kir.Bin(te.Min, nHi, kir.I(N-1))
	}
	return tileMask(g, mask, mLo, mHi, nLo, nHi, b)
}

// stageOperand stages o's tile element by element at the k step from
// k0, into its stage at element off, with zeros past the extents.
func (l *lowerer) stageOperand(g *gen, o *opTile, r *te.Reduce, k0, off kir.Expr, K int) {
	v := kir.NewVar("e", te.I32)
	g.emit(&kir.For{Var: v, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(o.rows * o.cols), Body: g.into(func() {
		x, kk := kir.NewVar("x", te.I32), kir.NewVar("kk", te.I32)
		row, col := kir.Div(v, kir.I(o.cols)), kir.Mod(v, kir.I(o.cols))
		tile := o.rows
		if o.kRows {
			tile = o.cols
			g.emit(
				&kir.Let{Var: kk, Value: addOffset(k0, row)},
				&kir.Let{Var: x, Value: kir.Add(kir.Mul(o.ti, kir.I(tile)), col)},
			)
		} else {
			g.emit(
				&kir.Let{Var: x, Value: kir.Add(kir.Mul(o.ti, kir.I(tile)), row)},
				&kir.Let{Var: kk, Value: addOffset(k0, col)},
			)
		}
		at := kir.NewVar("at", te.I32)
		g.emit(&kir.Let{Var: at, Value: addOffset(off, o.lay.at(row, col))})
		guarded := g.into(func() {
			bind(g, o.axes, x)
			bind(g, r.Axes, kk)
			g.emit(&kir.Store{Buf: o.s, Index: at, Value: convert(g.expr(o.e), te.F32)})
		})
		g.emit(guard(guarded, []kir.Stmt{&kir.Store{Buf: o.s, Index: at, Value: kir.F(0)}},
			bound{x, o.ext, o.ext%tile != 0}, bound{kk, K, K%schedule.TensorCoreTileK != 0})...)
	})})
}

// mmaStep returns one k step (of the MMA's k, at ks within the staged
// tiles, whose stages start at elements xoff and yoff) of a warp: its
// fragments of the staged tiles of xo and yo and its MMAs: each m16n8k16
// of f16 as two m16n8k8 where halves is set (sm_75 has no m16n8k16).
func mmaStep(shape kir.MMAShape, in te.DType, halves bool, xo, yo *opTile, xoff, yoff kir.Expr, fa, fb, acc *kir.Buffer, ks, lane, g, t, wm, wn *kir.Var, WM, WN int) []kir.Stmt {
	var out []kir.Stmt
	mt, nt := WM/16, WN/8
	na, nb := kir.FragLen(shape, kir.OperandA), kir.FragLen(shape, kir.OperandB)
	rowBase := kir.Mul(wm, kir.I(WM))
	colBase := kir.Mul(wn, kir.I(WN))
	xs, ys, xt, yt := xo.s, yo.s, xo.lay, yo.lay
	at := func(off, x kir.Expr) kir.Expr {
		if c, ok := off.(*kir.Const); ok && c.Value == 0 {
			return x
		}
		return kir.Add(off, x)
	}
	// elem returns the index in o's tile of the element at k and its m or n.
	elem := func(o *opTile, k, x kir.Expr) kir.Expr {
		if o.kRows {
			return o.lay.at(k, x)
		}
		return o.lay.at(x, k)
	}
	for i := range mt {
		row0 := kir.Add(rowBase, kir.I(16*i))
		switch {
		case in == te.F32:
			for reg := range na {
				rr, cc := fragIndex(shape, in, kir.OperandA, reg, g, t)
				out = append(out, &kir.Store{Buf: fa, Index: kir.I(i*na + reg),
					Value: kir.Ld(xs, at(xoff, elem(xo, kir.Add(ks, cc), kir.Add(row0, rr))))})
			}
		case xo.kRows:
			// ldmatrix.x4.trans of rows of k: lanes 0-7 give rows ks to
			// ks+7 at columns row0 to row0+7 (a0), lanes 8-15 the same
			// rows at row0+8 (a1), lanes 16-31 rows ks+8 to ks+15 (a2,
			// a3). ks is a multiple of 16: lane%8 is the row mod 8.
			kr := kir.Add(ks, kir.Add(kir.Mod(lane, kir.I(8)), kir.Mul(kir.Div(lane, kir.I(16)), kir.I(8))))
			idx := xt.chunk(kr, kir.Mod(lane, kir.I(8)), kir.Add(kir.Div(row0, kir.I(xt.vec)), kir.Mod(kir.Div(lane, kir.I(8)), kir.I(2))))
			out = append(out, &kir.LdMatrix{Num: 4, Trans: true, Dst: kir.Frag{Buf: fa, Off: i * na}, Src: xs, Index: at(xoff, idx)})
		default:
			// ldmatrix.x4: lanes 0-15 give rows 0-15 at column ks, lanes
			// 16-31 the same rows at column ks+8.
			// row0 is a multiple of 16: lane%16 is the row mod 8.
			idx := xt.chunk(kir.Add(row0, kir.Mod(lane, kir.I(16))), kir.Mod(lane, kir.I(16)), kir.Add(kir.Div(ks, kir.I(xt.vec)), kir.Div(lane, kir.I(16))))
			out = append(out, &kir.LdMatrix{Num: 4, Dst: kir.Frag{Buf: fa, Off: i * na}, Src: xs, Index: at(xoff, idx)})
		}
	}
	for j := range nt {
		col0 := kir.Add(colBase, kir.I(8*j))
		switch {
		case in == te.F32:
			for reg := range nb {
				rr, cc := fragIndex(shape, in, kir.OperandB, reg, g, t)
				out = append(out, &kir.Store{Buf: fb, Index: kir.I(j*nb + reg),
					Value: kir.Ld(ys, at(yoff, elem(yo, kir.Add(ks, rr), kir.Add(col0, cc))))})
			}
		case !yo.kRows:
			// ldmatrix.x2 of rows of n: lanes 0-7 give rows col0 to
			// col0+7 at column ks, lanes 8-15 the same rows at ks+8; the
			// others' addresses are not used. col0 is a multiple of 8.
			idx := yt.chunk(kir.Add(col0, kir.Mod(lane, kir.I(8))), kir.Mod(lane, kir.I(8)), kir.Add(kir.Div(ks, kir.I(yt.vec)), kir.Mod(kir.Div(lane, kir.I(8)), kir.I(2))))
			out = append(out, &kir.LdMatrix{Num: 2, Dst: kir.Frag{Buf: fb, Off: j * nb}, Src: ys, Index: at(yoff, idx)})
		default:
			// ldmatrix.x2.trans: lanes 0-15 give rows ks to ks+15 at the
			// tile's column; the others' addresses are not used.
			idx := yt.chunk(kir.Add(ks, kir.Mod(lane, kir.I(16))), kir.Mod(lane, kir.I(16)), kir.Div(col0, kir.I(yt.vec)))
			out = append(out, &kir.LdMatrix{Num: 2, Trans: true, Dst: kir.Frag{Buf: fb, Off: j * nb}, Src: ys, Index: at(yoff, idx)})
		}
	}
	for i := range mt {
		for j := range nt {
			d := kir.Frag{Buf: acc, Off: (i*nt + j) * 4}
			a, b := kir.Frag{Buf: fa, Off: i * na}, kir.Frag{Buf: fb, Off: j * nb}
			if halves && shape == kir.M16N8K16 {
				// k 0-7 and 8-15: the fragments' first and second
				// halves (kir.MMA).
				a2, b2 := kir.Frag{Buf: fa, Off: a.Off + na/2}, kir.Frag{Buf: fb, Off: b.Off + nb/2}
				out = append(out, &kir.MMA{Shape: kir.M16N8K8, In: in, D: d, A: a, B: b, C: d},
					&kir.MMA{Shape: kir.M16N8K8, In: in, D: d, A: a2, B: b2, C: d})
				continue
			}
			out = append(out, &kir.MMA{Shape: shape, In: in, D: d, A: a, B: b, C: d})
		}
	}
	return out
}
