package e2e

import (
	"fmt"
	"testing"

	"tec/backend/sim"
	"tec/examples"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/partition"
	"tec/pipeline"
	"tec/schedule"
	"tec/te"
)

// TestMechanisms runs examples at configurations, larger than tiny, where
// the pipeline's mechanisms that tiny shapes do not reach come into play,
// and checks that they did and that the result is still right: row
// reductions consumed by Rows stages and kept in shared memory (-O4),
// split reductions with atomics or, deterministically, partials (-O3 on
// the A100, whose grid outnumbers the outputs), and contractions whose
// threads compute several outputs each.
func TestMechanisms(t *testing.T) {
	for _, tt := range []struct {
		example       string
		defines       map[string]string
		gpu           string
		level         int
		deterministic bool
		onChip        int // bytes; 0 for the default
		want          func(*partition.Plan) bool
		what          string
	}{
		{"layernorm", map[string]string{"S": "16", "D": "128"}, "small", 4, false, 0, hasRows, "Rows stages"},
		{"layernorm", map[string]string{"S": "16", "D": "128"}, "small", 4, false, 0, hasOnChip, "results on chip"},
		{"softmax", map[string]string{"N": "16", "D": "128"}, "small", 4, false, 0, hasBlockSync, "block-barrier reuse"},
		{"bert", map[string]string{"L": "1", "S": "16", "D": "128", "NH": "2", "FF": "256"}, "small", 4, false, 0, hasRows, "Rows stages"},
		{"bert", map[string]string{"L": "1", "S": "64", "D": "128", "NH": "2", "FF": "256"}, "small", 3, false, 0, hasRegTile, "register tiles"},
		{"softmax", map[string]string{"N": "4", "D": "65536"}, "a100", 3, false, 0, hasSplit, "split reductions"},
		{"softmax", map[string]string{"N": "4", "D": "65536"}, "a100", 4, true, 0, hasSplit, "split reductions"},
		{"layernorm", map[string]string{"S": "2", "D": "65536"}, "h100", 4, true, 0, hasSplit, "split reductions"},
	} {
		name := fmt.Sprintf("%s/%v/%s/O%d/det=%v/%s", tt.example, tt.defines, tt.gpu, tt.level, tt.deterministic, tt.what)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ex, _ := examples.Lookup(tt.example)
			p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: tt.defines})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			g, _ := gpu.Builtin(tt.gpu)
			checkMechanism(t, p, pipeline.Options{Level: tt.level, GPU: g, Deterministic: tt.deterministic, OnChipBytes: tt.onChip}, tt.want, tt.what)
		})
	}
}

// norms is three layer normalisations in a row, each of the last two
// normalising the tanh of the one before: row statistics whose lives in
// one kernel follow one another.
const norms = `
const S = 16
const D = 128
model norms {
  input x: f32[S, D]
  mu1[s] = sum[d](x[s, d]) / D
  var1[s] = sum[d]((x[s, d] - mu1[s]) * (x[s, d] - mu1[s])) / D
  y1[s, d] = tanh((x[s, d] - mu1[s]) * rsqrt(var1[s] + 1e-5))
  mu2[s] = sum[d](y1[s, d]) / D
  var2[s] = sum[d]((y1[s, d] - mu2[s]) * (y1[s, d] - mu2[s])) / D
  y2[s, d] = tanh((y1[s, d] - mu2[s]) * rsqrt(var2[s] + 1e-5))
  mu3[s] = sum[d](y2[s, d]) / D
  var3[s] = sum[d]((y2[s, d] - mu3[s]) * (y2[s, d] - mu3[s])) / D
  y3[s, d] = (y2[s, d] - mu3[s]) * rsqrt(var3[s] + 1e-5)
  output y3
}
`

// TestOnChipSlots checks the shared arrays of results kept on chip (-O4):
// statistics whose lives do not overlap share one, and when the budget is
// too small for all that are live, the least recently used is spilled to
// global memory; either way the result is right and race-free.
func TestOnChipSlots(t *testing.T) {
	p, diags := lang.Check("norms.te", []byte(norms), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g, _ := gpu.Builtin("small")
	for _, tt := range []struct {
		budget int
		want   func(*partition.Plan) bool
		what   string
	}{
		{0, hasSharedSlot, "on-chip slots shared"},
		{64, hasSpill, "LRU spills"},
	} {
		t.Run(tt.what, func(t *testing.T) {
			checkMechanism(t, p, pipeline.Options{Level: 4, GPU: g, OnChipBytes: tt.budget}, tt.want, tt.what)
		})
	}
}

// checkMechanism builds p with opts, checks that the plan has what want
// looks for, and runs it twice in the simulator with race detection
// against the reference evaluator (and, with opts.Deterministic, checks
// the two runs agree bit for bit).
func checkMechanism(t *testing.T, p *te.Program, opts pipeline.Options, want func(*partition.Plan) bool, what string) {
	t.Helper()
	in := feeds(p, 2)
	ref, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.Build(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !want(res.Plan) {
		t.Errorf("no %s in the plan:\n%s", what, res.Plan)
	}
	var first map[string]*te.Array
	for run := range 2 {
		out := simulate(t, res.Module, in, sim.Options{Race: true, ResidentBlocks: resident})
		if out.RaceCount > 0 {
			t.Fatalf("%d races; first: %s", out.RaceCount, out.Races[0])
		}
		for _, o := range p.Outputs {
			mm, err := numeric.Compare(out.Outputs[o.Name], ref[o.Name], tolModel)
			if err != nil || mm != nil {
				t.Fatalf("output %s: %v %v", o.Name, err, mm)
			}
		}
		if run == 1 && opts.Deterministic {
			for n, a := range out.Outputs {
				for i := range a.Data {
					if a.Data[i] != first[n].Data[i] {
						t.Fatalf("output %s[%d] differs between runs", n, i)
					}
				}
			}
		}
		first = out.Outputs
	}
}

func stageKinds(pl *partition.Plan, f func(k *partition.Kernel, i int, s *schedule.Schedule) bool) bool {
	for _, k := range pl.Kernels {
		for i, t := range k.Stages {
			if f(k, i, pl.Schedules[t]) {
				return true
			}
		}
	}
	return false
}

func hasRows(pl *partition.Plan) bool {
	return stageKinds(pl, func(_ *partition.Kernel, _ int, s *schedule.Schedule) bool { return s.Kind == schedule.Rows })
}

func hasSplit(pl *partition.Plan) bool {
	return stageKinds(pl, func(_ *partition.Kernel, _ int, s *schedule.Schedule) bool { return s.Kind == schedule.SplitReduce })
}

func hasBlockSync(pl *partition.Plan) bool {
	return stageKinds(pl, func(k *partition.Kernel, i int, _ *schedule.Schedule) bool { return k.Sync[i] == partition.BlockSync })
}

func hasOnChip(pl *partition.Plan) bool {
	for _, k := range pl.Kernels {
		if len(k.OnChip) > 0 {
			return true
		}
	}
	return false
}

// hasSharedSlot reports whether two results on chip share a shared array.
func hasSharedSlot(pl *partition.Plan) bool {
	for _, k := range pl.Kernels {
		seen := map[int]bool{}
		for _, t := range k.OnChip {
			if seen[k.Slot[t]] {
				return true
			}
			seen[k.Slot[t]] = true
		}
	}
	return false
}

// hasSpill reports whether a result on chip was spilled to global memory.
func hasSpill(pl *partition.Plan) bool {
	for _, k := range pl.Kernels {
		if len(k.Spilled) > 0 {
			return true
		}
	}
	return false
}

// hasRegTile reports whether a contraction computes several outputs per
// thread in both dimensions.
func hasRegTile(pl *partition.Plan) bool {
	return stageKinds(pl, func(_ *partition.Kernel, _ int, s *schedule.Schedule) bool {
		return s.Kind == schedule.Contraction && s.RegM > 1 && s.RegN > 1
	})
}

// TestWeightCache checks the -O4 weight cache on an LSTM whose steps read
// each layer's weights again: the plan keeps the slices on chip, a tile
// computes a cell's four gates and the cell update in its epilogue, the
// result is right and race-free whether the grid has as many blocks as the
// plan's virtual blocks or fewer (slices then share slots and are
// reloaded), and a cache too small for every slice, whose slices evict one
// another, reads more global memory than one that holds them all.
func TestWeightCache(t *testing.T) {
	ex, _ := examples.Lookup("lstm")
	p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: map[string]string{"T": "4", "L": "3", "H": "16"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g, _ := gpu.Builtin("small")
	in := feeds(p, 2)
	ref, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A slice is K (x and h: 32) × columns × 4 gates of f32: 3 layers' worth
	// of 16-column slices, or, when only 4 KB fit, 6 of 8 columns.
	loads := map[string]int64{}
	for _, tt := range []struct {
		name                         string
		budget, grid                 int
		slices, slice, slots, reload int
	}{
		{"all resident", 0, resident, 3, 32 * 16 * 4 * 4, 1, 0},
		{"fewer blocks", 0, 3, 3, 32 * 16 * 4 * 4, 1, 0},
		{"too small", 32*8*4*4 + 4, resident, 6, 32 * 8 * 4 * 4, 1, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := pipeline.Build(p, pipeline.Options{Level: 4, GPU: g, ResidentBytes: tt.budget})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Plan.Kernels) != 1 || res.Plan.Kernels[0].Cache == nil {
				t.Fatalf("no weight cache in the plan:\n%s", res.Plan)
			}
			wc := res.Plan.Kernels[0].Cache
			if wc.Keys != tt.slices || wc.Slots != tt.slots || wc.Keys-wc.Resident() != tt.reload || wc.SliceFloats*4 != tt.slice {
				t.Errorf("cache %s; want %d slices of %d B, %d slots, %d reloaded", wc, tt.slices, tt.slice, tt.slots, tt.reload)
			}
			if !stageKinds(res.Plan, func(_ *partition.Kernel, _ int, s *schedule.Schedule) bool { return s.EpilogueOf != nil }) {
				t.Errorf("no cell update in a tile's epilogue:\n%s", res.Plan)
			}
			out := simulate(t, res.Module, in, sim.Options{Race: true, ResidentBlocks: tt.grid})
			if out.RaceCount > 0 {
				t.Fatalf("%d races; first: %s", out.RaceCount, out.Races[0])
			}
			mm, err := numeric.Compare(out.Outputs["y"], ref["y"], tolModel)
			if err != nil || mm != nil {
				t.Fatalf("output y: %v %v", err, mm)
			}
			loads[tt.name] = out.Total().LoadBytes
		})
	}
	if all, some := loads["all resident"], loads["too small"]; all == 0 || some <= all {
		t.Errorf("global loads: %d B with every slice resident, %d B with a cache too small; want fewer with every slice resident", all, some)
	}
}
