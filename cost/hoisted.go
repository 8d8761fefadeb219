package cost

import (
	"tec/contraction"
	"tec/schedule"
	"tec/te"
)

// Hoisted corrects p, the price of matrix-vector stage t (dims d, tiling
// mv, narrow factor x), for what its tiles do: each element of x is evaluated
// once per tile as its rows are staged (its distinct loads from L2, its
// arithmetic), not once per product as the general count has it, and
// the reductions nested in x are computed once per tile and row
// (HoistedReductions) and kept in shared memory.
func (p *Price) Hoisted(t *te.Tensor, d contraction.Dims, mv *schedule.MatVec, x te.Expr) {
	rows, wide := d.M, d.Y
	if mv.Wide == 0 {
		rows, wide = d.N, d.X
	}
	tiles, perElem := int64(d.Batch*mv.NT), ElementBytes(x)
	staged := tiles * int64(rows) * int64(d.K) // elements of x staged
	if one := int64(ElemSize(x)); perElem > one {
		p.Bytes += staged * (perElem - one)
	}
	hs := contraction.HoistedReductions(x)
	nested := map[*te.Reduce]bool{}
	var bytes, ops int64
	for _, h := range hs {
		nested[h] = true
		bytes += int64(contraction.Points(h.Axes)) * ElementBytes(h.Body)
		ops += Ops(h, map[*te.Reduce]bool{})
	}
	p.Bytes += tiles * int64(rows) * bytes
	// Per output: its epilogue, and a multiply-add and the wide factor's
	// arithmetic per k; per staged element, x's.
	epilogue := Ops(t.Body, map[*te.Reduce]bool{d.Reduce: true})
	perK := 2 + Ops(wide, map[*te.Reduce]bool{})
	p.FLOPs = int64(t.NumElements())*(epilogue+int64(d.K)*perK) + staged*Ops(x, nested) + tiles*int64(rows)*ops
}
