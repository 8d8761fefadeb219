// Package cost is the cost model of partition plans, apart from the
// schedules it prices (package schedule) and from the planner that asks it
// (package partition). A stage's Price is the work its schedule does: its
// arithmetic, the bytes its tiles request and its footprint, from Of, a
// tensor before its schedule is chosen, and the counts that reprice what a
// schedule changes (TileBytes, MatVecBytes, ResidentBytes,
// Price.SkipMasked, Price.Hoisted). StageTime, and its forms for a stage
// alone (Alone, Solo, Ideal), is the time that work takes on a GPU model,
// from its rates, the fraction of them a schedule's tiles reach
// (Efficiency: for tensor cores, the shared-memory wavefronts and
// barriers of a k step) and the round trips of the stage's loads
// (LatencyTime: Little's law on its schedule.LoadPath, at the GPU's
// load latencies, gpu.Model.Latency); StageBound names the term that bounds it.
// RecomputePays, SplitPays and FewRowsPay answer the
// planner's questions of one stage; an Estimate is a kernel's predicted
// time, its parts and its traffic.
package cost

import (
	"tec/analysis"
	"tec/te"
)

// Price is what one stage costs whatever the GPU it runs on: the work its
// schedule does.
type Price struct {
	// FLOPs and Bytes estimate the stage's arithmetic and its global
	// traffic (each tile's loads of the factors for a contraction); Foot
	// is the distinct bytes it reads and writes, what it moves from DRAM
	// when its re-reads hit in L2.
	FLOPs int64
	Bytes int64
	Foot  int64
	// Out is the bytes of the stage's output, the stores of its Bytes:
	// what its threads do not wait for (LatencyTime).
	Out int64
	// Products are the operations of one output's reduction of a masked
	// contraction, and UnmaskedFLOPs and UnmaskedBytes its FLOPs and
	// Bytes when no tile is skipped: what the tiles its mask skips are
	// priced from.
	Products, UnmaskedFLOPs, UnmaskedBytes int64
}

// Of returns the price of tensor t as a thread per output element computes
// it, reading what it needs from global memory: its arithmetic (Ops), the
// bytes it requests with nothing cached (RequestBytes) and, where its
// analysis x is known, its footprint (the distinct bytes it reads and
// writes). The planner starts from it and reprices what its schedule
// changes.
func Of(t *te.Tensor, x *analysis.TE) Price {
	var p Price
	if x != nil {
		p.Foot = (x.Intensity.Read + x.Intensity.Written) * int64(t.DType.Size())
	}
	p.Bytes = RequestBytes(t)
	p.Out = t.Bytes()
	p.FLOPs = int64(t.NumElements()) * Ops(t.Body, map[*te.Reduce]bool{})
	return p
}
