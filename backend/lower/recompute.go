package lower

import (
	"tec/backend/kir"
	"tec/contraction"
	"tec/te"
)

// A matrix-vector tile whose narrow factor holds reductions of its own
// (contraction.HoistedReductions: an RMSNorm's mean of squares recomputed in
// the projection after it, instead of stored by a stage and read after a
// grid sync) computes each of them once per row, before it stages the
// rows: the block's threads share each reduction, and thread 0 keeps the
// result in the shared array pro (reduction i of row m at i·rows + m),
// which the staging reads in place of the reduction.

// hoisted returns the reductions of the narrow factor a that a tile of rows
// rows computes in its prologue, and the shared array that holds them,
// declared in tmp; none and nil when a has none.
func hoisted(tmp *kir.Kernel, a te.Expr, rows int) ([]*te.Reduce, *kir.Buffer) {
	hs := contraction.HoistedReductions(a)
	if len(hs) == 0 {
		return nil, nil
	}
	pro := &kir.Buffer{Name: "pro", Space: kir.Shared, DType: te.F32, Shape: []int{len(hs) * rows}}
	tmp.Shared = append(tmp.Shared, pro)
	return hs, pro
}

// prologue emits the tile's computation of c.hoisted for every row of the
// batch entry bound in g, into c.pro, and the barrier after it. c.red, free
// until the tile combines its sums, holds the block's partials.
func (l *lowerer) prologue(g *gen, c entryCtx) {
	if len(c.hoisted) == 0 {
		return
	}
	for i, r := range c.hoisted {
		for m := range c.rows {
			bind(g, c.aAxes, kir.I(m))
			acc := kir.NewVar("acc", te.F32)
			g.emit(&kir.Let{Var: acc, Value: identity(r.Op, te.F32)})
			j := kir.NewVar("r", te.I32)
			test, forget := g.zeroTest(r)
			if n, moving := te.ReduceVectorElems(r); n > 0 && c.tmp != nil &&
				l.blockReduceVector(g, c.out.Name+".pro", r, n, moving, acc, c.tmp, test) {
				forget()
			} else {
				part := g.into(func() {
					bind(g, r.Axes, j)
					g.addTerm(r, acc, te.F32, test)
				})
				forget()
				g.emit(&kir.For{Var: j, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(extent(r)), Body: part})
			}
			v := treeReduce(g, r.Op, c.red, c.tid, acc, l.threads)
			g.emit(&kir.If{Cond: kir.Eq(c.tid, kir.I(0)), Then: []kir.Stmt{
				&kir.Store{Buf: c.pro, Index: kir.I(i*c.rows + m), Value: v}}})
			for _, a := range append(append([]*te.Var{}, r.Axes...), c.aAxes...) {
				delete(g.env, a)
			}
		}
	}
	g.emit(&kir.SyncThreads{})
}

// useHoisted makes g read c.hoisted from c.pro at row m while the rows are
// staged, and returns the function that forgets them.
func useHoisted(g *gen, c entryCtx, m kir.Expr) func() {
	for i, r := range c.hoisted {
		g.done[r] = kir.Ld(c.pro, addOffset(kir.I(i*c.rows), m))
	}
	return func() {
		for _, r := range c.hoisted {
			delete(g.done, r)
		}
	}
}
