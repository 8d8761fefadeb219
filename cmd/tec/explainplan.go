package main

import (
	"fmt"
	"strings"

	"tec/backend/kir"
	"tec/driver"
	"tec/gpu"
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
	Flash    []planFlash  `json:"flash,omitempty"`
	Groups   []planGroups `json:"groups,omitempty"`
	Pads     []planPads   `json:"pads,omitempty"`
	Kernels  []planKernel `json:"kernels"`
}

// planPads is the pad pass's choice for softmax sites of one text (the
// layers of a model): pipeline.PadChoice.
type planPads struct {
	Sites       []string  `json:"sites"`
	Positions   int       `json:"positions"`
	PaddedTo    int       `json:"padded_to"`
	Padded      bool      `json:"padded"`
	PredictedUS jsonFloat `json:"predicted_us"`
	AsIsUS      jsonFloat `json:"as_is_us"`
}

// planGroups is the groups pass's choice for grouped convolutions of one
// text (a model's repeated blocks): pipeline.GroupChoice.
type planGroups struct {
	Convolutions []string  `json:"convolutions"`
	Groups       int       `json:"groups"`
	Channels     int       `json:"channels"`
	Grouped      bool      `json:"grouped"`
	PredictedUS  jsonFloat `json:"predicted_us"`
	AsIsUS       jsonFloat `json:"as_is_us"`
}

// planFlash is the flash pass's choice for softmax sites of one text
// (the layers of a model): pipeline.FlashChoice.
type planFlash struct {
	Sites        []string  `json:"sites"`
	Positions    int       `json:"positions"`
	Chunks       int       `json:"chunks"`
	ScoresSplit  bool      `json:"scores_split"`
	HeadsGrouped bool      `json:"heads_grouped"`
	PredictedUS  jsonFloat `json:"predicted_us"`
	UnsplitUS    jsonFloat `json:"unsplit_us"`
}

// alike are the choices of a pass, each with the sites it was made for
// (the layers of a model): those of equal choice and predictions one,
// the first site's choice, and every site's name.
type alike[T any] struct {
	choice T
	sites  []string
}

// sameChoices returns cs grouped into those equal but for their site's
// name (site returns it, anon clears it), in program order.
func sameChoices[T comparable](cs []T, site func(T) string, anon func(T) T) []alike[T] {
	var out []alike[T]
	at := map[T]int{} // by the choice, its site cleared
	for _, c := range cs {
		key := anon(c)
		i, seen := at[key]
		if !seen {
			i = len(out)
			at[key] = i
			out = append(out, alike[T]{choice: c})
		}
		out[i].sites = append(out[i].sites, site(c))
	}
	return out
}

// flashGroups returns the flash pass's choices, those of equal split,
// positions and predictions one group, in program order.
func flashGroups(cs []pipeline.FlashChoice) []alike[pipeline.FlashChoice] {
	return sameChoices(cs, func(c pipeline.FlashChoice) string { return c.Max },
		func(c pipeline.FlashChoice) pipeline.FlashChoice { c.Max = ""; return c })
}

// convGroups returns the groups pass's choices, those of equal groups,
// choice and predictions one group, in program order.
func convGroups(cs []pipeline.GroupChoice) []alike[pipeline.GroupChoice] {
	return sameChoices(cs, func(c pipeline.GroupChoice) string { return c.Conv },
		func(c pipeline.GroupChoice) pipeline.GroupChoice { c.Conv = ""; return c })
}

// padGroups returns the pad pass's choices, those of equal positions,
// choice and predictions one group, in program order.
func padGroups(cs []pipeline.PadChoice) []alike[pipeline.PadChoice] {
	return sameChoices(cs, func(c pipeline.PadChoice) string { return c.Max },
		func(c pipeline.PadChoice) pipeline.PadChoice { c.Max = ""; return c })
}

// padsReport returns the pad pass's choices as "tec explain --plan --json"
// writes them.
func padsReport(cs []pipeline.PadChoice) []planPads {
	var out []planPads
	for _, g := range padGroups(cs) {
		c := g.choice
		out = append(out, planPads{Sites: g.sites, Positions: c.Positions, PaddedTo: c.To, Padded: c.Padded,
			PredictedUS: jsonFloat(c.Time * 1e6), AsIsUS: jsonFloat(c.AsIs * 1e6)})
	}
	return out
}

// groupsReport returns the groups pass's choices as "tec explain --plan
// --json" writes them.
func groupsReport(cs []pipeline.GroupChoice) []planGroups {
	var out []planGroups
	for _, g := range convGroups(cs) {
		c := g.choice
		out = append(out, planGroups{Convolutions: g.sites, Groups: c.Groups, Channels: c.Channels, Grouped: c.Grouped,
			PredictedUS: jsonFloat(c.Time * 1e6), AsIsUS: jsonFloat(c.AsIs * 1e6)})
	}
	return out
}

// likeIt returns what follows a choice's line for the sites beyond the
// first that share it: "; and 1 site like it (a)", "; and 2 sites like it
// (a to b)".
func likeIt(sites []string, what string) string {
	switch n := len(sites); {
	case n == 2:
		return fmt.Sprintf("; and 1 %s like it (%s)", what, sites[1])
	case n > 2:
		return fmt.Sprintf("; and %d %ss like it (%s to %s)", n-1, what, sites[1], sites[n-1])
	}
	return ""
}

// flashReport returns the flash pass's choices as "tec explain --plan
// --json" writes them.
func flashReport(cs []pipeline.FlashChoice) []planFlash {
	var out []planFlash
	for _, g := range flashGroups(cs) {
		c := g.choice
		out = append(out, planFlash{Sites: g.sites, Positions: c.Positions, Chunks: max(c.Split.Chunks, 1), ScoresSplit: c.Split.Scores,
			HeadsGrouped: c.Split.Group && !c.Split.Scores, PredictedUS: jsonFloat(c.Time * 1e6), UnsplitUS: jsonFloat(c.Unsplit * 1e6)})
	}
	return out
}

type planKernel struct {
	Stages []string `json:"stages"`
	// StageCosts are the cost model's predictions of the stages, in
	// their order (the cost strategy, -O3 and up): each one's time, what
	// it moves from DRAM, and what bounds it.
	StageCosts []planStage `json:"stage_costs,omitempty"`
	// Grid is the blocks the kernel is launched with, as in tec build's
	// report; PlanGrid is the plan's all-resident grid, and GridReason
	// says why Grid differs from it.
	Grid        int    `json:"grid"`
	Resident    bool   `json:"resident"`
	PlanGrid    int    `json:"plan_grid"`
	GridReason  string `json:"grid_reason,omitempty"`
	BlocksPerSM int    `json:"blocks_per_sm"`
	Threads     int    `json:"threads"`
	SharedBytes int    `json:"shared_bytes"`
	Registers   int    `json:"registers_per_thread"`
	// RegistersUsed is the registers per thread that the plan's occupancy
	// counted, RegistersSource where that figure came from ("estimate",
	// Registers, or "ptxas"), and PTXASRegisters what ptxas allocated
	// to the kernel as built (--ptxas), with the bytes it spilled;
	// BoundDropped the blocks per SM of the launch bound that the register
	// check dropped (driver.KernelRegisters.BoundDropped).
	RegistersUsed   int           `json:"registers_used"`
	RegistersSource string        `json:"registers_source"`
	PTXASRegisters  int           `json:"ptxas_registers,omitempty"`
	SpillStores     int           `json:"spill_stores,omitempty"`
	SpillLoads      int           `json:"spill_loads,omitempty"`
	BoundDropped    int           `json:"bound_dropped,omitempty"`
	GridSyncs       int           `json:"grid_syncs"`
	PredictedMS     jsonFloat     `json:"predicted_ms"`
	Boundary        *planBoundary `json:"boundary,omitempty"`
	// OnChip are the results kept in shared memory, Spilled those spilled
	// to global memory when the budget ran out (-O4).
	OnChip  []string `json:"on_chip,omitempty"`
	Spilled []string `json:"spilled,omitempty"`
	// WeightCache is the kernel's cache of reused weights (-O4).
	WeightCache *planCache `json:"weight_cache,omitempty"`
}

// planStage is driver.StagePrediction with its time written as
// jsonFloat does.
type planStage struct {
	Stage         string    `json:"stage"`
	PredictedUS   jsonFloat `json:"predicted_us"`
	DRAMBytes     int64     `json:"dram_bytes"`
	Bound         string    `json:"bound"`
	LoadBytes     int       `json:"load_bytes,omitempty"`
	LoadsInFlight int       `json:"loads_in_flight,omitempty"`
}

// planCache describes a schedule.WeightCache.
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

// kernelPlan is what "tec explain --plan" reports: the partition plan, and
// the grid that the lowering gave each of its kernels.
type kernelPlan struct {
	*partition.Plan
	Launch []partition.Launch
	// Flash are the flash pass's choices, Groups the groups pass's, Pads
	// the pad pass's.
	Flash  []pipeline.FlashChoice
	Groups []pipeline.GroupChoice
	Pads   []pipeline.PadChoice
	// Registers says which register figure each kernel's occupancy
	// counted.
	Registers *driver.RegisterCheck
}

// String formats the plan with the launched grids, and the register
// figure of each kernel.
func (p *kernelPlan) String() string {
	var b strings.Builder
	if groups := flashGroups(p.Flash); len(groups) > 0 {
		b.WriteString("flash-decoding, as the cost model chose it for each softmax over more positions than rows:\n")
		for _, g := range groups {
			fmt.Fprintf(&b, "  %s%s\n", g.choice, likeIt(g.sites, "site"))
		}
	}
	if groups := convGroups(p.Groups); len(groups) > 0 {
		b.WriteString("grouped convolutions, as the cost model chose them:\n")
		for _, g := range groups {
			fmt.Fprintf(&b, "  %s%s\n", g.choice, likeIt(g.sites, "convolution"))
		}
	}
	if groups := padGroups(p.Pads); len(groups) > 0 {
		b.WriteString("softmax axes padded to 16-byte rows, as the cost model chose them:\n")
		for _, g := range groups {
			fmt.Fprintf(&b, "  %s%s\n", g.choice, likeIt(g.sites, "site"))
		}
	}
	b.WriteString(p.Format(p.Launch))
	if s := registerSummary(p.Registers); s != "" {
		fmt.Fprintf(&b, "%s\n", s)
	}
	if p.Registers == nil {
		return b.String()
	}
	b.WriteString("registers per thread that each kernel's occupancy counts:\n")
	for i, k := range p.Registers.Kernels {
		fmt.Fprintf(&b, "  kernel %d (%s): %d, %s", i, k.Kernel, k.Planned, registerSource(k))
		b.WriteByte('\n')
	}
	return b.String()
}

// registerSource says where kernel k's register figure came from, what
// ptxas allocated to the kernel as the build ships it, and whether the
// register check dropped its blocks-per-SM bound.
func registerSource(k driver.KernelRegisters) string {
	s := "the planned estimate"
	switch {
	case k.FromPTXAS:
		s = fmt.Sprintf("ptxas (the planned estimate was %d)", k.Estimate)
	case k.PTXAS > 0 && k.BoundDropped == 0:
		s += fmt.Sprintf(" (ptxas: %d under the kernel's launch bounds, %s)", k.PTXAS, spillNote(k.Function))
	}
	if k.BoundDropped > 0 {
		s += fmt.Sprintf("; ptxas spilled under its bound of %s even when planned again, so the kernel is bounded by its threads alone", blocksPerSM(k.BoundDropped))
		if k.PTXAS > 0 {
			s += fmt.Sprintf(" (ptxas: %d)", k.PTXAS)
		}
	}
	return s
}

// spillNote says what ptxas spilled of a kernel as it ships (f: nil where
// not known): nothing, or its bytes, around its calls where it calls
// functions (the saves the register check accepts, driver's loopSpills).
func spillNote(f *driver.PTXASFunction) string {
	if f == nil || f.SpillStores == 0 && f.SpillLoads == 0 {
		return "without spilling"
	}
	where := ""
	if f.Calls {
		where = " around its calls"
	}
	return fmt.Sprintf("%d B spilled and %d B reloaded%s", f.SpillStores, f.SpillLoads, where)
}

// plan runs the pipeline for prog, checking the kernels' registers with
// tool for tg (driver.CompileChecked), and returns its partition plan
// with the grid of each kernel it lowered.
func (e *env) plan(c *command, prog *te.Program, opts pipeline.Options, tg gpu.Arch, tool driver.Toolchain) (*kernelPlan, error) {
	res, err := e.compileChecked(c, prog, opts, tg, tool)
	if err != nil {
		return nil, err
	}
	launch, err := launches(res.Plan, res.Module)
	if err != nil {
		return nil, err
	}
	return &kernelPlan{Plan: res.Plan, Launch: launch, Registers: res.Registers, Flash: res.Flash, Groups: res.Groups, Pads: res.Pads}, nil
}

// launches returns the grid that kernel i of m, lowered from kernel i of
// pl, is launched with: the blocks that tec build's report counts (see
// driver.Compiled.Report), and why they are not the plan's grid where they are not.
// A module may end with one kernel more than the plan, the kernel that
// applies the program's in-place updates (te.Update), which no plan kernel
// lowers to.
func launches(pl *partition.Plan, m *kir.Module) ([]partition.Launch, error) {
	lowered := len(m.Kernels)
	if lowered == len(pl.Kernels)+1 && len(pl.Program.Updates()) > 0 {
		lowered--
	}
	if lowered != len(pl.Kernels) {
		return nil, fmt.Errorf("the plan has %d kernels but the kernel IR %d", len(pl.Kernels), len(m.Kernels))
	}
	resident := driver.ResidentBlocks(m, pl.GPU)
	out := make([]partition.Launch, len(pl.Kernels))
	for i, pk := range pl.Kernels {
		k := m.Kernels[i]
		l := partition.Launch{Blocks: k.Grid.Size(resident), Resident: k.Grid.Resident}
		if l.Blocks != pk.Grid {
			l.Reason = launchReason(pk, k, pl.GPU, l.Blocks)
		}
		out[i] = l
	}
	return out, nil
}

// launchReason says why kernel k, lowered from pk, launches blocks blocks
// rather than the plan's all-resident grid.
func launchReason(pk *partition.Kernel, k *kir.Kernel, g gpu.Model, blocks int) string {
	if !k.Grid.Resident {
		return fmt.Sprintf("not all-resident: the unfused lowering tiles it into %d blocks, the plan's schedule into %d", blocks, pk.Grid)
	}
	res := pk.Resources
	res.Threads, res.SharedBytes = max(res.Threads, k.Block), max(res.SharedBytes, int(k.SharedBytes()))
	if fit := g.ResidentBlocks(res.Block()); blocks >= fit {
		return fmt.Sprintf("the kernel's %d B of shared memory per block (the plan estimated %d B) let only %d blocks be resident",
			res.SharedBytes, pk.Resources.SharedBytes, fit)
	}
	return fmt.Sprintf("the kernel has work for %d blocks only", blocks)
}

func newPlanReport(p *kernelPlan, level int) *planReport {
	pl := p.Plan
	r := &planReport{GPU: pl.GPU.Name, Level: level, Strategy: pl.Strategy.String(), Flash: flashReport(p.Flash), Groups: groupsReport(p.Groups), Pads: padsReport(p.Pads), Kernels: []planKernel{}}
	for i, k := range pl.Kernels {
		kr := planKernel{
			Grid:        p.Launch[i].Blocks,
			Resident:    p.Launch[i].Resident,
			PlanGrid:    k.Grid,
			GridReason:  p.Launch[i].Reason,
			BlocksPerSM: k.BlocksPerSM,
			Threads:     k.Resources.Threads,
			SharedBytes: k.Resources.SharedBytes,
			Registers:   k.Resources.RegsPerThread,
			GridSyncs:   k.GridSyncs,
			PredictedMS: jsonFloat(k.Cost.Total() * 1e3),
		}
		kr.Stages = names(k.Stages)
		kr.StageCosts = stageCosts(pl, k)
		kr.RegistersUsed, kr.RegistersSource = k.Resources.RegsPerThread, "estimate"
		if p.Registers != nil && i < len(p.Registers.Kernels) {
			rk := p.Registers.Kernels[i]
			kr.Registers, kr.RegistersUsed, kr.RegistersSource, kr.PTXASRegisters = rk.Estimate, rk.Planned, rk.Source(), rk.PTXAS
			kr.BoundDropped = rk.BoundDropped
			if f := rk.Function; f != nil {
				kr.SpillStores, kr.SpillLoads = f.SpillStores, f.SpillLoads
			}
		}
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

// stageCosts returns the predictions of kernel k's stages in plan pl
// (driver.StagePredictions); none where the plan has none (-O0 to -O2).
func stageCosts(pl *partition.Plan, k *partition.Kernel) []planStage {
	var out []planStage
	for _, sp := range driver.StagePredictions(pl, k) {
		out = append(out, planStage{Stage: sp.Stage, PredictedUS: jsonFloat(sp.PredictedUS), DRAMBytes: sp.DRAMBytes,
			Bound: sp.Bound, LoadBytes: sp.LoadBytes, LoadsInFlight: sp.LoadsInFlight})
	}
	return out
}

// names returns the names of ts.
func names(ts []*te.Tensor) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}
