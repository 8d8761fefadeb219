package partition

import (
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
// block (cost.RecomputePays): nu must be a matrix-vector stage (whose
// tiles stage the recomputed rows once each), and each is scheduled as
// Partition schedules it in a fused kernel.
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
	var rs []cost.Stage
	for _, r := range removed {
		sr, ok := fusedSchedule(r, g, threads)
		if !ok {
			return false
		}
		rs = append(rs, cost.Stage(sr))
	}
	return cost.RecomputePays(g, cost.Stage(sn), cost.Stage(so), rs, cost.DRAMBytes(old, cost.Stage(so)))
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
