// Package partition splits a TE program into subprograms, each of which
// becomes one persistent GPU kernel (Souffle, ASPLOS'24, §5.4 and Alg. 1).
//
// It holds the GPU models (GPU, LoadGPU), the per-tensor schedules
// (Schedule, chosen by a Scheduler, Analytic by default), and the
// partitioner. Partitioning is top-down: it starts from the whole program as
// one kernel and splits only where the cooperative-launch constraint (every
// block of the grid resident at once, with the resources of the kernel's
// heaviest stage) or the cost model says so. Every boundary records why it
// is there, with the numbers.
//
// A fused kernel's shared memory is counted as backend/lower declares it,
// by the same function (Place, SharedBytes in shared.go): the arrays that
// outlive their stages (results kept on chip, the weight cache) plus one
// scratch arena per element type, as large as the most that one stage
// places in it; each stage's scratch arrays (Schedule.Arrays) follow one
// another from the arena's start, in whole 16-byte units. With f32 scratch
// arrays only, the kernel's scratch memory is its largest stage's.
//
// The plan also fixes where a kernel needs grid-wide barriers: before a
// stage that reads what another block wrote since the last barrier. A stage
// that reads, element for element, what the same thread wrote (an
// element-wise consumer of an element-wise producer of the same size) needs
// none; a stage that reads row results of a row reduction with the same
// tiling needs only a block barrier (Reuse), and so does a chain of such
// row stages and contractions with a tile per batch entry, such as a
// decode step's attention per head (blocklocal.go).
//
// At -O4 the plan asks two things of the lowering that hold only if every
// thread reads what the right thread wrote, and both are checked before a
// kernel is emitted, failing rather than miscompiling: the lowering checks
// the first, which depends on where it starts each stage's tiles, and
// calls Plan.Verify for the second, which re-applies to the plan's
// recorded epilogues the rule that chose them:
//
//   - a result kept on chip (Kernel.OnChip) is read only by the block that
//     wrote it: its readers work by the same rows, and the lowering gives
//     row r of the producer and of every reader to the same block (it does
//     not rotate them onto other blocks, whatever grid syncs lie between);
//   - a stage in a resident stage's epilogue (Resident.Epilogue) is
//     element-wise, its axes correspond one to one to the resident stage's
//     non-batch axes, and it reads the resident stage only at those axes
//     (and at constant batch entries of its group) and earlier epilogue
//     stages only at its own element: each of its elements depends only on
//     what the thread computing it wrote. A stage that reads other columns
//     (a reduction over them, say) runs after a grid sync instead.
package partition

import (
	"fmt"
	"math"
	"strings"

	"tec/analysis"
	"tec/cost"
	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

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

// Plan is a partitioned program: the kernels in launch order, each a list
// of stages in program order, and the schedule of every compute tensor.
type Plan struct {
	GPU       gpu.Model
	Program   *te.Program
	Strategy  Strategy
	Threads   int
	Schedules map[*te.Tensor]*schedule.Schedule
	// Prices are what each schedule costs (package cost), apart from
	// the decisions.
	Prices  map[*te.Tensor]*cost.Price
	Kernels []*Kernel
	// reuse is Options.Reuse: stages may read what their own block
	// wrote after a block barrier (sameBlock, sameRows).
	reuse bool
	// fits caches matVecFit while counters are placed (placeCounters),
	// which asks for the same stage pair's fit many times.
	fits map[fitKey]fitResult
	// reads caches readPoints's reads of each consumer likewise.
	reads map[readKey]readSet
}

// stage returns compute tensor t's schedule and price.
func (pl *Plan) stage(t *te.Tensor) stage {
	return stage{pl.Schedules[t], pl.Prices[t]}
}

// Kernel is one subprogram: the stages that one persistent kernel computes.
type Kernel struct {
	Stages []*te.Tensor
	// Sync[i] is how stage i is separated from what precedes it in the
	// kernel.
	Sync []Barrier
	// Resources of one block: the most of any stage.
	Resources schedule.Resources
	// BlocksPerSM and Grid: occupancy, and the grid the cost model assumes:
	// the all-resident grid's size, or for a kernel of its own (PerTE) a
	// block per tile. The fused lowering launches at most Grid blocks (see
	// Launch).
	BlocksPerSM, Grid int
	// GridSyncs counts the grid barriers the cost model charges (two per
	// split reduction; the lowering may need fewer).
	GridSyncs int
	// Cost is the predicted time of the kernel.
	Cost cost.Estimate
	// StageCosts[i] is what the cost model predicts of stage i alone in
	// this kernel (cost strategy): where a kernel's time goes.
	StageCosts []cost.StageEstimate
	// Boundary says why this kernel begins where it does; nil for the
	// first kernel.
	Boundary *Boundary
	// OnChip are the stages whose results stay in shared memory, never
	// written to global memory (-O4): row reductions read only by their
	// own blocks in this kernel. Resources include their bytes.
	OnChip []*te.Tensor
	// Slot[t] is the shared array of on-chip result t; results whose lives
	// in the kernel do not overlap share one. SlotBytes are the arrays'
	// sizes, each its largest occupant's.
	Slot      map[*te.Tensor]int
	SlotBytes []int
	// Spilled are the results that were on chip until the budget ran out
	// and the least recently used was spilled to global memory.
	Spilled []*te.Tensor
	// Cache, when set, is the kernel's shared-memory cache of the weights
	// that its Resident stages read (-O4).
	Cache *schedule.WeightCache
	// Counters[j], when set, replaces the grid sync before stage j
	// (Sync[j] stays GridSync) by waits on per-tile counters that its
	// producers' tiles signal: the dependences of stage j's tiles
	// (counters.go). Where Sync[j] is not GridSync, stage j follows such
	// a stage before the next grid sync and reads the same epoch: its
	// tiles wait too. GridSyncs and Cost count the counters, not the sync.
	Counters map[int][]TileDep
}

// Barrier separates a stage from the one before it in its kernel.
type Barrier int

// The barriers.
const (
	NoBarrier Barrier = iota // first stage, or same-thread element reuse
	BlockSync                // only the block's own results are read
	GridSync                 // another block's results are read
)

// Boundary explains a kernel boundary.
type Boundary struct {
	Before *te.Tensor // the first stage of the new kernel
	Reason string
	// MergedCost and SplitCost are the predicted times of the kernels
	// around the boundary kept as one and split here (cost strategy).
	MergedCost, SplitCost float64
}

// Partition plans a's program on gpu.
func Partition(a *analysis.Analysis, g gpu.Model, opts Options) (*Plan, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if opts.Threads == 0 {
		opts.Threads = min(256, g.MaxThreadsPerBlock)
	}
	if opts.Scheduler == nil {
		opts.Scheduler = Analytic{}
	}
	p := a.Program
	pl := &Plan{GPU: g, Program: p, Strategy: opts.Strategy, Threads: opts.Threads, Schedules: map[*te.Tensor]*schedule.Schedule{}, Prices: map[*te.Tensor]*cost.Price{}, reuse: opts.Reuse}
	var stages []*te.Tensor
	for _, t := range p.Tensors {
		if t.Kind != te.Compute {
			continue
		}
		sched, price, err := opts.Scheduler.Schedule(t, a.TE(t), g, opts.Threads)
		if err != nil {
			return nil, fmt.Errorf("partition: %w", err)
		}
		s := stage{sched, price}
		if opts.Strategy == PerTE {
			if !s.unfusedTensorCores(t, opts.Threads, g) {
				s.Unfused(t.Bytes())
			}
		} else {
			s.fusedTensorCores(t, opts.Threads, g)
		}
		if n, why := g.BlocksPerSM(s.Resources().Block()); n == 0 && !s.shrink(g, t.Bytes()) {
			return nil, fmt.Errorf("partition: stage %s does not fit on %s: %s; %s", t.Name, g.Name, why, FitHint)
		}
		if opts.Split {
			split(t, s, g)
		}
		if s.Mask != nil && len(s.Mask.Scalars) > 0 && opts.Context > 0 {
			s.Mask.Context = opts.Context
			s.priceMask()
		}
		if s.KMask != nil && len(s.KMask.Scalars) > 0 && opts.Context > 0 {
			s.KMask.Context = opts.Context
			s.priceKMask()
		}
		pl.Schedules[t], pl.Prices[t] = s.Schedule, s.Price
		stages = append(stages, t)
	}
	if len(stages) == 0 {
		return pl, nil
	}
	if opts.Reuse {
		if opts.Strategy != PerTE {
			alignRows(stages, pl, g) // blocklocal.go
		}
		for _, t := range stages {
			rows(t, pl, g)
		}
		if opts.Strategy != PerTE {
			rowsForReaders(stages, pl, g) // blocklocal.go
		}
	}
	c := newCoster(pl, stages, opts)
	c.a = a
	var starts []int
	var bounds []*Boundary
	switch opts.Strategy {
	case PerTE:
		for i := range stages {
			starts = append(starts, i)
			if i > 0 {
				bounds = append(bounds, &Boundary{Before: stages[i], Reason: "one kernel per TE (-O0 to -O2)"})
			}
		}
	case Greedy:
		starts, bounds = c.greedy()
	default:
		starts, bounds = c.dp()
	}
	for i, s := range starts {
		e := len(stages)
		if i+1 < len(starts) {
			e = starts[i+1]
		}
		k := c.kernel(s, e)
		if i > 0 {
			k.Boundary = bounds[i-1]
		}
		if opts.Reuse {
			k = c.resident(k)
			c.onChip(k, a)
		}
		pl.Kernels = append(pl.Kernels, k)
	}
	propagate(a, pl)
	if opts.Strategy != PerTE {
		placeCounters(pl, opts.Counters)
	}
	return pl, nil
}

// split turns a row reduction with too few outputs to fill the GPU and a
// long enough range into a two-phase split reduction, when the cost model
// prices the split's chunks on more SMs, plus its two grid syncs, below a
// block per output (an RMSNorm's 2048 elements of one row take less than
// the syncs would: see stageTime).
func split(t *te.Tensor, s stage, g gpu.Model) {
	if s.Kind != schedule.RowReduce {
		return
	}
	reds := TopReduces(t.Body)
	if len(reds) != 1 || te.TypeOf(reds[0]) != te.F32 || reds[0].Op == te.Prod {
		return
	}
	n, ext := t.NumElements(), product(reds[0].Axes)
	full := g.ResidentBlocks(s.Resources().Block())
	if 2*n > full || ext < splitMin {
		return
	}
	chunks := max(2, min(full/n, ext/(4*s.Threads)))
	w := float64(s.Bytes) / g.DRAMBandwidth
	whole := w * float64(g.SMs) / float64(min(n, g.SMs))
	parts := w*float64(g.SMs)/float64(min(n*chunks, g.SMs)) + 2*g.GridSyncCost
	if parts >= whole {
		return
	}
	s.Kind = schedule.SplitReduce
	s.Chunks = chunks
	s.Tiles = n * s.Chunks
}

// rows makes an element-wise stage t a Rows stage when it reads a row
// reduction (or a Rows stage) at its own leading axes, those axes have at
// least as many points as the GPU has SMs, and the rest at least 32.
func rows(t *te.Tensor, pl *Plan, g gpu.Model) {
	scheds := pl.Schedules
	s := pl.stage(t)
	if s.Kind != schedule.Elementwise {
		return
	}
	for _, u := range te.Inputs(t.Body) {
		su := scheds[u]
		if su == nil {
			continue
		}
		l := rowAxes(u, su)
		if l <= 0 || l >= len(t.Shape) || !readsRows(t, u, l) {
			continue
		}
		r := product(t.Axes[:l])
		if r < g.SMs && !fewRowsPay(s, r, g) || product(t.Axes[l:]) < 32 {
			continue
		}
		s.Kind, s.RowAxes, s.Tiles = schedule.Rows, l, r
		return
	}
}

// fewRowsPay reports whether an element-wise stage s of r rows, fewer than
// the GPU has SMs, costs less as a Rows stage (on r blocks, as stageTime
// prices it) than the grid sync it saves: the normalisation of an RMSNorm
// over the one row of a decode step.
func fewRowsPay(s stage, r int, g gpu.Model) bool {
	return float64(s.Bytes)/g.DRAMBandwidth*float64(g.SMs)/float64(r) < g.GridSyncCost
}

// rowAxes returns how many leading axes of t make its rows under schedule
// s, or 0 if s does not work by rows.
func rowAxes(t *te.Tensor, s *schedule.Schedule) int {
	switch s.Kind {
	case schedule.RowReduce:
		return len(t.Shape)
	case schedule.Rows:
		return s.RowAxes
	}
	return 0
}

// readsRows reports whether t's first l axes have u's first l extents and
// every load of u in t indexes u's first l axes by them.
func readsRows(t, u *te.Tensor, l int) bool {
	if len(u.Shape) < l || len(t.Shape) < l {
		return false
	}
	for d := range l {
		if t.Shape[d] != u.Shape[d] {
			return false
		}
	}
	ok := true
	te.Walk(t.Body, func(x te.Expr) bool {
		if ld, isLoad := x.(*te.Load); isLoad && ld.Tensor == u {
			ok = ok && !ld.IsGather()
			for d := range l {
				if v, isVar := ld.Index[d].AsVar(); !isVar || v != t.Axes[d] {
					ok = false
				}
			}
		}
		return ok
	})
	return ok
}

// propagate gives each memory-intensive stage the compute-intensive stage
// of its kernel that dominates it, as the schedule it follows (Alg. 1,
// lines 13-18): same block, same kernel.
func propagate(a *analysis.Analysis, pl *Plan) {
	for _, k := range pl.Kernels {
		in := map[*te.Tensor]bool{}
		ci := false
		for _, t := range k.Stages {
			in[t] = true
			ci = ci || a.TE(t).Intensity.Class == analysis.ComputeIntensive
		}
		if !ci || len(k.Stages) == 1 {
			continue
		}
		for _, t := range k.Stages {
			x := a.TE(t)
			if x == nil || x.Intensity.Class == analysis.ComputeIntensive {
				continue
			}
			for d := a.Graph.Idom(t); d != nil && in[d]; d = a.Graph.Idom(d) {
				if y := a.TE(d); y != nil && y.Intensity.Class == analysis.ComputeIntensive {
					pl.Schedules[t].From = d
					break
				}
			}
		}
	}
}

// Stats sums a plan's predictions.
func (pl *Plan) Stats() (kernels, gridSyncs int, total cost.Estimate) {
	for _, k := range pl.Kernels {
		gridSyncs += k.GridSyncs
		total.Launch += k.Cost.Launch
		total.Sync += k.Cost.Sync
		total.Stages += k.Cost.Stages
		total.Bytes += k.Cost.Bytes
		total.DRAM += k.Cost.DRAM
		total.FLOPs += k.Cost.FLOPs
	}
	return len(pl.Kernels), gridSyncs, total
}

// Launch is the grid that the lowering gave one kernel of a plan. The plan's
// Kernel.Grid is the all-resident grid that its cost model assumes; the
// fused lowering launches at most as many blocks as the kernel has work for
// and as its own shared memory lets be resident, and the unfused lowering a
// fixed grid of one block per tile.
type Launch struct {
	Blocks   int
	Resident bool // launched cooperatively, all blocks resident at once
	// Reason says why Blocks is not the plan's Grid; "" when it is.
	Reason string
}

// String formats the plan for people: one paragraph per kernel with its
// boundary, grid and stages.
func (pl *Plan) String() string { return pl.Format(nil) }

// Format is String with the grid each kernel is launched with: launch[i]
// for kernel i, or the plan's all-resident grid where launch is nil. A
// launch that differs from the plan's grid is shown with the plan's grid
// and the reason.
func (pl *Plan) Format(launch []Launch) string {
	var b strings.Builder
	n, syncs, cost := pl.Stats()
	fmt.Fprintf(&b, "plan %s on %s (%s): %d kernels, %d grid syncs, predicted %.3f ms\n", pl.Program.Name, pl.GPU.Name, pl.Strategy, n, syncs, cost.Total()*1e3)
	for i, k := range pl.Kernels {
		if k.Boundary != nil {
			fmt.Fprintf(&b, "  -- boundary before %s: %s\n", k.Boundary.Before.Name, k.Boundary.Reason)
		}
		grid := fmt.Sprintf("grid %d (%d/SM)", k.Grid, k.BlocksPerSM)
		if i < len(launch) && launch[i].Reason != "" {
			grid = fmt.Sprintf("grid %d (planned %d, %d/SM: %s)", launch[i].Blocks, k.Grid, k.BlocksPerSM, launch[i].Reason)
		}
		fmt.Fprintf(&b, "kernel %d: %d stages, %s, %d threads, smem %d B, regs %d, %d grid syncs, predicted %.1f µs\n",
			i, len(k.Stages), grid, k.Resources.Threads, k.Resources.SharedBytes, k.Resources.RegsPerThread, k.GridSyncs, k.Cost.Total()*1e6)
		if k.Cache != nil {
			fmt.Fprintf(&b, "    %s\n", k.Cache)
		}
		if len(k.OnChip) > 0 || len(k.Spilled) > 0 {
			var on, spilled []string
			for _, t := range k.OnChip {
				on = append(on, fmt.Sprintf("%s (slot %d)", t.Name, k.Slot[t]))
			}
			for _, t := range k.Spilled {
				spilled = append(spilled, t.Name)
			}
			fmt.Fprintf(&b, "    on chip: %s; slots %v B", strings.Join(on, ", "), k.SlotBytes)
			if len(spilled) > 0 {
				fmt.Fprintf(&b, "; spilled (least recently used) to global memory: %s", strings.Join(spilled, ", "))
			}
			b.WriteByte('\n')
		}
		for j, t := range k.Stages {
			bar := ""
			switch k.Sync[j] {
			case GridSync:
				bar = "grid.sync; "
				if deps := k.Counters[j]; deps != nil {
					var ds []string
					for _, d := range deps {
						ds = append(ds, d.String())
					}
					bar = "wait " + strings.Join(ds, ", ") + "; "
				}
			case BlockSync:
				bar = "syncthreads; "
			}
			if deps := k.Counters[j]; deps != nil && k.Sync[j] != GridSync {
				var ds []string
				for _, d := range deps {
					ds = append(ds, d.String())
				}
				bar += "wait " + strings.Join(ds, ", ") + "; "
			}
			cost := ""
			if j < len(k.StageCosts) {
				sc := k.StageCosts[j]
				cost = fmt.Sprintf(" [%.2f µs, %s from DRAM]", sc.Time*1e6, byteSize(sc.DRAM))
			}
			fmt.Fprintf(&b, "    %s%s: %s%s\n", bar, t.Name, pl.Schedules[t], cost)
		}
	}
	return b.String()
}

// FitHint is what a refusal of a block that does not fit on the GPU
// suggests: what the user can set. The block size of -O3 and up is the
// GPU's max_threads_per_block, up to 256; -O2 and below give each kernel
// the tile and block its own tensor needs.
const FitHint = "build at -O2, whose kernels each take their own block, or describe the GPU with a smaller max_threads_per_block, the block size of -O3 and up (--gpu FILE.json, docs/gpu.md)"

// mergeRes returns the resources of a block that runs both r and s.
// Their scratch arenas are shared (the larger of each type's), and so is
// the persistent memory: the stages of a kernel use the one weight cache.
func mergeRes(r, s schedule.Resources) schedule.Resources {
	scratch := r.Scratch.Merge(s.Scratch)
	return schedule.Resources{
		Threads:       max(r.Threads, s.Threads),
		SharedBytes:   scratch.Bytes() + max(r.SharedBytes-r.Scratch.Bytes(), s.SharedBytes-s.Scratch.Bytes()),
		Scratch:       scratch,
		RegsPerThread: max(r.RegsPerThread, s.RegsPerThread),
	}
}

var inf = math.Inf(1)

// byteSize formats n bytes for people: B, KB, MB or GB (powers of 1000).
func byteSize(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
