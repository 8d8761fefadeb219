package lower

import (
	"slices"

	"tec/backend/kir"
	"tec/schedule"
	"tec/te"
)

// argPair is a thread's candidate for an argmax or argmin: the best value
// it has seen and that value's row-major position, or the reduction's
// extent n when it has seen none that is not NaN.
type argPair struct{ v, at *kir.Var }

// argBlock is an argmax or argmin shared by the threads of a block.
type argBlock struct {
	cmp     te.BinaryOp // te.Gt for argmax, te.Lt for argmin
	n       int         // the reduction's extent
	vt      te.DType    // the values' register type, f32 or i32
	threads int
	tid     kir.Expr
	vals    *kir.Buffer // shared: a value per thread
	idxs    *kir.Buffer // shared: a position per thread
}

// argBlockReduce emits a block's argmax or argmin r: each thread finds the
// first best value of the positions it strides over (BlockStride, so its
// positions rise and a strict comparison keeps the first), then the
// block merges the threads' candidates with warp shuffles and shared
// memory as treeReduce does with values. The merge is a total order — a
// candidate beats none, a strictly better value wins, and of equal values
// the earlier position — so the result is the serial loop's whatever the
// order of merging: the first best position, no NaN ever chosen, 0 when
// every value is NaN. shared returns the kernel's shared array of a name
// and type with a slot per thread. It returns the register holding the
// position.
func argBlockReduce(g *gen, r *te.Reduce, tid kir.Expr, threads int, shared func(name string, t te.DType) *kir.Buffer) kir.Expr {
	a := newArgBlock(r, tid, threads, shared)
	x := a.start(g)
	j := kir.NewVar("r", te.I32)
	part := g.into(func() {
		bind(g, r.Axes, j)
		a.consider(g, x, convert(g.expr(r.Body), a.vt), j)
	})
	g.emit(&kir.For{Var: j, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(a.n), Body: part})
	for _, ax := range r.Axes {
		delete(g.env, ax)
	}
	return a.position(g, a.merged(g, x, false).at)
}

// newArgBlock returns the block merge of argmax or argmin r over threads
// threads, its shared arrays from shared (see argBlockReduce).
func newArgBlock(r *te.Reduce, tid kir.Expr, threads int, shared func(name string, t te.DType) *kir.Buffer) *argBlock {
	vt := te.F32
	if te.TypeOf(r.Body) == te.I32 {
		vt = te.I32
	}
	a := &argBlock{cmp: te.Gt, n: extent(r), vt: vt, threads: threads, tid: tid,
		vals: shared("argv_"+vt.String(), vt), idxs: shared("argi", te.I32)}
	if r.Op == te.Argmin {
		a.cmp = te.Lt
	}
	return a
}

// start emits a thread's candidate that has seen nothing: the position n.
func (a *argBlock) start(g *gen) argPair {
	x := argPair{v: kir.NewVar("best", a.vt), at: kir.NewVar("arg", te.I32)}
	g.emit(&kir.Let{Var: x.v, Value: &kir.Const{T: a.vt}}, &kir.Let{Var: x.at, Value: kir.I(a.n)})
	return x
}

// consider emits the update of a thread's candidate x with value val at
// position at, a position above every one x has seen: x takes the first
// value that is not NaN, and after it only a strictly better one (a
// comparison with NaN is false), so that it keeps the first best.
func (a *argBlock) consider(g *gen, x argPair, val, at kir.Expr) {
	v := kir.NewVar("v", a.vt)
	g.emit(&kir.Let{Var: v, Value: val})
	first := kir.And(kir.Ge(x.at, kir.I(a.n)), kir.Eq(v, v))
	better := kir.NewVar("better", te.Bool)
	g.emit(&kir.Let{Var: better, Value: kir.Bin(te.Or, first, kir.Bin(a.cmp, v, x.v))},
		&kir.If{Cond: better, Then: []kir.Stmt{&kir.Assign{Var: x.v, Value: v}, &kir.Assign{Var: x.at, Value: at}}})
}

// merged emits the merge of every thread's candidate x and returns the
// registers of the block's best position and, when value is set, its
// value (else the pair's v is nil), the same in every thread.
func (a *argBlock) merged(g *gen, x argPair, value bool) argPair {
	if a.threads >= kir.WarpSize {
		return a.warps(g, x, value)
	}
	return a.tree(g, x, value)
}

// position emits the result of the reduction from the block's best
// position res: res, or 0 where every value was NaN (res is n).
func (a *argBlock) position(g *gen, res kir.Expr) kir.Expr {
	pos := kir.NewVar("argpos", te.I32)
	g.emit(&kir.Let{Var: pos, Value: &kir.Select{Cond: kir.Lt(res, kir.I(a.n)), Then: res, Else: kir.I(0)}})
	return pos
}

// merge emits the statements that make x the better of x and the candidate
// (yv, yat).
func (a *argBlock) merge(x argPair, yv, yat kir.Expr) []kir.Stmt {
	v, at, take := kir.NewVar("ov", a.vt), kir.NewVar("oat", te.I32), kir.NewVar("take", te.Bool)
	n := kir.I(a.n)
	better := kir.Bin(te.Or, kir.Bin(a.cmp, v, x.v), kir.And(kir.Eq(v, x.v), kir.Lt(at, x.at)))
	return []kir.Stmt{
		&kir.Let{Var: v, Value: yv},
		&kir.Let{Var: at, Value: yat},
		&kir.Let{Var: take, Value: kir.And(kir.Lt(at, n), kir.Bin(te.Or, kir.Ge(x.at, n), better))},
		&kir.Assign{Var: x.v, Value: &kir.Select{Cond: take, Then: v, Else: x.v}},
		&kir.Assign{Var: x.at, Value: &kir.Select{Cond: take, Then: at, Else: x.at}},
	}
}

// store writes x to slot i of the shared arrays.
func (a *argBlock) store(i kir.Expr, x argPair) []kir.Stmt {
	return []kir.Stmt{&kir.Store{Buf: a.vals, Index: i, Value: x.v}, &kir.Store{Buf: a.idxs, Index: i, Value: x.at}}
}

// butterfly merges x across lanes of a warp with xor shuffles, leaving the
// best of every lane's candidate in each.
func (a *argBlock) butterfly(x argPair, lanes int) []kir.Stmt {
	var ss []kir.Stmt
	for off := lanes / 2; off > 0; off /= 2 {
		sv := &kir.Shuffle{Mode: kir.ShuffleXor, X: x.v, Offset: off, Width: kir.WarpSize, Mask: kir.FullMask()}
		sa := &kir.Shuffle{Mode: kir.ShuffleXor, X: x.at, Offset: off, Width: kir.WarpSize, Mask: kir.FullMask()}
		ss = append(ss, a.merge(x, sv, sa)...)
	}
	return ss
}

// warps merges the candidates of a block of WarpSize threads or more as
// warpReduce combines values: a partial last warp hands its candidates to
// warp 0 through shared memory, each full warp merges its lanes with
// butterfly shuffles, lane 0 of each writes the warp's best, and warp 0
// merges those. It returns the registers of the block's best position
// and, when value is set, its value.
func (a *argBlock) warps(g *gen, x argPair, value bool) argPair {
	full, tail := a.threads/kir.WarpSize, a.threads%kir.WarpSize
	fullLanes := full * kir.WarpSize
	tid := a.tid
	if tail > 0 {
		g.emit(&kir.If{Cond: kir.Ge(tid, kir.I(fullLanes)), Then: a.store(tid, x)},
			&kir.SyncThreads{},
			&kir.If{Cond: kir.Lt(tid, kir.I(tail)), Then: a.merge(x,
				kir.Ld(a.vals, kir.Add(tid, kir.I(fullLanes))), kir.Ld(a.idxs, kir.Add(tid, kir.I(fullLanes))))})
	}
	inWarps := a.butterfly(x, kir.WarpSize)
	if full == 1 && tail == 0 {
		g.emit(inWarps...)
		return x
	}
	if full == 1 {
		g.emit(&kir.If{Cond: kir.Lt(tid, kir.I(kir.WarpSize)), Then: append(inWarps,
			&kir.If{Cond: kir.Eq(tid, kir.I(0)), Then: a.store(kir.I(0), x)})})
	} else {
		w := argPair{v: kir.NewVar("wbest", a.vt), at: kir.NewVar("warg", te.I32)}
		mine := kir.Lt(tid, kir.I(full))
		second := []kir.Stmt{
			&kir.Let{Var: w.v, Value: &kir.Select{Cond: mine, Then: kir.Ld(a.vals, tid), Else: &kir.Const{T: a.vt}}},
			&kir.Let{Var: w.at, Value: &kir.Select{Cond: mine, Then: kir.Ld(a.idxs, tid), Else: kir.I(a.n)}},
		}
		second = append(second, a.butterfly(w, te.NextPow2(full))...)
		second = append(second, &kir.If{Cond: kir.Eq(tid, kir.I(0)), Then: a.store(kir.I(0), w)})
		lane0 := kir.Eq(kir.Mod(tid, kir.I(kir.WarpSize)), kir.I(0))
		warps := append(inWarps, &kir.If{Cond: lane0, Then: a.store(kir.Div(tid, kir.I(kir.WarpSize)), x)})
		if tail > 0 {
			warps = []kir.Stmt{&kir.If{Cond: kir.Lt(tid, kir.I(fullLanes)), Then: warps}}
		}
		g.emit(warps...)
		g.emit(&kir.SyncThreads{}, &kir.If{Cond: kir.Lt(tid, kir.I(kir.WarpSize)), Then: second})
	}
	g.emit(&kir.SyncThreads{})
	return a.loadBest(g, value)
}

// loadBest emits each thread's load of the block's best candidate from
// slot 0 of the shared arrays, its value only when value is set, and the
// barrier after which the arrays may be written again.
func (a *argBlock) loadBest(g *gen, value bool) argPair {
	var res argPair
	if value {
		res.v = kir.NewVar("bestv", a.vt)
		g.emit(&kir.Let{Var: res.v, Value: kir.Ld(a.vals, kir.I(0))})
	}
	res.at = kir.NewVar("argres", te.I32)
	g.emit(&kir.Let{Var: res.at, Value: kir.Ld(a.idxs, kir.I(0))}, &kir.SyncThreads{})
	return res
}

// tree merges the candidates of a block of fewer than WarpSize threads in
// shared memory, halving by halving (any count of threads), and returns the
// registers of the block's best position and, when value is set, its
// value.
func (a *argBlock) tree(g *gen, x argPair, value bool) argPair {
	tid := a.tid
	g.emit(a.store(tid, x)...)
	g.emit(&kir.SyncThreads{})
	for _, h := range halvings(a.threads) {
		y := argPair{v: kir.NewVar("tbest", a.vt), at: kir.NewVar("targ", te.I32)}
		step := []kir.Stmt{&kir.Let{Var: y.v, Value: kir.Ld(a.vals, tid)}, &kir.Let{Var: y.at, Value: kir.Ld(a.idxs, tid)}}
		step = append(step, a.merge(y, kir.Ld(a.vals, kir.Add(tid, kir.I(h.stride))), kir.Ld(a.idxs, kir.Add(tid, kir.I(h.stride))))...)
		step = append(step, a.store(tid, y)...)
		g.emit(&kir.If{Cond: kir.Lt(tid, kir.I(h.live)), Then: step}, &kir.SyncThreads{})
	}
	return a.loadBest(g, value)
}

// argSplitReduce lowers t, whose one top-level reduction r is an argmax or
// argmin, as the split reduction s: a partial phase in which the tile of
// output o and chunk c merges, in one block, the candidates of the chunk's
// positions into a (value, position) pair, which thread 0 writes to the
// global arrays NAME.best and NAME.at at the tile's index; a grid sync;
// and a finishing phase in which a block per output merges the output's
// pairs, chunk by chunk with the same total order (argBlock.merge), and
// thread 0 writes the output. Chunk c holds the positions [c·L, (c+1)·L)
// (argChunk); positions rise with the chunks, and the merge prefers the
// earlier of equal values, so that the result is the serial rule's
// whatever the order in which blocks run: the first best position, no NaN
// chosen over a number, 0 when every value is NaN. No atomics, so it is
// deterministic, and nothing to zero before it.
func (l *lowerer) argSplitReduce(t *te.Tensor, r *te.Reduce, s *schedule.Schedule, k *kir.Kernel, body *[]kir.Stmt) {
	n, chunks := t.NumElements(), s.Chunks
	threads := l.threads
	shared := func(name string, dt te.DType) *kir.Buffer {
		for _, b := range k.Shared {
			if b.Name == name {
				return b
			}
		}
		b := &kir.Buffer{Name: name, Space: kir.Shared, DType: dt, Shape: []int{threads}}
		k.Shared = append(k.Shared, b)
		return b
	}
	tid := kir.NewVar("tid", te.I32)
	a := newArgBlock(r, tid, threads, shared)
	bestBuf := &kir.Buffer{Name: t.Name + ".best", Space: kir.Global, Role: kir.Temp, DType: a.vt, Shape: []int{n, chunks}}
	atBuf := &kir.Buffer{Name: t.Name + ".at", Space: kir.Global, Role: kir.Temp, DType: te.I32, Shape: []int{n, chunks}}
	l.m.Buffers = append(l.m.Buffers, bestBuf, atBuf)

	// Partial phase: tile = output o × chunk c.
	tile := kir.NewVar("tile", te.I32)
	g := l.gen(nil)
	partial := g.into(func() {
		o, c := kir.NewVar("o", te.I32), kir.NewVar("c", te.I32)
		g.emit(&kir.Let{Var: o, Value: kir.Div(tile, kir.I(chunks))}, &kir.Let{Var: c, Value: kir.Mod(tile, kir.I(chunks))})
		bind(g, t.Axes, o)
		x := a.start(g)
		l.argChunk(g, a, r, x, c, chunks, k)
		for _, ax := range r.Axes {
			delete(g.env, ax)
		}
		best := a.merged(g, x, true)
		g.emit(&kir.If{Cond: kir.Eq(tid, kir.I(0)), Then: []kir.Stmt{
			&kir.Store{Buf: bestBuf, Index: tile, Value: best.v},
			&kir.Store{Buf: atBuf, Index: tile, Value: best.at},
		}})
	})
	*body = append(*body,
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.For{Var: tile, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(n * chunks), Body: partial},
		&kir.GridSync{})

	// Finishing phase: a block per output merges its chunks' pairs.
	o := kir.NewVar("o", te.I32)
	g2 := l.gen(nil)
	finish := g2.into(func() {
		bind(g2, t.Axes, o)
		x := a.start(g2)
		c := kir.NewVar("c", te.I32)
		at := kir.Add(kir.Mul(o, kir.I(chunks)), c)
		g2.emit(&kir.For{Var: c, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(chunks),
			Body: a.merge(x, kir.Ld(bestBuf, at), kir.Ld(atBuf, at))})
		g2.done[r] = a.position(g2, a.merged(g2, x, false).at)
		epi := g2.into(func() {
			buf := l.bufs[t]
			g2.emit(&kir.Store{Buf: buf, Index: o, Value: convert(g2.expr(t.Body), buf.ValueType())})
		})
		g2.emit(&kir.If{Cond: kir.Eq(tid, kir.I(0)), Then: epi})
	})
	*body = append(*body, &kir.For{Var: o, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(n), Body: finish})
}

// argChunk emits the thread's scan of chunk c (of chunks) of r's
// positions into its candidate x, with the block's threads striding over
// the chunk so that each thread's positions rise. Where every load of the
// body that moves with the reduction reads it contiguously (argVector),
// each thread reads VecLen consecutive positions of each such load with
// one 16-byte load; otherwise a position at a time.
func (l *lowerer) argChunk(g *gen, a *argBlock, r *te.Reduce, x argPair, c kir.Expr, chunks int, k *kir.Kernel) {
	ext := a.n
	if vec, moving := argVector(r); vec > 1 && l.argChunkVec(g, a, r, x, c, chunks, vec, moving, k) {
		return
	}
	chunkLen := te.CeilDiv(ext, chunks)
	j := kir.NewVar("r", te.I32)
	part := g.into(func() {
		jj := kir.NewVar("rr", te.I32)
		g.emit(&kir.Let{Var: jj, Value: kir.Add(kir.Mul(c, kir.I(chunkLen)), j)})
		in := g.into(func() {
			bind(g, r.Axes, jj)
			a.consider(g, x, convert(g.expr(r.Body), a.vt), jj)
		})
		g.emit(guard(in, nil, bound{jj, ext, chunks*chunkLen != ext})...)
	})
	g.emit(&kir.For{Var: j, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(chunkLen), Body: part})
}

// argVector returns the vector length at which r's body can be read in
// 16-byte loads, and the loads that move with r's one axis k: each has k
// as its last index alone (so that consecutive positions are consecutive
// elements), uses k nowhere else, and has a last dimension and an extent
// of k that are multiples of the vector length of its type (so that a
// vector starting at a multiple of it is aligned and lies in the row),
// all of one vector length. It returns 0 where that is not so.
func argVector(r *te.Reduce) (int, []*te.Load) {
	if len(r.Axes) != 1 {
		return 0, nil
	}
	k := r.Axes[0]
	vec := 0
	var moving []*te.Load
	ok := true
	te.Walk(r.Body, func(e te.Expr) bool {
		ld, isLoad := e.(*te.Load)
		if !isLoad || !ok {
			return ok
		}
		last := len(ld.Index) - 1
		if !slices.ContainsFunc(ld.Index, func(ix te.Index) bool { return ix.Uses(k) }) || slices.Contains(moving, ld) {
			return true
		}
		v, isVar := ld.Index[last].Simplify().AsVar()
		n := kir.VecBytes / max(ld.Tensor.DType.Size(), 1)
		switch {
		case !isVar || v != k, slices.ContainsFunc(ld.Index[:last], func(ix te.Index) bool { return ix.Uses(k) }),
			vec != 0 && n != vec, ld.Tensor.Shape[last]%n != 0, k.Extent%n != 0:
			ok = false
			return false
		}
		vec = n
		moving = append(moving, ld)
		return true
	})
	if !ok || len(moving) == 0 {
		return 0, nil
	}
	return vec, moving
}

// argChunkVec emits argChunk's scan with vec positions per thread and
// step, each moving load read with one 16-byte load into a local array
// (as stageRowsVec does). A chunk is a whole number of vectors, of
// vec·threads positions where that many chunks still cover the extent. It
// reports false, emitting nothing, where a moving load is not a load of
// global memory of that vector length after all.
func (l *lowerer) argChunkVec(g *gen, a *argBlock, r *te.Reduce, x argPair, c kir.Expr, chunks, vec int, moving []*te.Load, k *kir.Kernel) bool {
	ext, threads := a.n, l.threads
	chunkLen := te.CeilDiv(te.CeilDiv(ext, chunks), vec) * vec
	if whole := te.CeilDiv(chunkLen, vec*threads) * vec * threads; te.CeilDiv(ext, whole) == chunks {
		chunkLen = whole
	}
	q := kir.NewVar("q", te.I32)
	ok := true
	local := map[*te.Load]*te.Tensor{}
	var bufs []*kir.Buffer
	body := g.into(func() {
		base := kir.NewVar("rr", te.I32)
		g.emit(&kir.Let{Var: base, Value: kir.Add(kir.Mul(c, kir.I(chunkLen)), kir.Mul(q, kir.I(vec)))})
		in := g.into(func() {
			bind(g, r.Axes, base)
			for _, mv := range moving {
				ld, isLoad := g.expr(mv).(*kir.Load)
				if !isLoad || ld.Buf.Space != kir.Global || kir.VecLen(ld.Buf.DType) != vec {
					ok = false
					return
				}
				buf := &kir.Buffer{Name: ld.Buf.Name + ".vec", Space: kir.Local, DType: ld.Buf.DType, Shape: []int{vec}}
				bufs = append(bufs, buf)
				g.emit(&kir.VecCopy{Dst: buf, DstIndex: kir.I(0), Src: ld.Buf, SrcIndex: ld.Index})
				local[mv] = &te.Tensor{Name: buf.Name, Kind: te.Compute, DType: mv.Tensor.DType, Shape: []int{vec}}
				g.bufs[local[mv]] = buf
			}
			for j := range vec {
				kj := kir.NewVar("rj", te.I32)
				g.emit(&kir.Let{Var: kj, Value: kir.Add(base, kir.I(j))})
				bind(g, r.Axes, kj)
				e := readLocal(r.Body, local, te.Const(j))
				a.consider(g, x, convert(g.expr(e), a.vt), kj)
			}
		})
		// A vector lies wholly in the extent or wholly past it.
		g.emit(guard(in, nil, bound{base, ext, chunks*chunkLen > ext})...)
	})
	for _, t := range local {
		delete(g.bufs, t)
	}
	for _, ax := range r.Axes {
		delete(g.env, ax)
	}
	if !ok {
		return false
	}
	k.Locals = append(k.Locals, bufs...)
	g.emit(&kir.For{Var: q, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(chunkLen / vec), Body: body})
	return true
}
