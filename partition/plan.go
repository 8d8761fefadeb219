package partition

import (
	"fmt"
	"strings"

	"tec/cost"
	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

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
	// stageRegs is Options.StageRegs: the fewest registers per thread
	// that occupancy counts for the stage computing each named tensor.
	stageRegs map[string]int
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

// stageGPU returns the GPU that stage t's own occupancy is counted on:
// pl.GPU, whose blocks take at least the registers per thread that
// Options.StageRegs gives t (gpu.Model.MinRegsPerThread).
func (pl *Plan) stageGPU(t *te.Tensor) gpu.Model {
	g := pl.GPU
	g.MinRegsPerThread = max(g.MinRegsPerThread, pl.stageRegs[t.Name])
	return g
}

// stageResources returns what one block of stage t occupies: its
// schedule's resources, with at least the registers per thread that
// Options.StageRegs gives t. It is where a stage's register figure
// becomes the resources that a kernel's occupancy counts (mergeRes takes
// the most of its stages').
func (pl *Plan) stageResources(t *te.Tensor) schedule.Resources {
	r := pl.Schedules[t].Resources()
	r.RegsPerThread = max(r.RegsPerThread, pl.stageRegs[t.Name])
	return r
}

// Kernel is one subprogram: the stages that one persistent kernel computes.
type Kernel struct {
	Stages []*te.Tensor
	// Sync[i] is how stage i is separated from what precedes it in the
	// kernel.
	Sync []Barrier
	// Resources of one block: the most of any stage (their registers per
	// thread at least the floors of Options.StageRegs).
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
	// Prefetches[j], when set, is an L2 prefetch of the weights of a
	// stage of the epoch that stage j begins, issued before j's grid sync
	// by the blocks with no tile in the epoch it ends (prefetch.go).
	// StageCosts and Cost count the stage's reads from L2.
	Prefetches map[int]*Prefetch
}

// Prefetch is an L2 prefetch of the weights of stage For, issued by the
// blocks of the epoch before For's grid sync that have no tile in it.
type Prefetch struct {
	For *te.Tensor
	// Ranges are the elements of each weight that For reads, [Lo, Hi) of
	// its flat index.
	Ranges []PrefetchRange
	// Busy counts the blocks with tiles in the epoch, at most: the blocks
	// from Busy on issue the prefetches (none where the grid launched
	// has no more).
	Busy int
	// Bytes is what the prefetches move, and Saved the time the cost
	// model predicts For saves, in seconds.
	Bytes int64
	Saved float64
}

// String formats the prefetch for plans, e.g. "prefetch into L2 by the
// blocks from 256 on: wo 8.39 MB, for x.1 (saves 1.37 µs)".
func (pf *Prefetch) String() string {
	var ws []string
	for _, r := range pf.Ranges {
		ws = append(ws, r.Tensor.Name)
	}
	return fmt.Sprintf("prefetch into L2 by the blocks from %d on: %s %s, for %s (saves %.2f µs)", pf.Busy, strings.Join(ws, ", "), byteSize(pf.Bytes), pf.For.Name, pf.Saved*1e6)
}

// PrefetchRange is a run of a weight's elements, [Lo, Hi) of its flat
// index; where Len is above 0, only the first Len of each row of Row
// elements from Lo on (the first k of each column of an [out, in] weight,
// which every tile of its stage reads first).
type PrefetchRange struct {
	Tensor   *te.Tensor
	Lo, Hi   int
	Row, Len int
}

// Elements returns the elements the range prefetches.
func (r PrefetchRange) Elements() int {
	if r.Len > 0 {
		return (r.Hi - r.Lo) / r.Row * r.Len
	}
	return r.Hi - r.Lo
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
			if pf := k.Prefetches[j]; pf != nil {
				fmt.Fprintf(&b, "    %s\n", pf)
			}
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
				cost = fmt.Sprintf(" [%.2f µs, %s from DRAM, bound: %s]", sc.Time*1e6, byteSize(sc.DRAM), stageBound(sc.Bound, pl.Schedules[t]))
			}
			fmt.Fprintf(&b, "    %s%s: %s%s\n", bar, t.Name, pl.Schedules[t], cost)
		}
	}
	return b.String()
}

// stageBound names what bounds a stage of schedule s (cost.Bound), with
// its load path where its loads' round trips do.
func stageBound(b cost.Bound, s *schedule.Schedule) string {
	if b == cost.BoundLatency && s.Load.Width > 0 {
		return fmt.Sprintf("%s (%s)", b, s.Load)
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
