package cost

import (
	"tec/contraction"
	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

// Stage is what the cost model reads of one stage: its schedule, the
// decisions, and its price, the work they make.
type Stage struct {
	*schedule.Schedule
	*Price
}

// RecomputePays reports whether nu, a stage that recomputes the removed
// producers of the stage old it replaces, is predicted faster on g than
// old, those producers and the grid sync before old that nu no longer
// needs. Each is priced alone (Alone), as the plan prices stages: nu and
// old moving the dram bytes of old's from DRAM (DRAMBytes: the weights
// read once), each producer all it requests.
func RecomputePays(g gpu.Model, nu, old Stage, removed []Stage, dram int64) bool {
	after := Alone(g, nu.Schedule, nu.Price, dram)
	before := Alone(g, old.Schedule, old.Price, dram) + g.GridSyncCost
	for _, r := range removed {
		before += Alone(g, r.Schedule, r.Price, r.Bytes)
	}
	return after < before
}

// DRAMBytes returns what stage s of tensor t moves from DRAM when the
// activations it reads hit in L2: its output, and its wide factor's bytes
// if it is a matrix-vector stage (the weights, read once); else all it
// requests.
func DRAMBytes(t *te.Tensor, s Stage) int64 {
	d, ok := contraction.Of(t)
	if !ok || s.MatVec == nil {
		return s.Bytes
	}
	wide, cols := d.Y, d.N
	if s.MatVec.Wide == 0 {
		wide, cols = d.X, d.M
	}
	return int64(d.Batch)*int64(ElemSize(wide))*int64(d.K)*int64(cols) + t.Bytes()
}
