package partition

import (
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
