// Package lower lowers a te.Program to kernel IR without fusion: one kernel
// per compute tensor, the baseline that Souffle's ablation (Table 4) calls V0
// and tec calls -O0.
//
// Each tensor gets the kernel shape that suits its body:
//
//   - a contraction, out = f(sum[k](X * Y)) where X and Y each miss some
//     output axes (matmul, batch matmul, convolution), is tiled: a block
//     computes a TM×TN tile of outputs of one batch entry, staging TM×TK
//     tiles of X and TK×TN tiles of Y in shared memory;
//   - a body with a large reduction is computed a block per output element:
//     the block's threads reduce a strided share each, then combine their
//     partial results in shared memory by a tree reduction;
//   - anything else, and every reduction not handled above, is computed a
//     thread per output element, reductions as serial loops in registers,
//     unrolled over up to schedule.UnrollPoints consecutive points
//     (schedule.ReduceUnroll: a 7×7 window two rows at a time), so that
//     the loads of those points are issued together, before the sums that
//     use them, as the cost model prices them.
//
// Selects stay lazy wherever a branch may load out of bounds (padding).
//
// Index arithmetic is i32 wherever its values are proven to fit 32 bits and
// i64 elsewhere: both Unfused and Fused end with kir.Widen (kir's "Index
// widths"), whose bounds come from the loops, the grid and the gathers'
// clamps, so that a product past 2^31 on the way to an index in bounds
// (a large stride, or a modulo of a large product) is never wrapped.
//
// Every kernel is right for any block size the GPU allows, not only powers
// of two (a GPU description may allow 96 or 33 threads per block): a tree
// combine of n partials in shared memory folds the upper ⌊n/2⌋ onto the
// lower ⌈n/2⌉ at each step (96: 48, 24, 12, 6, 3, 2, 1 live partials), so
// that an odd count never drops its middle partial.
//
// Fused lowers a partition plan to persistent kernels. It checks the
// plan's promises that make -O4's reuse correct (see package partition): a
// result kept on chip is read by the blocks that wrote it (checkOnChip),
// and an epilogue stage reads only what its own thread wrote (the plan's
// own Verify, by the rule that chose it); a plan that breaks one is an
// error, not a kernel.
//
// # Shared tiles
//
// The operand tiles that tensor-core stages stage in shared memory (xs
// and ys, see mma.go; k-major tiles have rows of the operand's m or n
// points and columns of k, the others rows of k) follow one layout rule,
// so that neither their stores (cp.async, a register prefetch's 16-byte
// stores, or element by element) nor their reads (ldmatrix rows, with or
// without .trans, or TF32 fragments element by element) meet bank
// conflicts: each row is
// cut into 16-byte chunks, and chunk j of row r is stored at chunk
// j - j%p + (j%p + w·⌊r/q⌋) mod p of the same row, where p = min(chunks
// per row, 8), q = max(8 / chunks per row, 1) rows share a 128-byte line,
// and w is 1 (2 for a TF32 tile with rows of k, whose fragments read two
// chunks of each of 4 rows). The 8 rows an ldmatrix phase reads at one chunk then fall in
// 8 different groups of 4 banks, and a row's chunks stay in that row, so
// the tile takes the same bytes as a row-major one (what the plan counts,
// schedule.Place) and every chunk stays 16-byte aligned for cp.async.
package lower

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"tec/backend/kir"
	"tec/contraction"
	"tec/gpu"
	"tec/partition"
	"tec/schedule"
	"tec/te"
)

// Options controls lowering.
type Options struct {
	// BlockSize is the number of threads of element-wise kernels and the
	// largest block of reduction kernels; 0 means 256. It must be a power
	// of two between 32 and 1024. It is ignored when Plan is set.
	BlockSize int
	// Plan, when set, is a per-TE plan of the program (partition.PerTE)
	// for its GPU, which the kernels follow: no kernel has more threads
	// than the plan's block (Plan.Threads, within the GPU's limit), a
	// contraction takes the plan's tile, and a kernel whose shared memory
	// exceeds the GPU's is an error. The module records the GPU.
	Plan *partition.Plan

	// flatTiles lays tensor-core operand tiles out row-major, without the
	// rotation of "Shared tiles" (tests of the bank-conflict count).
	flatTiles bool
}

// Unfused lowers p to one kernel per compute tensor.
func Unfused(p *te.Program, opts Options) (*kir.Module, error) {
	if pl := opts.Plan; pl != nil {
		if pl.Program != p {
			return nil, fmt.Errorf("lower: plan is for program %s, not this %s", pl.Program.Name, p.Name)
		}
		if b := pl.Threads; b < 1 || b > kir.MaxBlockThreads {
			return nil, fmt.Errorf("lower: the plan's block of %d threads is not in [1, %d]", b, kir.MaxBlockThreads)
		}
		opts.BlockSize = pl.Threads
	} else {
		if opts.BlockSize == 0 {
			opts.BlockSize = 256
		}
		if b := opts.BlockSize; b < 32 || b > kir.MaxBlockThreads || b&(b-1) != 0 {
			return nil, fmt.Errorf("lower: block size %d is not a power of two in [32, %d]", b, kir.MaxBlockThreads)
		}
	}
	l := newLowerer(p, opts)
	for _, t := range p.Tensors {
		if t.Kind != te.Compute {
			continue
		}
		if t.Body == nil {
			return nil, fmt.Errorf("lower: tensor %s has no body", t.Name)
		}
		k := l.tensor(t)
		if pl := opts.Plan; pl != nil {
			if err := pl.GPU.CheckShared(k.Name, k.SharedBytes()); err != nil {
				return nil, fmt.Errorf("lower: %w of %s", err, pl.GPU.Name)
			}
		}
		l.m.Kernels = append(l.m.Kernels, k)
	}
	if err := l.updates(); err != nil {
		return nil, err
	}
	if pl := opts.Plan; pl != nil {
		l.m.GPU = &pl.GPU
	}
	// Index arithmetic that may leave 32 bits is made 64-bit (kir's
	// "Index widths"); the simulator checks the rest.
	kir.Widen(l.m)
	if err := kir.Verify(l.m); err != nil {
		return nil, fmt.Errorf("lower: %w", err)
	}
	return l.m, nil
}

// newLowerer returns a lowerer of p with a global buffer for each tensor.
func newLowerer(p *te.Program, opts Options) *lowerer {
	l := &lowerer{opts: opts, p: p, bufs: map[*te.Tensor]*kir.Buffer{}, m: &kir.Module{Name: p.Name}}
	if opts.Plan != nil {
		l.sharedPerBlock = opts.Plan.GPU.SharedPerBlock
		l.arch = opts.Plan.GPU.Arch
	}
	outputs := map[*te.Tensor]bool{}
	for _, t := range p.Outputs {
		outputs[t] = true
	}
	for _, t := range p.Tensors {
		b := &kir.Buffer{Name: t.Name, DType: t.DType, Shape: append([]int(nil), t.Shape...)}
		switch {
		case t.Kind == te.Input:
			b.Role = kir.Input
		case t.Kind == te.Param:
			b.Role = kir.Param
		case outputs[t]:
			b.Role = kir.Output
		}
		l.bufs[t] = b
		l.m.Buffers = append(l.m.Buffers, b)
	}
	for _, t := range p.Outputs {
		l.m.Outputs = append(l.m.Outputs, l.bufs[t])
	}
	for _, u := range p.Updates() {
		if b := l.bufs[u.Update.Target]; b != nil {
			b.InPlace = true
		}
	}
	return l
}

type lowerer struct {
	opts Options
	p    *te.Program
	bufs map[*te.Tensor]*kir.Buffer
	m    *kir.Module

	// In a fused kernel every stage runs with the kernel's block: threads
	// is its size, tm×tn (= threads) the grid of the block's threads over
	// the tile of the contraction being lowered, and rm×rn the outputs of
	// each thread, tk the k of the factors it stages in shared memory at
	// once. Zero (rm, rn: 1) in unfused lowering, where each kernel picks
	// its own tile.
	threads, tm, tn int
	rm, rn, tk      int
	// sharedPerBlock is the planned GPU's shared memory per block, 0
	// where no plan says (a tensor-core tile then takes the stages its
	// operands want).
	sharedPerBlock int
	// arch is the architecture the plan's code is compiled for, zero
	// (sm_80's instructions) without a plan: where it lacks cp.async or
	// the f16 m16n8k16 MMA (sm_75), the tensor-core code does without.
	arch gpu.Arch

	// bufPos is the position in m.Buffers, to which lowering only
	// appends, of the first indexed buffers.
	bufPos  map[*kir.Buffer]int
	indexed int

	// remap says that the fused stage being lowered may give its
	// elements to other threads of the blocks that the scalar loop
	// gives them to (elementwiseChunks); chunkLoops are the variables
	// of the chunk loops that it emitted, whose trips are the tiles of
	// per-tile counters.
	remap bool
	// scratch is the fused kernel's scratch arenas as its plan counts
	// them, which a stage may use without the plan counting it.
	scratch    schedule.Arenas
	chunkLoops map[*kir.Var]bool
}

func (l *lowerer) gen(out *[]kir.Stmt) *gen {
	return &gen{bufs: l.bufs, env: map[*te.Var]kir.Expr{}, out: out, done: map[*te.Reduce]kir.Expr{}, m: l.m}
}

// tensor lowers one compute tensor to its kernel.
func (l *lowerer) tensor(t *te.Tensor) *kir.Kernel {
	k := &kir.Kernel{Name: t.Name, Doc: doc(t)}
	var body []kir.Stmt
	r, _, _, one := contraction.MaskedReduce(t.Body)
	switch reds := te.TopReduces(t.Body); {
	case one && l.contraction(t, r, k, &body):
	case len(reds) > 0 && maxExtent(reds) >= 64:
		l.blockReduce(t, reds, k, &body)
	default:
		l.elementwise(t, k, &body)
	}
	k.Body = []kir.Stmt{&kir.Stage{Name: t.Name, Span: t.Span, Body: body}}
	l.params(k)
	return k
}

// schedule returns t's schedule in the per-TE plan, or nil without one.
func (l *lowerer) schedule(t *te.Tensor) *schedule.Schedule {
	if l.opts.Plan == nil {
		return nil
	}
	return l.opts.Plan.Schedules[t]
}

// params sets k's parameters: the global buffers it touches, in module
// order.
func (l *lowerer) params(k *kir.Kernel) {
	used := map[*kir.Buffer]bool{}
	kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
		kir.Accesses(s, func(b *kir.Buffer, _ bool) { used[b] = true })
		kir.Exprs(s, func(e kir.Expr) {
			kir.WalkExpr(e, func(x kir.Expr) bool {
				switch x := x.(type) {
				case *kir.Load:
					used[x.Buf] = true
				case *kir.Bounded:
					if x.Record != nil {
						used[x.Record] = true
					}
				}
				return true
			})
		})
		return true
	})
	// The parameters in the module's order: sorting the few a kernel uses
	// by their positions, not scanning every buffer of the module for each
	// kernel, which took time quadratic in the kernels of an unrolled model.
	if l.bufPos == nil {
		l.bufPos = map[*kir.Buffer]int{}
	}
	for ; l.indexed < len(l.m.Buffers); l.indexed++ {
		if _, dup := l.bufPos[l.m.Buffers[l.indexed]]; !dup {
			l.bufPos[l.m.Buffers[l.indexed]] = l.indexed
		}
	}
	var params []*kir.Buffer
	for b := range used {
		if _, ok := l.bufPos[b]; ok {
			params = append(params, b)
		}
	}
	slices.SortFunc(params, func(x, y *kir.Buffer) int { return cmp.Compare(l.bufPos[x], l.bufPos[y]) })
	k.Params = append(k.Params, params...)
}

func doc(t *te.Tensor) string {
	d := fmt.Sprintf("%s = %s", t.Name, te.FormatExpr(t.Body))
	if len(d) > 200 {
		d = d[:197] + "..."
	}
	if len(t.Scope) > 0 {
		d += "\nin " + strings.Join(t.Scope, "/")
	}
	return d
}

func extent(r *te.Reduce) int {
	n := 1
	for _, a := range r.Axes {
		n *= a.Extent
	}
	return n
}

func maxExtent(rs []*te.Reduce) int {
	m := 0
	for _, r := range rs {
		m = max(m, extent(r))
	}
	return m
}

// bind emits lets that decompose the flat index flat over axes (row-major)
// and binds them in g.
func bind(g *gen, axes []*te.Var, flat kir.Expr) {
	stride := 1
	for d := len(axes) - 1; d >= 0; d-- {
		a := axes[d]
		if a.Extent == 1 {
			g.env[a] = kir.I(0)
			continue
		}
		var v kir.Expr = flat
		if stride > 1 {
			v = kir.Div(v, kir.I(stride))
		}
		if d > 0 {
			v = kir.Mod(v, kir.I(a.Extent))
		}
		x := kir.NewVar(a.Name, te.I32)
		g.emit(&kir.Let{Var: x, Value: v})
		g.env[a] = x
		stride *= a.Extent
	}
}

// axisIndexes returns the indexes of t's axes, for addressing its element.
func axisIndexes(t *te.Tensor) []te.Index {
	ix := make([]te.Index, len(t.Axes))
	for d, a := range t.Axes {
		ix[d] = te.VarIndex(a)
	}
	return ix
}

// elementwise computes a thread per output element, or a vector of them
// where guardedVectorElems allows: in a kernel of its own a thread per
// vector (elementwiseVector), in a fused kernel, where the stage may give
// its elements to other threads of their blocks (remap), a block's chunk
// of elements at a time (elementwiseChunks, or elementwiseStaged where the
// body takes a sine or cosine).
func (l *lowerer) elementwise(t *te.Tensor, k *kir.Kernel, body *[]kir.Stmt) {
	n := t.NumElements()
	buf := l.bufs[t]
	if vec, moving, guards := guardedVectorElems(t, buf, nil); vec > 0 {
		switch {
		case l.threads == 0 && l.elementwiseVector(t, vec, moving, guards, k, body):
			return
		case l.threads > 0 && l.remap && hasTable(t.Body) && l.elementwiseStaged(t, vec, moving, guards, k, body):
			return
		case l.threads > 0 && l.remap && !hasTable(t.Body) && l.elementwiseChunks(t, vec, moving, guards, k, body):
			return
		}
	}
	k.Block = min(l.opts.BlockSize, max(32, te.NextPow2(n)))
	k.Grid = kir.Grid{Blocks: max(1, te.CeilDiv(n, k.Block))}
	i := kir.NewVar("i", te.I32)
	g := l.gen(nil)
	inner := g.into(func() {
		bind(g, t.Axes, i)
		v := g.expr(t.Body)
		g.emit(&kir.Store{Buf: buf, Index: i, Value: convert(v, buf.ValueType())})
	})
	*body = append(*body, &kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: inner})
}

// elementwiseVector computes t a thread per vector of vec elements
// (storeVector), and reports false, emitting nothing, where a moving load
// is not a plain one after all.
func (l *lowerer) elementwiseVector(t *te.Tensor, vec int, moving []*te.Load, guards map[*te.Load][]te.VectorGuard, k *kir.Kernel, body *[]kir.Stmt) bool {
	n := t.NumElements() / vec
	iv, i := kir.NewVar("iv", te.I32), kir.NewVar("i", te.I32)
	g := l.gen(nil)
	ok := false
	inner := g.into(func() {
		g.emit(&kir.Let{Var: i, Value: kir.Mul(iv, kir.I(vec))})
		bind(g, t.Axes, i)
		ok = l.storeGuardedVector(g, t, vec, moving, guards, i, k, nil, nil, nil)
	})
	if !ok {
		return false
	}
	k.Block = min(l.opts.BlockSize, max(32, te.NextPow2(n)))
	k.Grid = kir.Grid{Blocks: max(1, te.CeilDiv(n, k.Block))}
	*body = append(*body, &kir.For{Var: iv, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: inner})
	return true
}

// elementwiseChunks computes t, in a fused kernel, a chunk of the
// block's threads' worth of elements per tile, as the scalar loop's
// thread-stride elements fall to blocks (chunk c on block c mod the
// grid), each of the chunk's first threads/vec threads a vector of vec
// elements (storeGuardedVector): the tiles that per-tile counters
// (counters.go) wait on and signal stay the scalar loop's, while an
// element goes to another thread of its block, which only a stage that
// no neighbour reads without a barrier may do (remap). It reports false,
// emitting nothing, where the block's threads are not a multiple of vec
// or a moving load is not a plain one.
func (l *lowerer) elementwiseChunks(t *te.Tensor, vec int, moving []*te.Load, guards map[*te.Load][]te.VectorGuard, k *kir.Kernel, body *[]kir.Stmt) bool {
	b := l.threads
	if b%vec != 0 {
		return false
	}
	n, per := t.NumElements(), b/vec
	c, iv, i := kir.NewVar("c", te.I32), kir.NewVar("iv", te.I32), kir.NewVar("i", te.I32)
	tid := kir.NewVar("tv", te.I32)
	g := l.gen(nil)
	ok := false
	work := g.into(func() {
		g.emit(&kir.Let{Var: i, Value: kir.Mul(iv, kir.I(vec))})
		bind(g, t.Axes, i)
		ok = l.storeGuardedVector(g, t, vec, moving, guards, i, k, nil, nil, nil)
	})
	if !ok {
		return false
	}
	in := kir.Lt(tid, kir.I(per))
	if n%b != 0 {
		in = kir.And(in, kir.Lt(iv, kir.I(n/vec)))
	}
	loop := &kir.For{Var: c, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(te.CeilDiv(n, b)), Body: []kir.Stmt{
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.Let{Var: iv, Value: kir.Add(kir.Mul(c, kir.I(per)), tid)},
		&kir.If{Cond: in, Then: work},
	}}
	if l.chunkLoops == nil {
		l.chunkLoops = map[*kir.Var]bool{}
	}
	l.chunkLoops[c] = true
	*body = append(*body, loop)
	return true
}

// hasTable reports whether e takes a sine or cosine, whose CUDA
// functions reduce a large argument with loads from a table in global
// memory: computed for a vector of elements per thread, each element
// would carry its own copy of those loads.
func hasTable(e te.Expr) bool {
	return te.Contains(e, func(x te.Expr) bool {
		u, ok := x.(*te.Unary)
		return ok && (u.Op == te.Sin || u.Op == te.Cos)
	})
}

// elementwiseStaged is elementwiseChunks where each element is computed
// by the thread of the scalar loop: the chunk's first threads/vec threads
// read its moving loads' vectors (storeGuardedVector's guards and all)
// into shared arrays of a chunk's elements, and after a block barrier
// every thread computes and stores its element from them. The body's code
// is then in the kernel once per thread, not once per element of a
// vector (hasTable). The arrays must fit in the scratch the plan gives
// the kernel's other stages (l.scratch): the plan does not count them,
// and where they do not fit it reports false, emitting nothing.
func (l *lowerer) elementwiseStaged(t *te.Tensor, vec int, moving []*te.Load, guards map[*te.Load][]te.VectorGuard, k *kir.Kernel, body *[]kir.Stmt) bool {
	b := l.threads
	if b%vec != 0 {
		return false
	}
	n, per := t.NumElements(), b/vec
	buf := l.bufs[t]
	c, iv, i := kir.NewVar("c", te.I32), kir.NewVar("iv", te.I32), kir.NewVar("i", te.I32)
	tid := kir.NewVar("tv", te.I32)
	at := &te.Var{Name: "tv", Extent: b}
	g := l.gen(nil)
	g.env[at] = tid
	staged := map[*te.Load]*te.Tensor{}
	var shared []*kir.Buffer
	ok := true
	load := g.into(func() {
		g.emit(&kir.Let{Var: i, Value: kir.Mul(iv, kir.I(vec))})
		bind(g, t.Axes, i)
		staged, shared, ok = readVectors(g, moving, guards, vec, func(j int, dt te.DType) (*kir.Buffer, kir.Expr) {
			s := &kir.Buffer{Name: fmt.Sprintf("%s_s%d", t.Name, j), Space: kir.Shared, DType: dt, Shape: []int{b}}
			return s, kir.Mul(tid, kir.I(vec))
		})
		for _, a := range t.Axes {
			delete(g.env, a)
		}
	})
	if !ok || !l.scratch.Holds(arenasOf(shared)) {
		return false
	}
	e := kir.NewVar("i", te.I32)
	compute := g.into(func() {
		bind(g, t.Axes, e)
		v := g.expr(readLocal(t.Body, staged, te.VarIndex(at)))
		g.emit(&kir.Store{Buf: buf, Index: e, Value: convert(v, buf.ValueType())})
	})
	in := kir.Lt(tid, kir.I(per))
	if n%b != 0 {
		in = kir.And(in, kir.Lt(iv, kir.I(n/vec)))
		compute = []kir.Stmt{&kir.If{Cond: kir.Lt(e, kir.I(n)), Then: compute}}
	}
	chunk := []kir.Stmt{
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.Let{Var: iv, Value: kir.Add(kir.Mul(c, kir.I(per)), tid)},
		&kir.If{Cond: in, Then: load},
		&kir.SyncThreads{},
		&kir.Let{Var: e, Value: kir.Add(kir.Mul(c, kir.I(b)), tid)},
	}
	chunk = append(chunk, compute...)
	chunk = append(chunk, &kir.SyncThreads{}) // the next chunk's copies after this one's reads
	loop := &kir.For{Var: c, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(te.CeilDiv(n, b)), Body: chunk}
	if l.chunkLoops == nil {
		l.chunkLoops = map[*kir.Var]bool{}
	}
	l.chunkLoops[c] = true
	k.Shared = append(k.Shared, shared...)
	*body = append(*body, loop)
	return true
}

// treeReduce emits the reduction of each thread's acc over a block of
// threads, leaving the result in the returned register of every thread;
// red is a shared array of a partial per thread, free before and after.
// Blocks of a warp or more reduce f32 and i32 partials with warp shuffles
// (warpReduce); others with a tree in shared memory and a barrier per
// level.
func treeReduce(g *gen, op te.ReduceOp, red *kir.Buffer, tid, acc kir.Expr, threads int) *kir.Var {
	if t := acc.Type(); threads >= kir.WarpSize && (t == te.F32 || t == te.I32) {
		return warpReduce(g, op, red, tid, acc, threads)
	}
	return sharedTreeReduce(g, op, red, tid, acc, threads)
}

// warpReduce reduces acc over a block of threads ≥ WarpSize with warp
// shuffles. A partial last warp (threads not a multiple of WarpSize) first
// hands its partials through red[tid] to the lanes of warp 0, so that only
// full warps shuffle, with the full mask. Each full warp then combines its
// lanes with five butterfly (xor) shuffles, which leave the warp's total in
// every lane. With one full warp that is the result, handed to a partial
// warp through red[0]; with more, lane 0 of each warp writes its total to
// red[warp], and warp 0 combines them, padded with the identity, with
// ⌈log₂ warps⌉ more butterfly shuffles, and hands the result to every
// thread through red[0]. The order of combination is fixed, so the result
// is the same run to run.
func warpReduce(g *gen, op te.ReduceOp, red *kir.Buffer, tid, acc kir.Expr, threads int) *kir.Var {
	full := threads / kir.WarpSize
	tail := threads % kir.WarpSize
	fullLanes := full * kir.WarpSize
	t := acc.Type()
	v := kir.NewVar("wacc", t)
	g.emit(&kir.Let{Var: v, Value: acc})
	if tail > 0 {
		g.emit(&kir.If{Cond: kir.Ge(tid, kir.I(fullLanes)), Then: []kir.Stmt{&kir.Store{Buf: red, Index: tid, Value: v}}},
			&kir.SyncThreads{},
			&kir.If{Cond: kir.Lt(tid, kir.I(tail)), Then: []kir.Stmt{
				&kir.Assign{Var: v, Value: combine(op, v, kir.Ld(red, kir.Add(tid, kir.I(fullLanes))))},
			}})
	}
	butterfly := func(v *kir.Var, lanes int) []kir.Stmt {
		var ss []kir.Stmt
		for off := lanes / 2; off > 0; off /= 2 {
			sh := &kir.Shuffle{Mode: kir.ShuffleXor, X: v, Offset: off, Width: kir.WarpSize, Mask: kir.FullMask()}
			ss = append(ss, &kir.Assign{Var: v, Value: combine(op, v, sh)})
		}
		return ss
	}
	inWarps := butterfly(v, kir.WarpSize)
	r := kir.NewVar("red", t)
	if full == 1 && tail == 0 {
		g.emit(inWarps...)
		g.emit(&kir.Let{Var: r, Value: v})
		return r
	}
	lane0 := kir.Eq(kir.Mod(tid, kir.I(kir.WarpSize)), kir.I(0))
	if full == 1 {
		g.emit(&kir.If{Cond: kir.Lt(tid, kir.I(kir.WarpSize)), Then: append(inWarps,
			&kir.If{Cond: kir.Eq(tid, kir.I(0)), Then: []kir.Stmt{&kir.Store{Buf: red, Index: kir.I(0), Value: v}}})})
	} else {
		w := kir.NewVar("wsum", t)
		second := []kir.Stmt{&kir.Let{Var: w, Value: &kir.Select{Cond: kir.Lt(tid, kir.I(full)), Then: kir.Ld(red, tid), Else: identity(op, t)}}}
		second = append(second, butterfly(w, te.NextPow2(full))...)
		second = append(second, &kir.If{Cond: kir.Eq(tid, kir.I(0)), Then: []kir.Stmt{&kir.Store{Buf: red, Index: kir.I(0), Value: w}}})
		warps := append(inWarps, &kir.If{Cond: lane0, Then: []kir.Stmt{&kir.Store{Buf: red, Index: kir.Div(tid, kir.I(kir.WarpSize)), Value: v}}})
		if tail > 0 {
			warps = []kir.Stmt{&kir.If{Cond: kir.Lt(tid, kir.I(fullLanes)), Then: warps}}
		}
		g.emit(warps...)
		g.emit(&kir.SyncThreads{},
			&kir.If{Cond: kir.Lt(tid, kir.I(kir.WarpSize)), Then: second})
	}
	g.emit(&kir.SyncThreads{}, &kir.Let{Var: r, Value: kir.Ld(red, kir.I(0))}, &kir.SyncThreads{})
	return r
}

// sharedTreeReduce emits the shared-memory tree reduction of each thread's
// acc over a block of threads, leaving the result in red[0] and in the
// returned register of every thread.
func sharedTreeReduce(g *gen, op te.ReduceOp, red *kir.Buffer, tid, acc kir.Expr, threads int) *kir.Var {
	g.emit(&kir.Store{Buf: red, Index: tid, Value: acc}, &kir.SyncThreads{})
	for _, h := range halvings(threads) {
		g.emit(&kir.If{Cond: kir.Lt(tid, kir.I(h.live)), Then: []kir.Stmt{
			&kir.Store{Buf: red, Index: tid, Value: combine(op, kir.Ld(red, tid), kir.Ld(red, kir.Add(tid, kir.I(h.stride))))},
		}}, &kir.SyncThreads{})
	}
	r := kir.NewVar("red", acc.Type())
	g.emit(&kir.Let{Var: r, Value: kir.Ld(red, kir.I(0))}, &kir.SyncThreads{})
	return r
}

// halving is one step of a tree combine of partials 0..n-1: partial i
// takes in partial i + stride, for i < live.
type halving struct{ stride, live int }

// halvings returns the steps of a tree combine of n partials into partial
// 0, for any n ≥ 1: each step folds the upper ⌊n/2⌋ partials onto the
// lower ⌈n/2⌉ (stride ⌈n/2⌉), so that an odd count keeps its middle
// partial for the next step instead of dropping it. For a power of two
// these are the classic halvings n/2, n/4, …, 1.
func halvings(n int) []halving {
	var hs []halving
	for n > 1 {
		h := (n + 1) / 2
		hs = append(hs, halving{stride: h, live: n - h})
		n = h
	}
	return hs
}

// blockReduce computes a block per output element; the top-level
// reductions are shared among the block's threads.
func (l *lowerer) blockReduce(t *te.Tensor, reds []*te.Reduce, k *kir.Kernel, body *[]kir.Stmt) {
	threads := min(l.opts.BlockSize, max(32, te.NextPow2(maxExtent(reds))))
	if l.threads > 0 {
		threads = l.threads
	}
	n := t.NumElements()
	k.Block = threads
	k.Grid = kir.Grid{Blocks: max(1, n)}
	buf := l.bufs[t]
	shared := map[te.DType]*kir.Buffer{}
	tid := kir.NewVar("tid", te.I32)
	o := kir.NewVar("o", te.I32)
	g := l.gen(nil)
	argShared := func(name string, dt te.DType) *kir.Buffer {
		for _, b := range k.Shared {
			if b.Name == name {
				return b
			}
		}
		b := &kir.Buffer{Name: name, Space: kir.Shared, DType: dt, Shape: []int{threads}}
		k.Shared = append(k.Shared, b)
		return b
	}
	inner := g.into(func() {
		bind(g, t.Axes, o)
		for _, r := range reds {
			if r.Op.IsArg() {
				g.done[r] = argBlockReduce(g, r, tid, threads, argShared)
				continue
			}
			rt := te.TypeOf(r)
			red := shared[rt]
			if red == nil {
				red = &kir.Buffer{Name: "red_" + rt.String(), Space: kir.Shared, DType: rt, Shape: []int{threads}}
				shared[rt] = red
				k.Shared = append(k.Shared, red)
			}
			acc := kir.NewVar("acc", rt)
			g.emit(&kir.Let{Var: acc, Value: identity(r.Op, rt)})
			j := kir.NewVar("r", te.I32)
			test, forget := g.zeroTest(r)
			if n, moving := te.ReduceVectorElems(r); n > 0 && l.blockReduceVector(g, t.Name, r, n, moving, acc, k, test) {
				forget()
			} else {
				part := g.into(func() {
					bind(g, r.Axes, j)
					g.addTerm(r, acc, rt, test)
				})
				forget()
				g.emit(&kir.For{Var: j, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(extent(r)), Body: part})
			}
			g.done[r] = treeReduce(g, r.Op, red, tid, acc, threads)
			for _, a := range r.Axes {
				delete(g.env, a)
			}
		}
		epi := g.into(func() {
			g.emit(&kir.Store{Buf: buf, Index: o, Value: convert(g.expr(t.Body), buf.ValueType())})
		})
		g.emit(&kir.If{Cond: kir.Eq(tid, kir.I(0)), Then: epi})
	})
	*body = append(*body,
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.For{Var: o, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(n), Body: inner})
}

// blockReduceVector emits the block-stride loop of a thread's share of
// reduction r (of the stage name) into acc a vector of n terms at a time
// (te.ReduceVectorElems): each moving load read with 16-byte loads into
// a local array, which it adds to k, and the n terms combined in order.
// It reports false, emitting nothing, where a moving load does not lower
// to a plain load, and where the narrowest moving load is not a half (a
// vector of 8 terms): an f32 row keeps the scalar loop's order of terms,
// whose 4-byte loads coalesce into whole lines already, and whose
// reordering moves ill-conditioned sums (EfficientNet's pools at TF32)
// further from the reference than the precision checks allow. Where
// test is set (zeroTest: a softmax's sum up to a decode step's position),
// a vector is read where the test holds at one of its terms, and each
// term is added where it holds at that term.
func (l *lowerer) blockReduceVector(g *gen, name string, r *te.Reduce, n int, moving []*te.Load, acc *kir.Var, k *kir.Kernel, test te.Expr) bool {
	if n != 8 {
		return false
	}
	last := r.Axes[len(r.Axes)-1]
	jv, j := kir.NewVar("rv", te.I32), kir.NewVar("r", te.I32)
	var vecs []*kir.Buffer
	local := map[*te.Load]*te.Tensor{}
	once := map[*te.Load]*te.Tensor{} // the loads that do not move, read once
	ok := true
	var live kir.Expr // where test holds at one of the vector's terms
	aq := make([]*kir.Var, n)
	lets := g.into(func() {
		g.emit(&kir.Let{Var: j, Value: kir.Mul(jv, kir.I(n))})
		bind(g, r.Axes, j)
		base := g.env[last]
		for q := range aq {
			aq[q] = kir.NewVar(last.Name, te.I32)
			g.emit(&kir.Let{Var: aq[q], Value: addIndex(base, q)})
			if test == nil {
				continue
			}
			g.env[last] = aq[q]
			if x := convert(g.expr(test), te.Bool); live == nil {
				live = x
			} else {
				live = kir.Bin(te.Or, live, x)
			}
		}
		g.env[last] = base
	})
	part := g.into(func() {
		base := g.env[last]
		for i, ld := range moving {
			if same := sameVector(moving[:i], ld, nil); same != nil {
				local[ld] = local[same]
				continue
			}
			kl, isLoad := g.expr(ld).(*kir.Load)
			if !isLoad || n%kir.VecLen(kl.Buf.DType) != 0 {
				ok = false
				return
			}
			v := &kir.Buffer{Name: fmt.Sprintf("%s.%s.v%d", name, last.Name, len(k.Locals)+i), Space: kir.Local, DType: kl.Buf.DType, Shape: []int{n}}
			vecs = append(vecs, v)
			for q, vl := 0, kir.VecLen(kl.Buf.DType); q < n; q += vl {
				g.emit(&kir.VecCopy{Dst: v, DstIndex: kir.I(q), Src: kl.Buf, SrcIndex: addIndex(kl.Index, q)})
			}
			local[ld] = &te.Tensor{Name: v.Name, Kind: te.Compute, DType: ld.Tensor.DType, Shape: []int{n}}
			g.bufs[local[ld]] = v
		}
		inv := invariantLoads(r.Body, last, local)
		for i, ld := range inv {
			if same := sameVector(inv[:i], ld, nil); same != nil {
				once[ld] = once[same]
				continue
			}
			s := &kir.Buffer{Name: fmt.Sprintf("%s.%s.s%d", name, last.Name, len(k.Locals)+len(vecs)), Space: kir.Local, DType: ld.Tensor.DType, Shape: []int{1}}
			vecs = append(vecs, s)
			g.emit(&kir.Store{Buf: s, Index: kir.I(0), Value: convert(g.expr(ld), s.ValueType())})
			once[ld] = &te.Tensor{Name: s.Name, Kind: te.Compute, DType: ld.Tensor.DType, Shape: []int{1}}
			g.bufs[once[ld]] = s
		}
		rt := acc.T
		for q := range n {
			g.env[last] = aq[q]
			add := g.into(func() {
				g.emit(&kir.Assign{Var: acc, Value: combine(r.Op, acc, convert(g.expr(readLocal(readLocal(r.Body, once, te.Const(0)), local, te.Const(q))), rt))})
			})
			if test != nil {
				add = []kir.Stmt{&kir.If{Cond: convert(g.expr(test), te.Bool), Then: add}}
			}
			g.emit(add...)
		}
		g.env[last] = base
	})
	if live != nil {
		part = []kir.Stmt{&kir.If{Cond: live, Then: part}}
	}
	part = append(lets, part...)
	for _, lt := range local {
		delete(g.bufs, lt)
	}
	for _, lt := range once {
		delete(g.bufs, lt)
	}
	if !ok {
		return false
	}
	k.Locals = append(k.Locals, vecs...)
	g.emit(&kir.For{Var: jv, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(extent(r) / n), Body: part})
	return true
}

// usesAxes returns which of axes e depends on.
func usesAxes(e te.Expr, axes []*te.Var) map[*te.Var]bool {
	used := te.UsedVars(e)
	out := map[*te.Var]bool{}
	for _, a := range axes {
		if used[a] {
			out[a] = true
		}
	}
	return out
}

func product(axes []*te.Var) int {
	n := 1
	for _, a := range axes {
		n *= a.Extent
	}
	return n
}

// Tile sizes of contractions.
const (
	tileMN = 16
	tileK  = 16
)

// contraction lowers t = f(sum[k](X * Y)) as a tiled contraction when X and
// Y each miss output axes, and reports whether it did. The sum may lie
// under selects on the output indexes (a masked contraction, see
// contraction.MaskedReduce): a tile whose mask is false throughout skips its
// products (tileMask).
func (l *lowerer) contraction(t *te.Tensor, r *te.Reduce, k *kir.Kernel, body *[]kir.Stmt) bool {
	if r.Op != te.Sum || te.TypeOf(r) != te.F32 || te.HasReduce(r.Body) {
		return false
	}
	mr, guards, masked, ok := contraction.MaskedReduce(t.Body)
	if !ok || mr != r || masked && !te.LoadsInBounds(r.Body) {
		return false
	}
	X, Y, ok := contraction.Factors(r)
	if !ok {
		return false
	}
	// Every reduction of the body is r itself (no others in selects).
	others := false
	te.Walk(t.Body, func(x te.Expr) bool {
		if rr, ok := x.(*te.Reduce); ok && rr != r {
			others = true
		}
		return x != te.Expr(r)
	})
	if others {
		return false
	}
	ux, uy := usesAxes(X, t.Axes), usesAxes(Y, t.Axes)
	var batch, ms, ns []*te.Var
	for _, a := range t.Axes {
		switch {
		case ux[a] && !uy[a]:
			ms = append(ms, a)
		case uy[a] && !ux[a]:
			ns = append(ns, a)
		default:
			batch = append(batch, a)
		}
	}
	M, N, K, NB := product(ms), product(ns), extent(r), product(batch)
	mask := contraction.MaskOf(contraction.Dims{M: M, N: N, Batch: NB, MAxes: ms, NAxes: ns, BatchAxes: batch, Guards: guards})
	if in, blk, ok := l.tensorCoreType(X, Y, M, N, K); ok {
		l.mmaContraction(t, r, X, Y, in, ms, ns, batch, M, N, K, NB, blk, mask, k, body)
		return true
	}
	if l.tm == 0 && (M < 8 || N < 8 || K < 4) {
		return false
	}
	tm, tn, tk := min(tileMN, te.NextPow2(M)), min(tileMN, te.NextPow2(N)), min(tileK, te.NextPow2(K))
	rm, rn := 1, 1
	switch s := l.schedule(t); {
	case l.tm > 0:
		tm, tn, rm, rn = l.tm, l.tn, max(l.rm, 1), max(l.rn, 1)
		if l.tk > 0 {
			tk = l.tk
		}
	case s != nil && s.Kind == schedule.Contraction && s.TileM > 0 && s.TileN > 0:
		tm, tn, tk = s.TileM, s.TileN, s.TileK // the tile of a kernel of its own (partition's Unfused)
	}
	// The block's tile is TM×TN outputs; thread (ti, tj) of its tm×tn grid
	// computes rows ti + i·tm and columns tj + j·tn of it (i < rm, j < rn),
	// so that neighbouring threads read neighbouring shared elements.
	TM, TN := tm*rm, tn*rn
	mt, nt := te.CeilDiv(M, TM), te.CeilDiv(N, TN)
	threads := tm * tn
	k.Block = threads
	k.Grid = kir.Grid{Blocks: NB * mt * nt}
	xs := &kir.Buffer{Name: "xs", Space: kir.Shared, DType: te.F32, Shape: []int{TM, tk}}
	ys := &kir.Buffer{Name: "ys", Space: kir.Shared, DType: te.F32, Shape: []int{tk, TN}}
	k.Shared = []*kir.Buffer{xs, ys}
	buf := l.bufs[t]

	tid := kir.NewVar("tid", te.I32)
	tile := kir.NewVar("tile", te.I32)
	g := l.gen(nil)
	inner := g.into(func() {
		bt, mi, ni := kir.NewVar("b", te.I32), kir.NewVar("mt", te.I32), kir.NewVar("nt", te.I32)
		g.emit(
			&kir.Let{Var: bt, Value: kir.Div(tile, kir.I(mt*nt))},
			&kir.Let{Var: mi, Value: digit(tile, nt, mt)},
			&kir.Let{Var: ni, Value: digit(tile, 1, nt)},
		)
		bind(g, batch, bt)
		ti, tj := kir.NewVar("ti", te.I32), kir.NewVar("tj", te.I32)
		g.emit(
			&kir.Let{Var: ti, Value: kir.Div(tid, kir.I(tn))},
			&kir.Let{Var: tj, Value: kir.Mod(tid, kir.I(tn))},
		)
		acc := make([][]*kir.Var, rm)
		for i := range acc {
			acc[i] = make([]*kir.Var, rn)
			for j := range acc[i] {
				acc[i][j] = kir.NewVar("acc", te.F32)
				g.emit(&kir.Let{Var: acc[i][j], Value: kir.F(0)})
			}
		}
		k0 := kir.NewVar("k0", te.I32)
		kloop := g.into(func() {
			// Stage X[m, k] for the tile's rows.
			e := kir.NewVar("e", te.I32)
			g.emit(&kir.For{Var: e, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(TM * tk), Body: g.into(func() {
				m, kk := kir.NewVar("m", te.I32), kir.NewVar("kk", te.I32)
				g.emit(
					&kir.Let{Var: m, Value: kir.Add(kir.Mul(mi, kir.I(TM)), kir.Div(e, kir.I(tk)))},
					&kir.Let{Var: kk, Value: kir.Add(k0, kir.Mod(e, kir.I(tk)))},
				)
				guarded := g.into(func() {
					bind(g, ms, m)
					bind(g, r.Axes, kk)
					g.emit(&kir.Store{Buf: xs, Index: e, Value: convert(g.expr(X), te.F32)})
				})
				g.emit(guard(guarded, []kir.Stmt{&kir.Store{Buf: xs, Index: e, Value: kir.F(0)}},
					bound{m, M, M%TM != 0}, bound{kk, K, K%tk != 0})...)
			})})
			// Stage Y[k, n] for the tile's columns.
			e2 := kir.NewVar("e", te.I32)
			g.emit(&kir.For{Var: e2, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(tk * TN), Body: g.into(func() {
				n, kk := kir.NewVar("n", te.I32), kir.NewVar("kk", te.I32)
				g.emit(
					&kir.Let{Var: kk, Value: kir.Add(k0, kir.Div(e2, kir.I(TN)))},
					&kir.Let{Var: n, Value: kir.Add(kir.Mul(ni, kir.I(TN)), kir.Mod(e2, kir.I(TN)))},
				)
				guarded := g.into(func() {
					bind(g, ns, n)
					bind(g, r.Axes, kk)
					g.emit(&kir.Store{Buf: ys, Index: e2, Value: convert(g.expr(Y), te.F32)})
				})
				g.emit(guard(guarded, []kir.Stmt{&kir.Store{Buf: ys, Index: e2, Value: kir.F(0)}},
					bound{kk, K, K%tk != 0}, bound{n, N, N%TN != 0})...)
			})})
			g.emit(&kir.SyncThreads{})
			kk := kir.NewVar("kk", te.I32)
			var step []kir.Stmt
			a := make([]kir.Expr, rm)
			for i := range rm {
				row := kir.Expr(ti)
				if i > 0 {
					row = kir.Add(ti, kir.I(i*tm))
				}
				a[i] = kir.Ld(xs, kir.Add(kir.Mul(row, kir.I(tk)), kk))
				if rn > 1 { // read once, used rn times
					v := kir.NewVar("a", te.F32)
					step = append(step, &kir.Let{Var: v, Value: a[i]})
					a[i] = v
				}
			}
			for j := range rn {
				col := kir.Expr(tj)
				if j > 0 {
					col = kir.Add(tj, kir.I(j*tn))
				}
				var bv kir.Expr = kir.Ld(ys, kir.Add(kir.Mul(kk, kir.I(TN)), col))
				if rm > 1 {
					v := kir.NewVar("b", te.F32)
					step = append(step, &kir.Let{Var: v, Value: bv})
					bv = v
				}
				for i := range rm {
					step = append(step, &kir.Assign{Var: acc[i][j], Value: kir.Add(acc[i][j], kir.Mul(a[i], bv))})
				}
			}
			g.emit(&kir.For{Var: kk, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(tk), Step: 1, Body: step})
			g.emit(&kir.SyncThreads{})
		})
		products := []kir.Stmt{&kir.For{Var: k0, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(K), Step: tk, Body: kloop}}
		mLo, nLo := kir.Mul(mi, kir.I(TM)), kir.Mul(ni, kir.I(TN))
		mHi, nHi := kir.Add(mLo, kir.I(TM-1)), kir.Add(nLo, kir.I(TN-1))
		if M%TM != 0 {
			mHi = kir.Bin(te.Min, mHi, kir.I(M-1))
		}
		if N%TN != 0 {
			nHi = kir.Bin(te.Min, nHi, kir.I(N-1))
		}
		if live := tileMask(g, mask, mLo, mHi, nLo, nHi, bt); live != nil {
			// The test is the same for every thread of the block, so the
			// barriers of the k loop stay block-uniform.
			products = []kir.Stmt{&kir.If{Cond: live, Then: products}}
		}
		g.emit(products...)
		for _, a := range r.Axes {
			delete(g.env, a)
		}
		for i := range rm {
			for j := range rn {
				g.done[r] = acc[i][j]
				m, n := kir.NewVar("m", te.I32), kir.NewVar("n", te.I32)
				row, col := kir.Expr(ti), kir.Expr(tj)
				if i > 0 {
					row = kir.Add(ti, kir.I(i*tm))
				}
				if j > 0 {
					col = kir.Add(tj, kir.I(j*tn))
				}
				g.emit(
					&kir.Let{Var: m, Value: kir.Add(kir.Mul(mi, kir.I(TM)), row)},
					&kir.Let{Var: n, Value: kir.Add(kir.Mul(ni, kir.I(TN)), col)},
				)
				epi := g.into(func() {
					bind(g, ms, m)
					bind(g, ns, n)
					g.emit(&kir.Store{Buf: buf, Index: g.flat(t.Shape, axisIndexes(t)), Value: convert(g.expr(t.Body), buf.ValueType())})
				})
				g.emit(guard(epi, nil, bound{m, M, M%TM != 0}, bound{n, N, N%TN != 0})...)
			}
		}
	})
	*body = append(*body,
		&kir.Let{Var: tid, Value: kir.Tid()},
		&kir.For{Var: tile, Kind: kir.GridStride, Lo: kir.I(0), Hi: kir.I(NB * mt * nt), Body: inner})
	return true
}

// bound is the condition v < n of a tile's tail, needed only where the tiles
// do not divide the extent.
type bound struct {
	v      *kir.Var
	n      int
	needed bool
}

// guard returns then under an If of the needed bounds (with els for the
// points outside them), or then alone if no bound is needed.
func guard(then, els []kir.Stmt, bs ...bound) []kir.Stmt {
	var c kir.Expr
	for _, b := range bs {
		if !b.needed {
			continue
		}
		lt := kir.Lt(b.v, kir.I(b.n))
		if c == nil {
			c = lt
		} else {
			c = kir.And(c, lt)
		}
	}
	if c == nil {
		return then
	}
	return []kir.Stmt{&kir.If{Cond: c, Then: then, Else: els}}
}

// digit returns x / stride % n, leaving out divisions by 1 and a modulo
// by 1.
func digit(x kir.Expr, stride, n int) kir.Expr {
	if n == 1 {
		return kir.I(0)
	}
	if stride > 1 {
		x = kir.Div(x, kir.I(stride))
	}
	return kir.Mod(x, kir.I(n))
}
