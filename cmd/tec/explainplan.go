package main

import (
	"tec/partition"
	"tec/pipeline"
	"tec/te"
)

// planReport is the "plan" object of "tec explain --plan --json": how the
// pipeline cuts the program into kernels, and why it cuts where it does.
// docs/cli.md gives the schema.
type planReport struct {
	GPU      string       `json:"gpu"`
	Level    int          `json:"level"`
	Strategy string       `json:"strategy"`
	Kernels  []planKernel `json:"kernels"`
}

type planKernel struct {
	Stages      []string      `json:"stages"`
	Grid        int           `json:"grid"`
	BlocksPerSM int           `json:"blocks_per_sm"`
	Threads     int           `json:"threads"`
	SharedBytes int           `json:"shared_bytes"`
	Registers   int           `json:"registers_per_thread"`
	GridSyncs   int           `json:"grid_syncs"`
	PredictedMS jsonFloat     `json:"predicted_ms"`
	Boundary    *planBoundary `json:"boundary,omitempty"`
	// OnChip are the results kept in shared memory, Spilled those spilled
	// to global memory when the budget ran out (-O4).
	OnChip  []string `json:"on_chip,omitempty"`
	Spilled []string `json:"spilled,omitempty"`
	// WeightCache is the kernel's cache of reused weights (-O4).
	WeightCache *planCache `json:"weight_cache,omitempty"`
}

// planCache describes a partition.WeightCache.
type planCache struct {
	Stages      []string `json:"stages"`
	Slices      int      `json:"slices"`
	SliceBytes  int      `json:"slice_bytes"`
	Slots       int      `json:"slots"`
	Virtual     int      `json:"virtual_blocks"`
	Resident    int      `json:"resident"`
	SharedBytes int      `json:"shared_bytes"`
}

type planBoundary struct {
	Before   string    `json:"before"`
	Reason   string    `json:"reason"`
	MergedMS jsonFloat `json:"merged_ms"`
	SplitMS  jsonFloat `json:"split_ms"`
}

// plan runs the pipeline up to its partition plan for prog.
func plan(prog *te.Program, opts pipeline.Options) (*partition.Plan, error) {
	res, err := pipeline.Build(prog, opts)
	if err != nil {
		return nil, err
	}
	return res.Plan, nil
}

func newPlanReport(pl *partition.Plan, level int) *planReport {
	r := &planReport{GPU: pl.GPU.Name, Level: level, Strategy: pl.Strategy.String(), Kernels: []planKernel{}}
	for _, k := range pl.Kernels {
		kr := planKernel{
			Grid:        k.Grid,
			BlocksPerSM: k.BlocksPerSM,
			Threads:     k.Resources.Threads,
			SharedBytes: k.Resources.SharedBytes,
			Registers:   k.Resources.RegsPerThread,
			GridSyncs:   k.GridSyncs,
			PredictedMS: jsonFloat(k.Cost.Total() * 1e3),
		}
		kr.Stages = names(k.Stages)
		kr.OnChip, kr.Spilled = names(k.OnChip), names(k.Spilled)
		if c := k.Cache; c != nil {
			kr.WeightCache = &planCache{Stages: names(c.Stages), Slices: c.Keys, SliceBytes: 4 * c.SliceFloats,
				Slots: c.Slots, Virtual: c.Virtual, Resident: c.Resident(), SharedBytes: c.Bytes()}
		}
		if b := k.Boundary; b != nil {
			kr.Boundary = &planBoundary{Before: b.Before.Name, Reason: b.Reason,
				MergedMS: jsonFloat(b.MergedCost * 1e3), SplitMS: jsonFloat(b.SplitCost * 1e3)}
		}
		r.Kernels = append(r.Kernels, kr)
	}
	return r
}

// names returns the names of ts.
func names(ts []*te.Tensor) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}
