package cost

// Estimate is a kernel's (or a plan's) predicted time, in seconds, and its
// parts: launches, grid syncs and the stages' own times.
type Estimate struct {
	Launch, Sync, Stages float64
	Bytes                int64 // predicted global traffic
	// DRAM is the predicted traffic to DRAM: each region a stage touches
	// once per kernel, and again when it has left L2 (its reuse distance
	// exceeds L2) — weights streamed once, activations hitting in L2.
	DRAM  int64
	FLOPs int64
}

// Total returns the predicted time.
func (e Estimate) Total() float64 { return e.Launch + e.Sync + e.Stages }

// StageEstimate is the prediction for one stage of a kernel: its own time
// at the kernel's occupancy (the stages of a grid epoch may overlap, so a
// kernel's time is not their sum), the bytes it moves from DRAM, and what
// bounds its time (StageBound).
type StageEstimate struct {
	Time  float64
	DRAM  int64
	Bound Bound
}
