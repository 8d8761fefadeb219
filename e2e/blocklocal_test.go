package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/backend/sim"
	"tec/examples"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/partition"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
)

// headDefines is a small Llama decode step whose attention is a
// block-local chain at -O4: head dim 32 (two 16-column matrix-vector
// tiles per head unless aligned), a context of 64 (row reductions for
// the maximum and the sum).
var headDefines = map[string]string{"P": "8", "T": "64", "L": "2", "D": "128", "NH": "4", "NKV": "2", "FF": "64", "V": "64"}

func headDecode(t *testing.T, b int) *te.Program {
	t.Helper()
	ex, ok := examples.Lookup("llama/decode")
	if !ok {
		t.Fatal("no example llama/decode")
	}
	defines := maps.Clone(headDefines)
	defines["B"] = fmt.Sprint(b)
	p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: defines, Model: ex.Model})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return p
}

// TestBlockLocalAttention builds a small decode step at B = 1 and 2 on
// the H100 model at every level and checks, in the simulator with race
// detection on several resident grids, that it gives the reference's
// outputs race-free. At -O4 each layer's attention is block-local: the
// scores, their maximum and sum and the context take one tile per head
// (the context's tiles aligned with the heads), separated by block
// barriers, not grid syncs, and the scores wait on per-tile counters for
// the rotated keys of their key head (the rotated queries come from the
// same block); the kernels keep exactly the plan's grid syncs. A planted misalignment (the context's tiles
// shifted by one head onto other blocks) is reported as a race.
func TestBlockLocalAttention(t *testing.T) {
	g, _ := gpu.Builtin("h100")
	for _, b := range []int{1, 2} {
		p := headDecode(t, b)
		in := feeds(p, 3)
		want, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for level := 0; level <= pipeline.MaxLevel; level++ {
			t.Run(fmt.Sprintf("B%d/O%d", b, level), func(t *testing.T) {
				res, err := pipeline.Build(p, pipeline.Options{Level: level, GPU: g})
				if err != nil {
					t.Fatal(err)
				}
				for _, blocks := range []int{resident, 3} {
					out := simulate(t, res.Module, in, sim.Options{Race: true, ResidentBlocks: blocks})
					if out.RaceCount > 0 {
						t.Errorf("%d resident blocks: %d races; first: %s", blocks, out.RaceCount, out.Races[0])
					}
					for _, o := range p.Outputs {
						if mm, err := numeric.Compare(out.Outputs[o.Name], want[o.Name], tolModel); err != nil || mm != nil {
							t.Errorf("%d resident blocks: output %s: %v %v", blocks, o.Name, err, mm)
						}
					}
				}
				if level == pipeline.MaxLevel {
					blockLocalBF16(t, p, in, g)
					noGridSyncBefore(t, res.Module, attention...)
					checkBlockLocal(t, res, b*4, 2, attention...)
					misaligned(t, res.Module, in, "ctx", "ctx")
				}
			})
		}
	}
}

// blockLocalBF16 builds p at -O4 and --precision bf16 on g and checks,
// race-checked in the simulator, that its logits equal those of the
// reference evaluation of the bf16 program (the same rounding points), and
// that its attention is still block-local.
func blockLocalBF16(t *testing.T, p *te.Program, in map[string]*te.Array, g gpu.Model) {
	t.Helper()
	q := precision.Apply(p, precision.BF16)
	qin := numeric.ConformFeeds(in, q)
	want, err := te.Evaluate(q, qin, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.Build(p, pipeline.Options{Level: pipeline.MaxLevel, GPU: g, Precision: precision.BF16})
	if err != nil {
		t.Fatal(err)
	}
	noGridSyncBefore(t, res.Module, attention...)
	out := simulate(t, res.Module, qin, sim.Options{Race: true, ResidentBlocks: resident})
	if out.RaceCount > 0 {
		t.Errorf("bf16: %d races; first: %s", out.RaceCount, out.Races[0])
	}
	if e := numeric.RelError(out.Outputs["logits"], want["logits"]); !(e <= 1e-2) {
		t.Errorf("bf16: logits' relative error %.3g against the bf16 reference, want <= 1e-2", e)
	}
}

// attention is the chain of a layer's attention stages, from the scores
// to the context.
var attention = []string{"sc", "mx", "den", "ctx"}

// checkBlockLocal checks that each of the layers' stages of chain (a
// prefix of attention) are one kernel's stages with a tile per head each
// (heads in all the sequences) and no grid sync among them or before the
// scores (counters instead).
func checkBlockLocal(t *testing.T, res *pipeline.Result, heads, layers int, chain ...string) {
	t.Helper()
	for l := range layers {
		suffix := ""
		if l > 0 {
			suffix = fmt.Sprintf(".%d", l)
		}
		k, at := stageOf(res.Plan, "sc"+suffix)
		if k == nil {
			t.Fatalf("no stage sc%s in the plan", suffix)
		}
		for i, name := range chain {
			name += suffix
			if at+i >= len(k.Stages) || k.Stages[at+i].Name != name {
				t.Fatalf("stage %d after sc%s is not %s:\n%s", i, suffix, name, res.Plan)
			}
			if s := res.Plan.Schedules[k.Stages[at+i]]; s.Tiles != heads {
				t.Errorf("%s has %d tiles, want one per head (%d)", name, s.Tiles, heads)
			}
			if i > 0 && k.Sync[at+i] != partition.BlockSync {
				t.Errorf("%s follows a %v, want a block barrier:\n%s", name, k.Sync[at+i], res.Plan)
			}
			if i == 0 && k.Sync[at] == partition.GridSync && k.Counters[at] == nil {
				t.Errorf("%s follows a grid sync, want counters:\n%s", name, res.Plan)
			}
		}
	}
}

// noGridSyncBefore checks that no grid sync precedes a stage of m named
// one of names or one of them with a layer's suffix (sc.1).
func noGridSyncBefore(t *testing.T, m *kir.Module, names ...string) {
	t.Helper()
	for _, k := range m.Kernels {
		for i, s := range k.Body {
			st, ok := s.(*kir.Stage)
			if !ok || i == 0 || !slices.Contains(names, strings.SplitN(st.Name, ".", 2)[0]) {
				continue
			}
			if _, sync := k.Body[i-1].(*kir.GridSync); sync {
				t.Errorf("kernel %s: a grid sync before stage %s", k.Name, st.Name)
			}
		}
	}
}

// stageOf returns the kernel of pl holding the stage named name, and its
// position there.
func stageOf(pl *partition.Plan, name string) (*partition.Kernel, int) {
	for _, k := range pl.Kernels {
		for i, s := range k.Stages {
			if s.Name == name {
				return k, i
			}
		}
	}
	return nil, -1
}

// misaligned shifts the tiles of the first layer's stage shift one row
// on (tile r runs on the block after the one that computed row r of the
// stages before it) in a copy of m's kernel IR and checks that the
// simulator reports a race in stage want: the context of a chain
// (blocklocal's attention), or a merge whose counters order only its
// chain's last stage.
func misaligned(t *testing.T, m *kir.Module, in map[string]*te.Array, shift, want string) {
	t.Helper()
	shifted := false
	for _, k := range m.Kernels {
		for _, s := range k.Body {
			st, ok := s.(*kir.Stage)
			if !ok || st.Name != shift {
				continue
			}
			for i, x := range st.Body {
				if f, ok := x.(*kir.For); ok && f.Kind == kir.GridStride {
					st.Body[i] = shiftTiles(f)
					shifted = true
				}
			}
		}
	}
	if !shifted {
		t.Fatalf("no grid-stride loop in stage %s to shift", shift)
	}
	out, err := sim.Run(m, in, sim.Options{Race: true, ResidentBlocks: resident, MaxRaces: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	if out.RaceCount == 0 {
		t.Fatalf("no race reported with the tiles of %s shifted by one row", shift)
	}
	for _, r := range out.Races {
		if strings.Contains(r.String(), ", stage "+want+": race") {
			return
		}
	}
	t.Errorf("%d races, none in stage %s; first: %s", out.RaceCount, want, out.Races[0])
}

// shiftTiles returns loop f (over tiles [0, n), f's body the tile's work)
// made to run tile r on the block that its trip r+1 lands on: a loop
// over [0, n+1) whose trip u computes tile u-1.
func shiftTiles(f *kir.For) *kir.For {
	hi := f.Hi.(*kir.Const)
	u := kir.NewVar(f.Var.Name+"_shift", te.I32)
	return &kir.For{Var: u, Kind: f.Kind, Lo: f.Lo, Hi: kir.I(int(hi.Value) + 1), Body: []kir.Stmt{
		&kir.Let{Var: f.Var, Value: kir.Sub(u, kir.I(1))},
		&kir.If{Cond: kir.Ge(f.Var, kir.I(0)), Then: f.Body},
	}}
}
