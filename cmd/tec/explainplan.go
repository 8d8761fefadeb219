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
		for _, s := range k.Stages {
			kr.Stages = append(kr.Stages, s.Name)
		}
		if b := k.Boundary; b != nil {
			kr.Boundary = &planBoundary{Before: b.Before.Name, Reason: b.Reason,
				MergedMS: jsonFloat(b.MergedCost * 1e3), SplitMS: jsonFloat(b.SplitCost * 1e3)}
		}
		r.Kernels = append(r.Kernels, kr)
	}
	return r
}
