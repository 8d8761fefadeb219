package partition

// Strategy chooses where kernels begin.
type Strategy int

// The strategies.
const (
	// CostModel chooses the boundaries that minimise predicted time
	// (launches + grid syncs + each stage's time at the occupancy of its
	// kernel) by dynamic programming over the stages in program order.
	// The search only ever drops candidate kernels that provably cannot
	// beat one it keeps (they are dominated), or that have fallen almost a
	// launch behind; it takes time linear in the number of stages, with a
	// constant of about the number of stages whose data L2 holds.
	CostModel Strategy = iota
	// Greedy is the paper's Alg. 1 (lines 2-9): walk the TEs in order and
	// start a new kernel before a compute-intensive TE whose schedule needs
	// more blocks than the kernel can hold resident.
	Greedy
	// PerTE puts every compute tensor in a kernel of its own (-O0 to -O2).
	PerTE
)

var strategyNames = [...]string{CostModel: "cost", Greedy: "greedy", PerTE: "per-te"}

// String returns "cost", "greedy" or "per-te".
func (s Strategy) String() string { return strategyNames[s] }

// Options controls Partition.
type Options struct {
	Strategy Strategy
	// Threads is the block size of every stage; 0 means 256 (or the GPU's
	// largest block if smaller).
	Threads int
	// Scheduler chooses schedules; nil means Analytic.
	Scheduler Scheduler
	// Reuse lets a row-wise consumer of a row reduction with the same
	// tiling read its producer's rows without a grid sync (-O4).
	Reuse bool
	// Split allows two-phase split reductions inside kernels (-O3 and up).
	Split bool
	// OnChipBytes bounds the shared memory per block that a kernel spends
	// on keeping results on chip (Reuse); 0 means DefaultOnChipBytes.
	OnChipBytes int
	// ResidentBytes bounds the shared memory per block that a kernel
	// spends on keeping weights reused across its stages on chip
	// (Resident; -O4 with Reuse); 0 means what the GPU has left.
	ResidentBytes int
	// TempsInWorkspace says that the emitted kernels reach temporaries
	// through one workspace pointer, so that only inputs, params and
	// outputs (and that pointer) count against GPU.ParamLimit. Without it
	// every buffer a kernel touches is a parameter.
	TempsInWorkspace bool
	// Counters says where grid syncs give way to per-tile counters
	// (counters.go); the zero value decides by cost.
	Counters CounterMode

	// Context, when not 0, is the context the cost model prices masks on
	// run-time scalars at: it assumes each such scalar (pos[b] in
	// `select(t <= pos[b], …)`) is Context-1, so that the tiles past it,
	// which the kernel skips at run time, cost nothing — a decode step
	// at position Context-1 of a longer cache. 0 prices every tile (the
	// worst case: the cache full).
	Context int

	// StageRegs, when not nil, gives the fewest registers per thread that
	// occupancy counts for the stage computing the tensor of each name,
	// where its schedule's estimate is fewer: what ptxas allocated to the
	// kernel that computed it in an earlier build of the program
	// (pipeline.Options.StageRegs). A kernel counts the most of its
	// stages' figures, so a kernel cut differently from the earlier
	// build's still counts what each of its stages took; a stage without
	// a figure keeps its estimate.
	StageRegs map[string]int

	// search, for tests, turns the cost-model search's dominance cut off
	// and counts the stages it grows kernels by.
	search *searchProbe
}

// searchProbe lets tests compare the cost-model search with and without its
// dominance cut (see coster.dominated), and count its work.
type searchProbe struct {
	noDominance bool
	grown       int // kernel extensions tried
}

// DefaultOnChipBytes bounds the shared memory per block that a kernel
// spends on keeping results on chip, when Options.OnChipBytes is 0.
const DefaultOnChipBytes = 16 << 10

// onChipBudget returns the shared memory per block that a kernel may spend
// on results kept on chip.
func (o Options) onChipBudget() int {
	if o.OnChipBytes <= 0 {
		return DefaultOnChipBytes
	}
	return o.OnChipBytes
}

// CounterMode says where a plan replaces grid syncs by per-tile counters.
type CounterMode int

// The counter modes.
const (
	// CountersByCost replaces a grid sync where counters are sound and
	// the cost model predicts them cheaper (the default).
	CountersByCost CounterMode = iota
	// CountersOff keeps every grid sync.
	CountersOff
	// CountersWherever replaces every grid sync that counters soundly
	// can, whatever they cost: for tests.
	CountersWherever
)
