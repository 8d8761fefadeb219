package lower

import (
	"tec/backend/kir"
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
	vt := te.F32
	if te.TypeOf(r.Body) == te.I32 {
		vt = te.I32
	}
	a := &argBlock{cmp: te.Gt, n: extent(r), vt: vt, threads: threads, tid: tid,
		vals: shared("argv_"+vt.String(), vt), idxs: shared("argi", te.I32)}
	if r.Op == te.Argmin {
		a.cmp = te.Lt
	}
	x := argPair{v: kir.NewVar("best", vt), at: kir.NewVar("arg", te.I32)}
	g.emit(&kir.Let{Var: x.v, Value: &kir.Const{T: vt}}, &kir.Let{Var: x.at, Value: kir.I(a.n)})
	j := kir.NewVar("r", te.I32)
	part := g.into(func() {
		bind(g, r.Axes, j)
		v := kir.NewVar("v", vt)
		g.emit(&kir.Let{Var: v, Value: convert(g.expr(r.Body), vt)})
		// The first value that is not NaN, or a strictly better one (a
		// comparison with NaN is false).
		first := kir.And(kir.Ge(x.at, kir.I(a.n)), kir.Eq(v, v))
		better := kir.NewVar("better", te.Bool)
		g.emit(&kir.Let{Var: better, Value: kir.Bin(te.Or, first, kir.Bin(a.cmp, v, x.v))},
			&kir.If{Cond: better, Then: []kir.Stmt{&kir.Assign{Var: x.v, Value: v}, &kir.Assign{Var: x.at, Value: j}}})
	})
	g.emit(&kir.For{Var: j, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(a.n), Body: part})
	for _, ax := range r.Axes {
		delete(g.env, ax)
	}
	var res kir.Expr
	if threads >= kir.WarpSize {
		res = a.warps(g, x)
	} else {
		res = a.tree(g, x)
	}
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
// merges those. It returns the register of the block's best position.
func (a *argBlock) warps(g *gen, x argPair) kir.Expr {
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
		return x.at
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
	res := kir.NewVar("argres", te.I32)
	g.emit(&kir.SyncThreads{}, &kir.Let{Var: res, Value: kir.Ld(a.idxs, kir.I(0))}, &kir.SyncThreads{})
	return res
}

// tree merges the candidates of a block of fewer than WarpSize threads in
// shared memory, halving by halving (any count of threads), and returns the
// register of the block's best position.
func (a *argBlock) tree(g *gen, x argPair) kir.Expr {
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
	res := kir.NewVar("argres", te.I32)
	g.emit(&kir.Let{Var: res, Value: kir.Ld(a.idxs, kir.I(0))}, &kir.SyncThreads{})
	return res
}
