package cost

import (
	"tec/gpu"
	"tec/schedule"
)

// InFlightPerSM returns the bytes that an SM of g must have in flight to
// draw its share of g's DRAM bandwidth (Little's law: bandwidth ×
// latency, over the SMs; g.Latency).
func InFlightPerSM(g gpu.Model) float64 {
	dram, _ := g.Latency()
	return g.DRAMBandwidth * dram / float64(max(g.SMs, 1))
}

// LatencyTime is the time that the loads of a stage (schedule s, price
// p) take on g when they are bound by their round trips, not by bandwidth:
// threads threads running at once, each with s.Load's bytes in flight
// per round trip, and each round trip g's latency of DRAM for the dram
// bytes the stage moves from DRAM and of L2 for the rest of the bytes its
// tiles load (g.Latency). Stores do not wait for their data, so the stage's output
// (Price.Out) is left out. Little's law: the bandwidth such loads can
// draw is threads × bytes in flight / latency. A stage whose LoadPath is
// not described (Width 0) returns 0.
func LatencyTime(g gpu.Model, s *schedule.Schedule, p *Price, dram int64, threads int) float64 {
	perTrip := float64(threads) * float64(s.Load.BytesInFlight())
	if s.Load.Width == 0 || perTrip <= 0 {
		return 0
	}
	loads := max(p.Bytes-p.Out, 0)
	fromDRAM := min(max(dram-p.Out, 0), loads)
	fromL2 := loads - fromDRAM
	dramLatency, l2Latency := g.Latency()
	return (float64(fromDRAM)*dramLatency + float64(fromL2)*l2Latency) / perTrip
}

// Bound names what bounds a stage's predicted time: the term of
// StageTime that won.
type Bound int

// The bounds.
const (
	// BoundNone is a stage computed in another's epilogue, which costs
	// nothing of its own.
	BoundNone Bound = iota
	// BoundDRAM: its bytes from DRAM over DRAM bandwidth.
	BoundDRAM
	// BoundL2: the bytes its tiles load, all through L2, over L2
	// bandwidth.
	BoundL2
	// BoundTensor: its FLOPs over the fraction of the tensor cores' peak
	// that its tiles reach (shared-memory wavefronts, barriers).
	BoundTensor
	// BoundFP32: its FLOPs over the CUDA cores' peak, at the fraction its
	// register tile can issue.
	BoundFP32
	// BoundLatency: its loads' round trips (LatencyTime), or the least
	// time of a stage, about one round trip to DRAM.
	BoundLatency
	// BoundGridSync: the grid syncs of its own phases (a split reduction,
	// a split K) take longer than its work.
	BoundGridSync
	// BoundL1: the L1 wavefronts of its loads (LoadPath.Lines), one an SM
	// a clock: a warp's loads scattered over many lines.
	BoundL1
)

var boundNames = [...]string{BoundNone: "none (in an epilogue)", BoundDRAM: "DRAM", BoundL2: "L2", BoundTensor: "tensor", BoundFP32: "FP32 issue", BoundLatency: "latency", BoundGridSync: "grid syncs", BoundL1: "L1 wavefronts"}

// String returns the bound's name, as tec explain --plan prints it.
func (b Bound) String() string { return boundNames[b] }
