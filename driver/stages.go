package driver

import "tec/partition"

// StagePrediction is the cost model's prediction of one stage of a plan
// (cost.StageEstimate): its time, the bytes it moves from DRAM, the term
// of the cost model that bounds it (cost.Bound: "DRAM", "L2", "tensor",
// "FP32 issue", "latency", "grid syncs", or "none (in an epilogue)"), and
// how its code moves its operands (schedule.LoadPath): the bytes of one
// load instruction and the loads a thread has in flight per round trip.
// tec build --report and tec explain --plan --json give it per kernel;
// the stage clock's measurements (docs/gpu.md) are set beside it.
type StagePrediction struct {
	Stage         string  `json:"stage"`
	PredictedUS   float64 `json:"predicted_us"`
	DRAMBytes     int64   `json:"dram_bytes"`
	Bound         string  `json:"bound"`
	LoadBytes     int     `json:"load_bytes,omitempty"`
	LoadsInFlight int     `json:"loads_in_flight,omitempty"`
}

// StagePredictions returns the predictions of kernel k's stages in plan
// pl, in the plan's order; none where the plan has none (-O0 to -O2).
func StagePredictions(pl *partition.Plan, k *partition.Kernel) []StagePrediction {
	var out []StagePrediction
	for j, sc := range k.StageCosts {
		t := k.Stages[j]
		load := pl.Schedules[t].Load
		out = append(out, StagePrediction{Stage: t.Name, PredictedUS: sc.Time * 1e6, DRAMBytes: sc.DRAM,
			Bound: sc.Bound.String(), LoadBytes: load.Width, LoadsInFlight: load.InFlight})
	}
	return out
}
