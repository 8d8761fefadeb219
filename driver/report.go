package driver

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"tec/backend/kir"
	"tec/backend/report"
	"tec/gpu"
)

// Report is the static cost report of a build (tec build --report); docs/cli.md
// documents its JSON fields.
type Report struct {
	Model          string         `json:"model"`
	Target         string         `json:"target"`
	GPU            string         `json:"gpu"`
	ResidentBlocks int            `json:"resident_blocks"`
	WorkspaceBytes int64          `json:"workspace_bytes"`
	Exact          bool           `json:"exact"`
	Total          ReportCounts   `json:"total"`
	Kernels        []ReportKernel `json:"kernels"`
	// Predicted is the cost model's prediction for the plan (not a
	// measurement).
	Predicted Prediction `json:"predicted"`
}

// Prediction is the cost model's prediction of a plan's time.
type Prediction struct {
	MS        float64 `json:"ms"`
	DRAMBytes int64   `json:"dram_bytes"`
	GridSyncs int     `json:"grid_syncs"`
	SyncMS    float64 `json:"grid_sync_ms"`
}

// ReportCounts are a kernel's or a module's static counts (kir.Counts).
type ReportCounts struct {
	LoadBytes     int64 `json:"load_bytes"`
	StoreBytes    int64 `json:"store_bytes"`
	FLOPs         int64 `json:"flops"`
	BlockBarriers int64 `json:"block_barriers"`
	GridSyncs     int64 `json:"grid_syncs"`
	Shuffles      int64 `json:"shuffles"`
	MMAs          int64 `json:"mmas"`
	// CounterSignals and CounterWaits count per-tile counter signals and
	// waits (kir.Signal, kir.Wait), once per block; absent when none.
	CounterSignals int64 `json:"counter_signals,omitempty"`
	CounterWaits   int64 `json:"counter_waits,omitempty"`
}

// ReportKernel is one kernel's launch and counts.
type ReportKernel struct {
	Name        string `json:"name"`
	Blocks      int    `json:"blocks"`
	Resident    bool   `json:"resident"`
	Threads     int    `json:"threads"`
	SharedBytes int64  `json:"shared_bytes"`
	ReportCounts
	Exact bool `json:"exact"`
	// Registers says which registers per thread the kernel's occupancy
	// counted; absent where the build did not say (Compile, not
	// CompileChecked).
	Registers *ReportRegisters `json:"registers,omitempty"`
	// Stages are the cost model's predictions of the kernel's stages, in
	// the plan's order; absent where the plan prices none (-O0 to -O2)
	// and for a kernel the plan does not list (the update of an input in
	// place).
	Stages []StagePrediction `json:"stages,omitempty"`
}

// ReportRegisters is a kernel's register figure (KernelRegisters).
type ReportRegisters struct {
	// PerThread is the figure the plan's occupancy counted, Source where
	// it came from: "estimate" (the planner's) or "ptxas".
	PerThread int    `json:"per_thread"`
	Source    string `json:"source"`
	Estimate  int    `json:"estimate"`
	// PTXAS is what ptxas allocated to the kernel as built (under its
	// launch bounds; KernelRegisters.PTXAS), and the bytes it spilled;
	// absent where ptxas did not run.
	PTXAS       int `json:"ptxas,omitempty"`
	SpillStores int `json:"spill_stores,omitempty"`
	SpillLoads  int `json:"spill_loads,omitempty"`
}

// reportRegisters returns kernel i's figures of check, or nil.
func reportRegisters(check *RegisterCheck, i int) *ReportRegisters {
	if check == nil || i >= len(check.Kernels) {
		return nil
	}
	k := check.Kernels[i]
	r := &ReportRegisters{PerThread: k.Planned, Source: k.Source(), Estimate: k.Estimate, PTXAS: k.PTXAS}
	if f := k.Function; f != nil {
		r.SpillStores, r.SpillLoads = f.SpillStores, f.SpillLoads
	}
	return r
}

func reportCounts(c kir.Counts) ReportCounts {
	return ReportCounts{LoadBytes: c.LoadBytes, StoreBytes: c.StoreBytes, FLOPs: c.FLOPs, BlockBarriers: c.BlockBarriers, GridSyncs: c.GridSyncs, Shuffles: c.Shuffles, MMAs: c.MMAs,
		CounterSignals: c.CounterSignals, CounterWaits: c.CounterWaits}
}

// ResidentBlocks estimates the blocks of an all-resident grid of m on g:
// every SM holds as many blocks of the module's largest block size as its
// thread and block limits allow (and g.MinRegsPerThread, where set).
func ResidentBlocks(m *kir.Module, g gpu.Model) int {
	threads := 1
	for _, k := range m.Kernels {
		threads = max(threads, k.Block)
	}
	perSM, _ := g.BlocksPerSM(gpu.Block{Threads: threads})
	return g.SMs * max(1, perSM)
}

// ErrNotFinite reports a prediction that is not a finite number.
var ErrNotFinite = errors.New("the cost model's prediction is not finite")

// Report returns the JSON of c's report, built for g and arch. A
// prediction that is not finite is an error that wraps ErrNotFinite: the
// report's numbers must be JSON numbers, and such a prediction comes from
// a GPU description whose rates no GPU has (a dram_bandwidth of 1e-300
// bytes per second is in range).
func (c *Compiled) Report(g gpu.Model, arch gpu.Arch) ([]byte, error) {
	m := c.Module
	g.MinRegsPerThread = max(g.MinRegsPerThread, c.Plan.GPU.MinRegsPerThread)
	blocks := ResidentBlocks(m, g)
	r := report.Module(m, report.Config{ResidentBlocks: blocks})
	_, syncs, cost := c.Plan.Stats()
	out := Report{Model: r.Module, Target: arch.Name, GPU: g.Name, ResidentBlocks: blocks,
		WorkspaceBytes: r.WorkspaceBytes, Exact: r.Exact, Total: reportCounts(r.Total), Kernels: []ReportKernel{},
		Predicted: Prediction{MS: cost.Total() * 1e3, DRAMBytes: cost.DRAM, GridSyncs: syncs, SyncMS: cost.Sync * 1e3}}
	values := []float64{out.Predicted.MS, out.Predicted.SyncMS}
	for _, pk := range c.Plan.Kernels {
		for _, sc := range pk.StageCosts {
			values = append(values, sc.Time)
		}
	}
	for _, v := range values {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("%w: %g ms for model %s on %s", ErrNotFinite, v, m.Name, g.Name)
		}
	}
	for i, k := range r.Kernels {
		out.Kernels = append(out.Kernels, ReportKernel{Name: k.Name, Blocks: k.Blocks, Resident: k.Resident, Threads: k.Threads,
			SharedBytes: k.SharedBytes, ReportCounts: reportCounts(k.Counts), Exact: k.Exact, Registers: reportRegisters(c.Registers, i)})
		if i < len(c.Plan.Kernels) {
			out.Kernels[i].Stages = StagePredictions(c.Plan, c.Plan.Kernels[i])
		}
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return append(data, '\n'), nil
}
