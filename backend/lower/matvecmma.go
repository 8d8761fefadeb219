package lower

import (
	"fmt"

	"tec/backend/kir"
	"tec/contraction"
	"tec/schedule"
	"tec/te"
)

// A matrix-vector tile on tensor cores (schedule.MatVec.MMA) computes its
// rows, 2 to 16 of them zero-padded to an MMA's 16, by eight columns a
// warp with mma.m16n8k16: the rows are A, the columns B. Warp w of the
// block takes column group w mod G of the tile (G = TileF/8) and every
// S-th step of 32 of the k staged (S = warps/G), from step w/G. In a step
// lane (g, t) (groupID, threadID_in_group) loads 16 bytes of its column g,
// k from 8t, which are its B fragments of the step's two MMAs (elements
// 0-3 the first's, 4-7 the second's: schedule.MMAPhysK permutes k within
// the step so that they are), and reads its row g's eight staged
// elements from there, 16 bytes of shared memory, which are its A
// fragments (row g+8's too, where there are more than 8 rows, else
// zeros). A warp issues
// the loads of InFlight steps before it computes any. After the chunks,
// each warp's accumulators (row g, columns 2t and 2t+1; row g+8 in the
// other two) go to red, by the warp's k share, and the tile's first
// threads add the shares of their column in order, leaving the column's
// sums where the CUDA-core tiles leave theirs (red[m·threads + col]):
// the epilogue is theirs.

// mmaTile is a tensor-core matrix-vector tile's place in its block: the
// lane's groupID and threadID_in_group, the warp's column group and k
// share, and the lane's registers: its accumulators, a vector of its
// column for each step of a round in flight, and, for the step it
// computes, its rows' staged vectors and its A fragments of the step's
// two MMAs (reused by the round's steps and by the parts of the wide
// factor, as the registers are).
type mmaTile struct {
	in             te.DType // the operands' type
	gq, tq, cg, ks *kir.Var
	groups, shares int // column groups a tile, k shares a group
	*mmaRegs
}

// mmaRegs are a tensor-core tile's local arrays.
type mmaRegs struct {
	acc     *kir.Buffer
	w       []*kir.Buffer
	rows, a [2]*kir.Buffer // rows g and g+8 (nil past the tile's rows); A of MMA 0 and 1
}

// newMMATile emits the place of the thread tid in a tensor-core tile of
// tileF columns, rows rows and inFlight steps a round, and its zeroed
// accumulators, and declares its registers in tmp.
func newMMATile(g *gen, tmp *kir.Kernel, tid kir.Expr, in te.DType, tileF, rows, inFlight, threads int) *mmaTile {
	warps := threads / kir.WarpSize
	mt := &mmaTile{
		in: in, groups: tileF / schedule.MMAColumns,
		gq: kir.NewVar("gq", te.I32), tq: kir.NewVar("tq", te.I32), cg: kir.NewVar("cg", te.I32), ks: kir.NewVar("ks", te.I32),
	}
	mt.shares = warps / mt.groups
	mt.mmaRegs = newMMARegs(in, rows > 8, max(inFlight, 1))
	tmp.Locals = append(tmp.Locals, mt.acc)
	tmp.Locals = append(tmp.Locals, mt.w...)
	for h := range 2 {
		if mt.rows[h] != nil {
			tmp.Locals = append(tmp.Locals, mt.rows[h])
		}
		tmp.Locals = append(tmp.Locals, mt.a[h])
	}
	warp, lane := kir.Div(tid, kir.I(kir.WarpSize)), kir.Mod(tid, kir.I(kir.WarpSize))
	g.emit(
		&kir.Let{Var: mt.gq, Value: kir.Div(lane, kir.I(4))},
		&kir.Let{Var: mt.tq, Value: kir.Mod(lane, kir.I(4))},
		&kir.Let{Var: mt.cg, Value: kir.Mod(warp, kir.I(mt.groups))},
		&kir.Let{Var: mt.ks, Value: kir.Div(warp, kir.I(mt.groups))},
	)
	for e := range mt.acc.Shape[0] {
		g.emit(&kir.Store{Buf: mt.acc, Index: kir.I(e), Value: kir.F(0)})
	}
	return mt
}

// newMMARegs returns the local arrays of a tile of operands of type in,
// with rows past 8 where twoRows is set and inFlight steps a round.
func newMMARegs(in te.DType, twoRows bool, inFlight int) *mmaRegs {
	local := func(name string, dt te.DType, n int) *kir.Buffer {
		return &kir.Buffer{Name: name, Space: kir.Local, DType: dt, Shape: []int{n}}
	}
	r := &mmaRegs{acc: local("acc.mma", te.F32, kir.FragLen(kir.M16N8K16, kir.OperandC))}
	for q := range inFlight {
		r.w = append(r.w, local(fmt.Sprintf("w.mma%d", q), in, 8))
	}
	r.rows[0] = local("xs.mma", in, 8)
	if twoRows {
		r.rows[1] = local("xs.mma8", in, 8)
	}
	for s := range r.a {
		r.a[s] = local(fmt.Sprintf("a.mma%d", s), in, kir.FragLen(kir.M16N8K16, kir.OperandA))
	}
	return r
}

// mmaOperandType returns the type of a tensor-core matrix-vector tile's
// operands: that of the wide factor's plain loads (every part's, the
// planner checked, is the narrow factor's rounding type).
func mmaOperandType(F te.Expr, parts []schedule.Part) (te.DType, bool) {
	if len(parts) > 0 {
		F = parts[0].F
	}
	ld, ok := F.(*te.Load)
	if !ok || ld.Tensor.DType != te.F16 && ld.Tensor.DType != te.BF16 {
		return 0, false
	}
	return ld.Tensor.DType, true
}

// sumMMA emits a tensor-core tile's products over the chunk of K staged
// at c0 (staged of it) with the wide factor read as f, a plain load: the
// warp's steps in rounds of c.inFlight, each round's loads of f first,
// then for each step the A fragments from the staged rows and two MMAs.
// It reports false, emitting nothing, where f does not lower to a load.
func (l *lowerer) sumMMA(g *gen, d contraction.Dims, c entryCtx, f te.Expr, staged int, c0 kir.Expr) bool {
	mt, r := c.mma, d.Reduce
	per := staged / schedule.MMAStepK / mt.shares
	u := max(c.inFlight, 1)
	if per == 0 || per%u != 0 {
		return false
	}
	col := kir.NewVar("f", te.I32)
	g.emit(&kir.Let{Var: col, Value: kir.Add(kir.Mul(c.nf, kir.I(c.tileF)), kir.Add(kir.Mul(mt.cg, kir.I(schedule.MMAColumns)), mt.gq))})
	i := kir.NewVar("i", te.I32)
	var lets, loads, sums []kir.Stmt
	ok := u <= len(mt.w)
	for q := 0; q < u && ok; q++ {
		// The lane's k in the chunk: step ks + (i·u + q)·S, from 8t.
		kl := kir.NewVar("kl", te.I32)
		step := kir.Add(mt.ks, kir.Mul(kir.Add(kir.Mul(i, kir.I(u)), kir.I(q)), kir.I(mt.shares)))
		lets = append(lets, &kir.Let{Var: kl, Value: kir.Add(kir.Mul(step, kir.I(schedule.MMAStepK)), kir.Mul(mt.tq, kir.I(8)))})
		w := mt.w[q]
		loads = append(loads, g.into(func() {
			bind(g, r.Axes, addOffset(c0, kl))
			bind(g, c.fAxes, col)
			ld, isLoad := g.expr(f).(*kir.Load)
			if ok = isLoad && ld.Buf.DType == mt.in; ok {
				g.emit(&kir.VecCopy{Dst: w, DstIndex: kir.I(0), Src: ld.Buf, SrcIndex: ld.Index})
			}
		})...)
		sums = append(sums, g.into(func() { matVecMMAStep(g, c, w, kl, staged) })...)
	}
	for _, a := range append(append([]*te.Var{}, r.Axes...), c.fAxes...) {
		delete(g.env, a)
	}
	if !ok {
		return false
	}
	body := append(append(lets, loads...), sums...)
	g.emit(&kir.For{Var: i, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(per / u), Step: 1, Body: body})
	return true
}

// matVecMMAStep emits one step of a tensor-core tile: the lane's rows g and
// g+8 at kl read from the staged rows, one 16-byte read each (zeros past
// the tile's rows), their A fragments for the step's two MMAs, and the
// MMAs with B from w.
func matVecMMAStep(g *gen, c entryCtx, w *kir.Buffer, kl kir.Expr, staged int) {
	mt := c.mma
	halves := mt.rows
	for h, x := range halves {
		if x == nil {
			continue
		}
		row := kir.Add(mt.gq, kir.I(8*h))
		read := []kir.Stmt{&kir.VecCopy{Dst: x, DstIndex: kir.I(0), Src: c.xs, SrcIndex: c.xsAt(row, kl, staged)}}
		if c.rows >= 8*(h+1) {
			g.emit(read...)
			continue
		}
		// Rows past the tile's are zeros.
		for e := range 8 {
			g.emit(&kir.Store{Buf: x, Index: kir.I(e), Value: kir.F(0)})
		}
		g.emit(&kir.If{Cond: kir.Lt(row, kir.I(c.rows)), Then: read})
	}
	for s := range 2 {
		a := mt.a[s]
		for e := range kir.FragLen(kir.M16N8K16, kir.OperandA) {
			// The element's row and logical k at lane 0 (g = t = 0): the
			// lane's are g and 2t more.
			row, logical := kir.FragElem(kir.M16N8K16, mt.in, kir.OperandA, 0, e)
			var v kir.Expr = kir.F(0)
			if x := halves[row/8]; x != nil {
				v = kir.Ld(x, kir.I(schedule.MMAPhysK(s, 0, logical)))
			}
			g.emit(&kir.Store{Buf: a, Index: kir.I(e), Value: v})
		}
		frag := kir.Frag{Buf: mt.acc}
		g.emit(&kir.MMA{Shape: kir.M16N8K16, In: mt.in, D: frag, A: kir.Frag{Buf: a}, B: kir.Frag{Buf: w, Off: 4 * s}, C: frag})
	}
}

// mmaPartialStride returns the words between a tensor-core tile's
// partial sums of consecutive columns in red (combineMMA): at least rows,
// and 4 modulo 16, so that a warp's stores of its accumulators (rows g,
// columns 2t and 2t+1) fall in distinct banks, and the reads of a row by
// the tile's first threads, a column each, too.
func mmaPartialStride(rows int) int {
	r := 4
	for r < rows {
		r += 16
	}
	return r
}

// combineMMA leaves each column's sums of a tensor-core tile in
// red[m·threads + col], where the CUDA-core tiles leave theirs: each
// lane's accumulators (row g, columns 2t and 2t+1 of its warp's group;
// row g+8 in the other two) go to red[(ks·TileF + column)·R + m], R =
// mmaPartialStride; after a barrier, the tile's first TileF threads add
// their column's shares, in order, and after another, store the sums.
func combineMMA(g *gen, c entryCtx, threads int) {
	mt := c.mma
	stride := mmaPartialStride(c.rows)
	for e := range mt.acc.Shape[0] {
		half := e / 2
		if 8*half >= c.rows {
			continue
		}
		row := kir.Add(mt.gq, kir.I(8*half))
		colOf := kir.Add(kir.Mul(mt.cg, kir.I(schedule.MMAColumns)), kir.Add(kir.Mul(mt.tq, kir.I(2)), kir.I(e%2)))
		at := kir.Add(kir.Mul(kir.Add(kir.Mul(mt.ks, kir.I(c.tileF)), colOf), kir.I(stride)), row)
		st := []kir.Stmt{&kir.Store{Buf: c.red, Index: at, Value: kir.Ld(mt.acc, kir.I(e))}}
		if c.rows < 8*(half+1) {
			st = []kir.Stmt{&kir.If{Cond: kir.Lt(row, kir.I(c.rows)), Then: st}}
		}
		g.emit(st...)
	}
	g.emit(&kir.SyncThreads{})
	owner := kir.Lt(c.tid, kir.I(c.tileF))
	sums := make([]*kir.Var, c.rows)
	var add, store []kir.Stmt
	for m := range sums {
		sums[m] = kir.NewVar("sum", te.F32)
		g.emit(&kir.Let{Var: sums[m], Value: kir.F(0)})
		for k := range mt.shares {
			at := kir.Add(kir.Mul(kir.Add(kir.I(k*c.tileF), c.tid), kir.I(stride)), kir.I(m))
			add = append(add, &kir.Assign{Var: sums[m], Value: kir.Add(sums[m], kir.Ld(c.red, at))})
		}
		store = append(store, &kir.Store{Buf: c.red, Index: kir.Add(kir.I(m*threads), c.tid), Value: sums[m]})
	}
	// The sums overwrite other columns' shares: the second barrier waits
	// for every column's reads of them.
	g.emit(&kir.If{Cond: owner, Then: add}, &kir.SyncThreads{}, &kir.If{Cond: owner, Then: store})
}
