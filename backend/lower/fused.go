package lower

import (
	"fmt"
	"slices"
	"strings"

	"tec/backend/kir"
	"tec/contraction"
	"tec/partition"
	"tec/schedule"
	"tec/te"
)

// FusedOptions controls Fused.
type FusedOptions struct {
	// Deterministic makes split reductions write per-block partials that a
	// second pass combines in a fixed order, instead of accumulating with
	// atomics, so that results are bit-identical from run to run.
	Deterministic bool
}

// Fused lowers p as the plan pl (made for p) says: one persistent kernel per
// plan kernel, launched cooperatively on an all-resident grid of at most the
// plan's grid size, every stage a grid-stride loop over its tiles with the
// kernel's block size, stages separated by the plan's barriers (a grid sync
// where a stage reads what another block wrote, a block barrier where a
// stage reuses shared memory or reads its own block's rows).
//
// Split reductions are lowered in two phases: the kernel first zeroes their
// global accumulators (an init stage, then a grid sync), each block reduces
// a chunk of an output's range in shared memory and adds it atomically to
// the accumulator, a grid sync, and a finishing pass applies the rest of
// the body. With FusedOptions.Deterministic the blocks write partials to a
// buffer instead, which the finishing pass sums in chunk order.
func Fused(p *te.Program, pl *partition.Plan, opts FusedOptions) (*kir.Module, error) {
	if pl.Program != p {
		return nil, fmt.Errorf("lower: plan is for program %s, not this %s", pl.Program.Name, p.Name)
	}
	if err := pl.Verify(); err != nil {
		return nil, fmt.Errorf("lower: %w", err)
	}
	l := newLowerer(p, Options{BlockSize: pl.Threads})
	l.sharedPerBlock, l.arch = pl.GPU.SharedPerBlock, pl.GPU.Arch
	l.threads = pl.Threads
	for i, pk := range pl.Kernels {
		k, err := l.fusedKernel(i, pk, pl, opts)
		if err != nil {
			return nil, err
		}
		l.m.Kernels = append(l.m.Kernels, k)
	}
	if err := l.updates(); err != nil {
		return nil, err
	}
	l.m.GPU = &pl.GPU
	// Index arithmetic that may leave 32 bits is made 64-bit (kir's
	// "Index widths"); the simulator checks the rest.
	kir.Widen(l.m)
	if err := kir.Verify(l.m); err != nil {
		return nil, fmt.Errorf("lower: %w", err)
	}
	return l.m, nil
}

func (l *lowerer) fusedKernel(idx int, pk *partition.Kernel, pl *partition.Plan, opts FusedOptions) (*kir.Kernel, error) {
	name := pk.Stages[0].Name
	if len(pk.Stages) > 1 {
		name = fmt.Sprintf("k%d_%s", idx, name)
	}
	k := &kir.Kernel{Name: name, Block: pl.Threads}
	var docs []string
	tiles := 1
	var inits, body []kir.Stmt
	prevShared := false
	arenas := map[te.DType]*kir.Buffer{} // the stages' scratch arrays, by type
	// Results kept on chip live in shared arrays for this kernel, one per
	// slot of the plan: results whose lives do not overlap share one, and
	// the block barrier before every row reduction orders a slot's last
	// reads before its next occupant's writes.
	slots := make([]*kir.Buffer, len(pk.SlotBytes))
	for _, t := range pk.OnChip {
		i := pk.Slot[t]
		if slots[i] == nil {
			slots[i] = &kir.Buffer{Name: t.Name + "_smem", Space: kir.Shared, DType: te.F32, Shape: []int{pk.SlotBytes[i] / 4}}
			k.Shared = append(k.Shared, slots[i])
		}
		global := l.bufs[t]
		l.bufs[t] = slots[i]
		defer func() { l.bufs[t] = global }()
	}
	starts, span := rotations(pk, pl)
	var epoch []int // the stages since the last grid sync kept
	if err := checkOnChip(pk, pl, starts); err != nil {
		return nil, fmt.Errorf("lower: kernel %s: %w", name, err)
	}
	var cache *weightCache
	var clear []kir.Stmt
	if pk.Cache != nil {
		cache, clear = newWeightCache(pk.Cache, k)
	}
	// The scratch arenas the plan counts for the kernel: what its stages'
	// arrays need (schedule.SharedBytes).
	l.scratch = schedule.Arenas{}
	for _, t := range pk.Stages {
		l.scratch = l.scratch.Merge(schedule.ArenasOf(pl.Schedules[t].Arrays))
	}
	for j, t := range pk.Stages {
		if t.Body == nil {
			return nil, fmt.Errorf("lower: tensor %s has no body", t.Name)
		}
		s := pl.Schedules[t]
		if s.EpilogueOf != nil {
			continue // computed in its producer's tiles
		}
		tiles = max(tiles, s.Tiles)
		docs = append(docs, t.Name)
		tmp := &kir.Kernel{}
		var stage []kir.Stmt
		l.tm, l.tn, l.rm, l.rn, l.tk = 0, 0, 1, 1, 0
		l.remap = !threadBound(pk, j)
		switch s.Kind {
		case schedule.Contraction:
			if s.Resident != nil {
				if !l.resident(t, s, cache, tmp, &stage) {
					return nil, fmt.Errorf("lower: stage %s: the plan keeps its weights on chip, but it is not a resident contraction", t.Name)
				}
				break
			}
			if s.TensorCores {
				if err := l.tensorCoreStage(t, s, tmp, &stage); err != nil {
					return nil, fmt.Errorf("lower: stage %s: %w", t.Name, err)
				}
				break
			}
			if s.MatVec != nil {
				if !l.matVec(t, s, tmp, &stage) {
					return nil, fmt.Errorf("lower: stage %s: the plan tiles it as matrix-vector products, but it is not one", t.Name)
				}
				break
			}
			l.rm, l.rn = max(s.RegM, 1), max(s.RegN, 1)
			l.tm, l.tn, l.tk = s.TileM/l.rm, s.TileN/l.rn, s.TileK
			r, _, _, one := contraction.MaskedReduce(t.Body)
			if !one || !l.contraction(t, r, tmp, &stage) {
				l.blockReduceOrElementwise(t, tmp, &stage)
			}
		case schedule.RowReduce:
			l.blockReduceOrElementwise(t, tmp, &stage)
		case schedule.Rows:
			l.rows(t, s.RowAxes, tmp, &stage)
		case schedule.SplitReduce:
			init := l.splitReduce(t, s, tmp, &stage, opts.Deterministic)
			inits = append(inits, init...)
		default:
			l.elementwise(t, tmp, &stage)
		}
		shared := len(tmp.Shared) > 0
		l.placeShared(k, tmp, stage, arenas)
		mergeLocals(k, tmp)
		if j > 0 {
			if pf := pk.Prefetches[j]; pf != nil {
				st, err := l.prefetchStage(pk, pl, pf, epoch, starts)
				if err != nil {
					return nil, err
				}
				body = append(body, st)
			}
			switch {
			case pk.Sync[j] == partition.GridSync:
				body = append(body, &kir.GridSync{})
			case pk.Sync[j] == partition.BlockSync || shared || prevShared:
				body = append(body, &kir.SyncThreads{})
			}
		}
		prevShared = shared
		if gridSynced(pk, j) {
			epoch = epoch[:0]
		}
		epoch = append(epoch, j)
		stage = rotate(stage, starts[j], pl.Threads)
		body = append(body, &kir.Stage{Name: t.Name, Span: t.Span, Body: stage})
	}
	if len(inits) > 0 {
		body = append(append(inits, &kir.GridSync{}), body...)
	}
	body = l.counters(pk, pl, body)
	k.Body = append(clear, body...)
	k.Grid = kir.Grid{Resident: true, Blocks: max(1, min(pk.Grid, max(tiles, span)))}
	k.Doc = fmt.Sprintf("%d stages: %s", len(docs), strings.Join(docs, ", "))
	if len(k.Doc) > 200 {
		k.Doc = k.Doc[:197] + "..."
	}
	n := k.SharedBytes()
	if err := pl.GPU.CheckShared(k.Name, n); err != nil {
		return nil, fmt.Errorf("lower: %w of %s; %s", err, pl.GPU.Name, partition.FitHint)
	}
	// The plan sized the grid from its estimate of the block's resources;
	// the kernel's own shared memory decides how many blocks are resident
	// at once, and a cooperative launch of more would fail.
	res := pk.Resources
	res.Threads, res.SharedBytes = max(res.Threads, k.Block), max(res.SharedBytes, int(n))
	fit := pl.GPU.ResidentBlocks(res.Block())
	if fit == 0 {
		return nil, fmt.Errorf("lower: kernel %s: a block of %d threads, %d registers per thread and %d B of shared memory does not fit on an SM of %s; %s",
			k.Name, res.Threads, res.RegsPerThread, res.SharedBytes, pl.GPU.Name, partition.FitHint)
	}
	k.Grid.Blocks = min(k.Grid.Blocks, fit)
	// The blocks per SM that the grid counts on: all that fit, or as many
	// as the grid's blocks spread over the SMs take.
	k.BlocksPerSM = min(fit/pl.GPU.SMs, te.CeilDiv(k.Grid.Blocks, pl.GPU.SMs))
	l.params(k)
	return k, nil
}

// rows computes t a block per row (its first rowAxes axes), the block's
// threads sharing the row's elements, a vector of them each where
// vectorElems allows (k receives the vectors' local arrays).
func (l *lowerer) rows(t *te.Tensor, rowAxes int, k *kir.Kernel, body *[]kir.Stmt) {
	r, c := product(t.Axes[:rowAxes]), product(t.Axes[rowAxes:])
	buf := l.bufs[t]
	o, e := kir.NewVar("row", te.I32), kir.NewVar("e", te.I32)
	g := l.gen(nil)
	if vec, moving, guards := guardedVectorElems(t, buf, nil); vec > 0 {
		ev := kir.NewVar("ev", te.I32)
		ok := false
		inner := g.into(func() {
			g.emit(&kir.Let{Var: e, Value: kir.Mul(ev, kir.I(vec))})
			bind(g, t.Axes[:rowAxes], o)
			bind(g, t.Axes[rowAxes:], e)
			ok = l.storeGuardedVector(g, t, vec, moving, guards, kir.Add(kir.Mul(o, kir.I(c)), e), k, nil, nil, nil)
		})
		if ok {
			*body = append(*body, &kir.For{Var: o, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(r), Body: []kir.Stmt{
				&kir.For{Var: ev, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(c / vec), Body: inner},
			}})
			return
		}
		g = l.gen(nil)
	}
	inner := g.into(func() {
		bind(g, t.Axes[:rowAxes], o)
		bind(g, t.Axes[rowAxes:], e)
		v := g.expr(t.Body)
		g.emit(&kir.Store{Buf: buf, Index: kir.Add(kir.Mul(o, kir.I(c)), e), Value: convert(v, buf.ValueType())})
	})
	*body = append(*body, &kir.For{Var: o, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(r), Body: []kir.Stmt{
		&kir.For{Var: e, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(c), Body: inner},
	}})
}

// blockReduceOrElementwise lowers t as a block per output if it has a long
// top-level reduction, and a thread per element otherwise.
func (l *lowerer) blockReduceOrElementwise(t *te.Tensor, k *kir.Kernel, body *[]kir.Stmt) {
	if reds := te.TopReduces(t.Body); len(reds) > 0 {
		l.blockReduce(t, reds, k, body)
		return
	}
	l.elementwise(t, k, body)
}

// placeShared moves the scratch arrays of a stage lowered into tmp to k's
// arenas, one shared array per element type, laid out as schedule.Place
// says (the layout whose size the plan counts, schedule.SharedBytes):
// the stage's accesses of each array become accesses of its type's arena
// from the array's offset, and an arena is as large as the most any stage
// places in it. Results kept on chip and the weight cache, which outlive
// their stages, are arrays of their own. Stages that use shared memory are
// separated by block barriers, so that one stage's arrays may take the
// bytes of another's.
func (l *lowerer) placeShared(k, tmp *kir.Kernel, stage []kir.Stmt, arenas map[te.DType]*kir.Buffer) {
	arrays := make([]schedule.Array, len(tmp.Shared))
	for i, b := range tmp.Shared {
		arrays[i] = schedule.Array{DType: b.DType, Len: b.Len()}
	}
	offsets, need := schedule.Place(arrays)
	for i, b := range tmp.Shared {
		a := arenas[b.DType]
		if a == nil {
			name := "smem_" + b.DType.String()
			for l.m.Buffer(name) != nil {
				name += "_"
			}
			a = &kir.Buffer{Name: name, Space: kir.Shared, DType: b.DType, Shape: []int{0}}
			arenas[b.DType] = a
			k.Shared = append(k.Shared, a)
		}
		a.Shape[0] = max(a.Shape[0], need[b.DType])
		rebase(stage, b, a, offsets[i])
	}
}

// arenasOf returns the arenas that shared arrays bufs need, laid out as
// a stage's scratch arrays are (schedule.Place).
func arenasOf(bufs []*kir.Buffer) schedule.Arenas {
	arrays := make([]schedule.Array, len(bufs))
	for i, b := range bufs {
		arrays[i] = schedule.Array{DType: b.DType, Len: b.Len()}
	}
	return schedule.ArenasOf(arrays)
}

// rebase makes every access of body to element i of old access element
// off + i of new.
func rebase(body []kir.Stmt, old, new *kir.Buffer, off int) {
	shift := func(i kir.Expr) kir.Expr {
		if off == 0 {
			return i
		}
		if c, ok := i.(*kir.Const); ok && c.T == te.I32 {
			return kir.I(int(c.Value) + off)
		}
		return kir.Add(i, kir.I(off))
	}
	done := map[*kir.Load]bool{} // a load reached twice is shifted once
	fix := func(e kir.Expr) {
		kir.WalkExpr(e, func(x kir.Expr) bool {
			if ld, ok := x.(*kir.Load); ok && ld.Buf == old && !done[ld] {
				done[ld] = true
				ld.Buf, ld.Index = new, shift(ld.Index)
			}
			return true
		})
	}
	kir.WalkStmts(body, func(s kir.Stmt) bool {
		switch s := s.(type) {
		case *kir.Store:
			if s.Buf == old {
				s.Buf, s.Index = new, shift(s.Index)
			}
		case *kir.Atomic:
			if s.Buf == old {
				s.Buf, s.Index = new, shift(s.Index)
			}
		case *kir.LdMatrix:
			if s.Src == old {
				s.Src, s.Index = new, shift(s.Index)
			}
		case *kir.CopyAsync:
			if s.Dst == old {
				s.Dst, s.DstIndex = new, shift(s.DstIndex)
			}
		case *kir.VecCopy:
			if s.Dst == old {
				s.Dst, s.DstIndex = new, shift(s.DstIndex)
			}
			if s.Src == old {
				s.Src, s.SrcIndex = new, shift(s.SrcIndex)
			}
		}
		kir.Exprs(s, fix)
		return true
	})
}

// splitReduce lowers t = f(r), r a top-level sum, max or min, in two
// phases (see Fused). It emits the partial and finishing phases, separated
// by a grid sync, into body, and returns the init phase, which the kernel
// runs before its first stage.
func (l *lowerer) splitReduce(t *te.Tensor, s *schedule.Schedule, k *kir.Kernel, body *[]kir.Stmt, deterministic bool) []kir.Stmt {
	r := te.TopReduces(t.Body)[0]
	if r.Op.IsArg() {
		l.argSplitReduce(t, r, s, k, body) // argreduce.go: pairs, never atomics
		return nil
	}
	rt := te.TypeOf(r)
	n, ext, chunks := t.NumElements(), extent(r), s.Chunks
	chunkLen := te.CeilDiv(ext, chunks)
	threads := l.threads
	red := &kir.Buffer{Name: "red_" + rt.String(), Space: kir.Shared, DType: rt, Shape: []int{threads}}
	k.Shared = append(k.Shared, red)
	var acc *kir.Buffer
	var inits []kir.Stmt
	if deterministic {
		acc = &kir.Buffer{Name: t.Name + ".part", Space: kir.Global, Role: kir.Temp, DType: te.F32, Shape: []int{n, chunks}}
	} else {
		acc = &kir.Buffer{Name: t.Name + ".acc", Space: kir.Global, Role: kir.Temp, DType: te.F32, Shape: []int{n}}
		i := kir.NewVar("i", te.I32)
		inits = append(inits, &kir.Stage{Name: t.Name + ".init", Span: t.Span, Body: []kir.Stmt{
			&kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: []kir.Stmt{
				&kir.Store{Buf: acc, Index: i, Value: identity(r.Op, te.F32)},
			}},
		}})
	}
	l.m.Buffers = append(l.m.Buffers, acc)

	// Partial phase: tile = output o × chunk c.
	tid := kir.NewVar("tid", te.I32)
	tile := kir.NewVar("tile", te.I32)
	g := l.gen(nil)
	inner := g.into(func() {
		o, c := kir.NewVar("o", te.I32), kir.NewVar("c", te.I32)
		g.emit(&kir.Let{Var: o, Value: kir.Div(tile, kir.I(chunks))}, &kir.Let{Var: c, Value: kir.Mod(tile, kir.I(chunks))})
		bind(g, t.Axes, o)
		a := kir.NewVar("acc", rt)
		g.emit(&kir.Let{Var: a, Value: identity(r.Op, rt)})
		j := kir.NewVar("r", te.I32)
		part := g.into(func() {
			jj := kir.NewVar("rr", te.I32)
			g.emit(&kir.Let{Var: jj, Value: kir.Add(kir.Mul(c, kir.I(chunkLen)), j)})
			in := g.into(func() {
				bind(g, r.Axes, jj)
				g.emit(&kir.Assign{Var: a, Value: combine(r.Op, a, convert(g.expr(r.Body), rt))})
			})
			g.emit(guard(in, nil, bound{jj, ext, ext%chunkLen != 0})...)
		})
		g.emit(&kir.For{Var: j, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(chunkLen), Body: part})
		for _, ax := range r.Axes {
			delete(g.env, ax)
		}
		v := treeReduce(g, r.Op, red, tid, a, threads)
		var put kir.Stmt
		if deterministic {
			put = &kir.Store{Buf: acc, Index: tile, Value: convert(v, te.F32)}
		} else {
			put = &kir.Atomic{Op: atomicOf(r.Op), Buf: acc, Index: o, Value: convert(v, te.F32)}
		}
		g.emit(&kir.If{Cond: kir.Eq(tid, kir.I(0)), Then: []kir.Stmt{put}})
	})
	*body = append(*body,
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.For{Var: tile, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(n * chunks), Body: inner},
		&kir.GridSync{})

	// Finishing phase: a thread per output.
	i := kir.NewVar("i", te.I32)
	g2 := l.gen(nil)
	fin := g2.into(func() {
		bind(g2, t.Axes, i)
		var v kir.Expr
		if deterministic {
			sum := kir.NewVar("acc", te.F32)
			g2.emit(&kir.Let{Var: sum, Value: kir.Ld(acc, kir.Mul(i, kir.I(chunks)))})
			c := kir.NewVar("c", te.I32)
			g2.emit(&kir.For{Var: c, Kind: kir.Serial, Lo: kir.I(1), Hi: kir.I(chunks), Step: 1, Body: []kir.Stmt{
				&kir.Assign{Var: sum, Value: combine(r.Op, sum, kir.Ld(acc, kir.Add(kir.Mul(i, kir.I(chunks)), c)))},
			}})
			v = sum
		} else {
			v = kir.Ld(acc, i)
		}
		g2.done[r] = convert(v, rt)
		buf := l.bufs[t]
		g2.emit(&kir.Store{Buf: buf, Index: i, Value: convert(g2.expr(t.Body), buf.ValueType())})
	})
	*body = append(*body, &kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: fin})
	return inits
}

// atomicOf returns the atomic operation that accumulates op.
func atomicOf(op te.ReduceOp) kir.AtomicOp {
	switch op {
	case te.ReduceMax:
		return kir.AtomicMax
	case te.ReduceMin:
		return kir.AtomicMin
	}
	return kir.AtomicAdd
}

// threadBound reports whether stage j of pk reads, or is read by, a stage
// that no barrier separates from it: the planner then relies on each
// element staying with the thread of the scalar loop (partition's
// same-thread reuse), and the stage may not vectorise its elements.
func threadBound(pk *partition.Kernel, j int) bool {
	reads := func(a, b *te.Tensor) bool { return slices.Contains(te.Inputs(a.Body), b) }
	for p := j - 1; p >= 0 && pk.Sync[p+1] == partition.NoBarrier; p-- {
		if reads(pk.Stages[j], pk.Stages[p]) {
			return true
		}
	}
	for f := j + 1; f < len(pk.Stages) && pk.Sync[f] == partition.NoBarrier; f++ {
		if reads(pk.Stages[f], pk.Stages[j]) {
			return true
		}
	}
	return false
}
