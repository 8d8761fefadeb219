package pipeline

import (
	"fmt"

	"tec/analysis"
	"tec/backend/kir"
	"tec/gpu"
	"tec/partition"
	"tec/precision"
	"tec/te"
	"tec/transform"
)

// MaxLevel is the highest optimisation level, the default.
const MaxLevel = 4

// Options controls Build.
type Options struct {
	// Level is the optimisation level, 0 to MaxLevel.
	Level int
	// GPU is the target; the zero GPU means gpu.Default.
	GPU gpu.Model
	// Strategy overrides the partitioning strategy at -O3 and up (the
	// default is the cost model).
	Strategy partition.Strategy
	// Deterministic replaces atomics by per-block partials combined in a
	// fixed order.
	Deterministic bool
	// OnChipBytes bounds the shared memory per block that -O4 spends on
	// keeping results on chip; 0 means partition.DefaultOnChipBytes.
	OnChipBytes int
	// ResidentBytes bounds the shared memory per block that -O4 spends on
	// keeping weights reused across a kernel's stages on chip; 0 means
	// what the GPU has left.
	ResidentBytes int
	// Context, when not 0, is the context the cost model prices masks on
	// run-time positions at (partition.Options.Context): a decode step's
	// attention past pos[b] = Context-1 is skipped at run time, and
	// predicted so. 0 prices the whole cache.
	Context int
	// Counters says where the fused kernels (-O3 and up) wait on per-tile
	// counters instead of grid syncs; the zero value decides by cost.
	Counters partition.CounterMode
	// Precision is the arithmetic precision; the zero value, precision.F32,
	// compiles the program as written.
	Precision precision.Mode
	// FlashChunks says how softmax-weighted reductions over a long axis
	// (attention) are split across blocks (flash-decoding, flash.go): 0
	// lets the cost model choose at -O3 and up (none below), 1 never
	// splits, N > 1 splits each in N chunks at every level where N divides
	// its axis.
	FlashChunks int
	// StageRegs, when not nil, gives the fewest registers per thread that
	// the plan's occupancy counts for the stage computing the tensor of
	// each name (partition.Options.StageRegs), where the planner's
	// estimate is fewer: what ptxas allocated to the kernel computing it
	// in an earlier build of the program (driver.CompileChecked). A kernel
	// counts the most of its stages'; nil plans with the estimates.
	StageRegs map[string]int
	// Dump, if set, receives the text of each pass's result as it is made,
	// under the pass's name (Table).
	Dump func(pass, text string)
}

// withDefaultGPU returns opts with the zero GPU replaced by the default
// model (gpu.Default): the one place the default applies.
func (opts Options) withDefaultGPU() Options {
	if opts.GPU.Name == "" {
		opts.GPU, _ = gpu.Builtin(gpu.Default)
	}
	return opts
}

// Result is what Build made.
type Result struct {
	// Program is the transformed program that was lowered.
	Program *te.Program
	// Plan is its partition: one kernel per TE below -O3.
	Plan *partition.Plan
	// Module is the kernel IR, which has passed kir.Verify.
	Module *kir.Module
	// Passes are the names of the passes that Build ran, in order.
	Passes []string
	// Flash are the flash pass's choices, one for each softmax site the
	// cost model priced (with the flash pass, -O3 and up), in program
	// order.
	Flash []FlashChoice
	// Groups are the groups pass's choices, one for each grouped
	// convolution the cost model priced (-O3 and up), in program order.
	Groups []GroupChoice
	// Pads are the pad pass's choices, one for each softmax site whose
	// axis it priced padded (-O3 and up, half scores), in program order.
	Pads []PadChoice
}

// partitionOptions returns the partitioner's options at opts.Level.
func partitionOptions(opts Options) partition.Options {
	if opts.Level < 3 {
		return partition.Options{Strategy: partition.PerTE, Context: opts.Context}
	}
	// The fused kernels reach their temporaries through the workspace
	// (kir.Module.TempsInWorkspace), so that only inputs, params and
	// outputs count against the kernel parameter limit. Unfused kernels
	// take a parameter each, so that the kernels of an unrolled model
	// that differ only in their buffers share code.
	popts := partition.Options{Strategy: opts.Strategy, Split: true, Reuse: opts.Level >= 4, TempsInWorkspace: true, OnChipBytes: opts.OnChipBytes, ResidentBytes: opts.ResidentBytes, Context: opts.Context, Counters: opts.Counters, StageRegs: opts.StageRegs}
	if popts.Strategy == partition.PerTE {
		popts.Strategy = partition.CostModel
	}
	return popts
}

// Footprint returns, for kernel k of the result's module and a global
// buffer b, an upper bound of the bytes of b that the kernel touches: for a
// tensor of the program, the bounding box of the kernel's stages' loads of
// it (each index's range over its variables' extents) or the whole tensor
// if the kernel writes it; for any other buffer, its size. It serves
// report.Report.DRAMBytes.
func (r *Result) Footprint() func(k int, b *kir.Buffer) int64 {
	byName := map[string]*te.Tensor{}
	for _, t := range r.Program.Tensors {
		byName[t.Name] = t
	}
	cache := map[int]map[*te.Tensor]int64{}
	return func(k int, b *kir.Buffer) int64 {
		t := byName[b.Name]
		if t == nil || k >= len(r.Plan.Kernels) {
			return b.Bytes()
		}
		boxes, ok := cache[k]
		if !ok {
			boxes = kernelBoxes(r.Plan.Kernels[k].Stages)
			cache[k] = boxes
		}
		if n, ok := boxes[t]; ok {
			return n
		}
		return b.Bytes()
	}
}

// kernelBoxes returns the bytes of the bounding box of the loads of each
// tensor that stages read.
func kernelBoxes(stages []*te.Tensor) map[*te.Tensor]int64 {
	type box struct{ lo, hi []int }
	boxes := map[*te.Tensor]*box{}
	written := map[*te.Tensor]bool{}
	for _, s := range stages {
		written[s] = true
		te.Walk(s.Body, func(x te.Expr) bool {
			l, ok := x.(*te.Load)
			if !ok {
				return true
			}
			bx := boxes[l.Tensor]
			if bx == nil {
				bx = &box{lo: make([]int, len(l.Tensor.Shape)), hi: make([]int, len(l.Tensor.Shape))}
				for d, n := range l.Tensor.Shape {
					bx.lo[d], bx.hi[d] = n, -1
				}
				boxes[l.Tensor] = bx
			}
			for d := range l.Index {
				lo, hi := l.IndexBounds(d)
				bx.lo[d] = min(bx.lo[d], lo)
				bx.hi[d] = max(bx.hi[d], hi)
			}
			return true
		})
	}
	out := map[*te.Tensor]int64{}
	for t, bx := range boxes {
		if written[t] {
			continue
		}
		n := int64(t.DType.Size())
		for d := range bx.lo {
			n *= int64(max(bx.hi[d]-bx.lo[d]+1, 0))
		}
		out[t] = n
	}
	return out
}

// plan analyses and partitions p.
func plan(p *te.Program, g gpu.Model, popts partition.Options) (*partition.Plan, error) {
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		return nil, fmt.Errorf("analysis: %w", err)
	}
	return partition.Partition(a, g, popts)
}

// recompute returns p with the producers that the cost model would rather
// recompute in their consumers' tiles so recomputed (transform.Recompute,
// each consumer decided by partition.RecomputePays), and its plan, if the
// plan of the whole is predicted faster than pl, p's own; else p and pl.
// (A producer that the plan would compute in a weight-cached stage's
// epilogue for free is no saving: only the whole plan tells.)
func recompute(p *te.Program, pl *partition.Plan, g gpu.Model, popts partition.Options) (*te.Program, *partition.Plan, error) {
	pays := func(old, nu *te.Tensor, removed []*te.Tensor) bool {
		return partition.RecomputePays(g, popts.Threads, old, nu, removed)
	}
	q, err := transform.Recompute(p, pays)
	if err != nil || len(q.Tensors) == len(p.Tensors) {
		return p, pl, err
	}
	ql, err := plan(q, g, popts)
	if err != nil {
		return nil, nil, err
	}
	_, _, was := pl.Stats()
	_, _, now := ql.Stats()
	if now.Total() >= was.Total() {
		return p, pl, nil
	}
	return q, ql, nil
}
