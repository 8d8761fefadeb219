package partition

import (
	"slices"

	"tec/contraction"
	"tec/cost"
	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

// Recomputation instead of a grid sync (Souffle's redundant computation):
// transform.Recompute substitutes a cheap producer of a matrix-vector
// product into the product's narrow factor — SwiGLU's
// gate·sigmoid(gate)·up, or RMSNorm's x·rsqrt(ms + eps)·g with its mean of
// squares ms, a reduction that then lies nested in the product's own. A
// matrix-vector tile stages its rows once per tile, evaluating the factor,
// and computes such a nested reduction once per tile and row in a
// prologue (HoistedReductions, backend/lower), so each tile redoes the
// producer's work for its rows: the redundant loads hit in L2 and the
// arithmetic is a few operations per element. The stage the producer was,
// and the grid sync before its reader, are gone. RecomputePays prices the
// trade with the cost model that prices the plan.

// nestsReduce reports whether a reduction lies in r's body.
func nestsReduce(r *te.Reduce) bool {
	found := false
	te.Walk(r.Body, func(e te.Expr) bool {
		_, found = e.(*te.Reduce)
		return !found
	})
	return found
}

// priceHoisted corrects the prediction of matrix-vector stage t (dims d,
// narrow factor x) for what its tiles do: each element of x is evaluated
// once per tile as its rows are staged (its distinct loads from L2, its
// arithmetic), not once per product as the general count has it, and
// the reductions nested in x are computed once per tile and row
// (HoistedReductions) and kept in shared memory.
func (s stage) priceHoisted(t *te.Tensor, d contraction.Dims, x te.Expr) {
	mv := s.MatVec
	rows, wide := d.M, d.Y
	if mv.Wide == 0 {
		rows, wide = d.N, d.X
	}
	tiles, perElem := int64(d.Batch*mv.NT), cost.ElementBytes(x)
	staged := tiles * int64(rows) * int64(d.K) // elements of x staged
	if one := int64(cost.ElemSize(x)); perElem > one {
		s.Bytes += staged * (perElem - one)
	}
	hs := contraction.HoistedReductions(x)
	nested := map[*te.Reduce]bool{}
	var bytes, ops int64
	for _, h := range hs {
		nested[h] = true
		bytes += int64(product(h.Axes)) * cost.ElementBytes(h.Body)
		ops += cost.Ops(h, map[*te.Reduce]bool{})
	}
	s.Bytes += tiles * int64(rows) * bytes
	// Per output: its epilogue, and a multiply-add and the wide factor's
	// arithmetic per k; per staged element, x's.
	epilogue := cost.Ops(t.Body, map[*te.Reduce]bool{d.Reduce: true})
	perK := 2 + cost.Ops(wide, map[*te.Reduce]bool{})
	s.FLOPs = int64(t.NumElements())*(epilogue+int64(d.K)*perK) + staged*cost.Ops(x, nested) + tiles*int64(rows)*ops
	if len(hs) > 0 {
		s.SetArrays(append(slices.Clip(s.Arrays), schedule.Array{DType: te.F32, Len: len(hs) * rows})...)
	}
}

// RecomputePays reports whether consumer nu, stage old with the producers
// removed recomputed in it, is predicted faster on g with threads per
// block: nu must be a matrix-vector stage (whose tiles stage the
// recomputed rows once each), and its time, with the redundant loads from
// L2 and arithmetic of its tiles, must be below old's plus the removed
// producers' stages and the grid sync before old that no longer has
// anything to wait for. Both are priced as the plan prices stages: at
// their own occupancy on the whole GPU, the weights read from DRAM once.
func RecomputePays(g gpu.Model, threads int, old, nu *te.Tensor, removed []*te.Tensor) bool {
	if threads == 0 {
		threads = min(256, g.MaxThreadsPerBlock)
	}
	sn, ok := fusedSchedule(nu, g, threads)
	if !ok || sn.Kind != schedule.Contraction || sn.MatVec == nil || sn.TensorCores {
		return false
	}
	so, ok := fusedSchedule(old, g, threads)
	if !ok {
		return false
	}
	dram := dramBytes(old, so)
	after := cost.Alone(g, sn.Schedule, sn.Price, dram)
	before := cost.Alone(g, so.Schedule, so.Price, dram) + g.GridSyncCost
	for _, r := range removed {
		sr, ok := fusedSchedule(r, g, threads)
		if !ok {
			return false
		}
		before += cost.Alone(g, sr.Schedule, sr.Price, sr.Bytes)
	}
	return after < before
}

// fusedSchedule returns t's schedule in a fused kernel, as Partition makes
// it.
func fusedSchedule(t *te.Tensor, g gpu.Model, threads int) (stage, bool) {
	s, err := analytic(t, nil, g, threads)
	if err != nil {
		return stage{}, false
	}
	s.fusedTensorCores(t, threads, g)
	return s, true
}

// dramBytes returns what stage t moves from DRAM when the activations it
// reads hit in L2: its output, and its wide factor's bytes if it is a
// matrix-vector stage (the weights, read once); else all it requests.
func dramBytes(t *te.Tensor, s stage) int64 {
	d, ok := contraction.Of(t)
	if !ok || s.MatVec == nil {
		return s.Bytes
	}
	wide, cols := d.Y, d.N
	if s.MatVec.Wide == 0 {
		wide, cols = d.X, d.M
	}
	return int64(d.Batch)*int64(cost.ElemSize(wide))*int64(d.K)*int64(cols) + t.Bytes()
}
