// Package cost is the cost model of partition plans, apart from the
// schedules it prices (package schedule) and from the planner that asks it
// (package partition): a stage's Price, the work its schedule does (its
// arithmetic, the bytes its tiles request, its footprint), and the time
// that work takes on a GPU (StageTime and its forms for a stage alone:
// Alone, Solo, Ideal), from the rates of the GPU's model and the fraction
// of them a schedule's tiles reach (Efficiency).
package cost

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
	// Products are the operations of one output's reduction of a masked
	// contraction, and UnmaskedFLOPs and UnmaskedBytes its FLOPs and
	// Bytes when no tile is skipped: what the tiles its mask skips are
	// priced from.
	Products, UnmaskedFLOPs, UnmaskedBytes int64
}
