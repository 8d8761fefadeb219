// Package cost is the cost model of partition plans: what a stage's
// schedule costs, apart from the decisions that make up the schedule.
// A Price is the work of one stage, counted from its schedule: its
// arithmetic, the bytes its tiles request from global memory, and its
// footprint.
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
