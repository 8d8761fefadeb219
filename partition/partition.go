// Package partition splits a TE program into subprograms, each of which
// becomes one persistent GPU kernel (Souffle, ASPLOS'24, §5.4 and Alg. 1).
//
// It is the planner: it chooses each compute tensor's schedule (package
// schedule: chosen by a Scheduler, Analytic by default), prices it with
// package cost, and cuts the program into kernels. Partitioning is
// top-down: it starts from the whole program as one kernel and splits only
// where the cooperative-launch constraint (every block of the grid
// resident at once, with the resources of the kernel's heaviest stage) or
// the cost model says so. Every boundary records why it is there, with
// the numbers.
//
// A fused kernel's shared memory is counted as backend/lower declares it,
// by the same function (schedule.Place, schedule.SharedBytes): the arrays
// that outlive their stages (results kept on chip, the weight cache) plus
// one scratch arena per element type, as large as the most that one stage
// places in it; each stage's scratch arrays (schedule.Schedule.Arrays) follow one
// another from the arena's start, in whole 16-byte units. With f32 scratch
// arrays only, the kernel's scratch memory is its largest stage's.
//
// The package's files build on one another in one direction, each using
// only those before it: stage.go (a schedule and its price, as the planner
// decides them), loadpath.go (how each stage's code moves its operands,
// what the cost model prices its round trips from), serial.go (whether
// a thread per output may compute a reduction), rows.go (which
// stages work by rows), tiledep.go (tile
// dependences), schedule.go, tensorcore.go and recompute.go (choosing and
// pricing one stage's schedule), options.go, plan.go (the plan as data),
// canon.go, counters_matvec.go, blocklocal.go and counters.go (stages that
// read their own block's rows, and per-tile counters), search.go (the search
// over kernel boundaries), pipeline.go (cp.async pipelines deepened per
// kernel), resident.go (weights kept on chip), verify.go
// (the plan's -O4 promises) and partition.go (Partition, which runs them);
// TestLayers keeps them so.
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

	"tec/analysis"
	"tec/cost"
	"tec/gpu"
	"tec/schedule"
	"tec/te"
)

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
	pl := &Plan{GPU: g, Program: p, Strategy: opts.Strategy, Threads: opts.Threads, Schedules: map[*te.Tensor]*schedule.Schedule{}, Prices: map[*te.Tensor]*cost.Price{}, reuse: opts.Reuse, stageRegs: opts.StageRegs}
	var stages []*te.Tensor
	for _, t := range p.Tensors {
		if t.Kind != te.Compute {
			continue
		}
		g := pl.stageGPU(t)
		sched, price, err := opts.Scheduler.Schedule(t, a.TE(t), g, opts.Threads)
		if err != nil {
			return nil, fmt.Errorf("partition: %w", err)
		}
		s := stage{sched, price}
		if opts.Strategy == PerTE {
			if !s.unfusedTensorCores(t, opts.Threads, g) {
				s.Unfused(t.Bytes())
			}
			if s.Kind == schedule.Elementwise {
				s.setVectorPath(t) // a kernel of its own: a vector a thread
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
			rows(t, pl, pl.stageGPU(t))
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
	if opts.Strategy != PerTE {
		pipelines := deepenPipelines(c, starts)
		if streams := deepenStreams(c, starts); pipelines || streams {
			c = newCoster(pl, stages, opts) // priced with the deeper pipelines' and streams' load paths
		}
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
		placePrefetches(pl)
	}
	return pl, nil
}

// split turns a row reduction with too few outputs to fill the GPU and a
// long enough range into a two-phase split reduction, when the cost model
// prices the split's chunks on more SMs, plus its two grid syncs, below a
// block per output (cost.SplitPays). An f32 sum, max or min is split in
// partial values; an argmax or argmin in partial (value, position) pairs,
// in chunks of whole passes of its blocks' loads (argChunks).
func split(t *te.Tensor, s stage, g gpu.Model) {
	if s.Kind != schedule.RowReduce {
		return
	}
	reds := te.TopReduces(t.Body)
	arg := len(reds) == 1 && reds[0].Op.IsArg() // pairs of value and position (argChunks)
	if len(reds) != 1 || te.TypeOf(reds[0]) != te.F32 && !arg || reds[0].Op == te.Prod {
		return
	}
	n, ext := t.NumElements(), product(reds[0].Axes)
	full := g.ResidentBlocks(s.Resources().Block())
	if 2*n > full || ext < splitMin {
		return
	}
	chunks := max(2, min(full/n, ext/(4*s.Threads)))
	if arg {
		chunks = argChunks(ext, s.Threads, full/n)
	}
	if !cost.SplitPays(g, s.Bytes, n, chunks) {
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
		if r < g.SMs && !cost.FewRowsPay(g, s.Bytes, r) || product(t.Axes[l:]) < 32 {
			continue
		}
		s.Kind, s.RowAxes, s.Tiles = schedule.Rows, l, r
		s.setVectorPath(t)
		return
	}
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
