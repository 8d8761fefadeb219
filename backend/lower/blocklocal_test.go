package lower_test

import (
	"strings"
	"testing"

	"tec/analysis"
	"tec/backend/kir"
	"tec/backend/lower"
	"tec/backend/sim"
	"tec/gpu"
	tb "tec/internal/testkit/tebuild"
	"tec/partition"
	"tec/te"
)

// TestBlockLocalChain lowers a grouped-query attention planned with a
// block-local chain per head (partition's TestBlockLocalAttention: the
// scores as one matrix-vector tile per head, the maximum, sum and context
// on the same blocks after block barriers, counters for the keys) and
// checks that the kernel has one grid sync, that it is right and
// race-free on several grids, and that the simulator reports a race when
// the context's tiles are planted one head off the blocks that computed
// the head's scores, or the scores one head off the rotated queries.
func TestBlockLocalChain(t *testing.T) {
	p := tb.GQAAttention(8, 2, 64, 128)
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin("h100")
	// Launches and grid syncs five times the H100's, as partition's test
	// plans it: at 1 µs a sync the cost model keeps the scores in 64
	// tiles, a block per head's scalar loads costing more round trips.
	g.LaunchCost, g.GridSyncCost = 10e-6, 5e-6
	pl, err := partition.Partition(a, g, partition.Options{Split: true, Reuse: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := lower.Fused(p, pl, lower.FusedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(m.String(), "gridsync"); n != 1 {
		t.Errorf("%d grid syncs, want 1 (after ss):\n%s", n, m)
	}
	onGrids(t, m, p, 1, 3, 8, 1<<20)
	for _, stage := range []string{"ctx", "sc"} {
		m, err := lower.Fused(p, pl, lower.FusedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		shiftStage(t, m, stage)
		res, err := sim.Run(m, randomFeeds(p), sim.Options{Race: true, ResidentBlocks: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if res.RaceCount == 0 {
			t.Errorf("no race reported with stage %s's tiles one head off", stage)
		} else if r := res.Races[0].String(); !strings.Contains(r, "stage "+stage) {
			t.Errorf("race %q, want one in stage %s", r, stage)
		}
	}
}

// shiftStage makes the grid-stride loop over the tiles of m's stage name
// run tile r on the block that computes tile r+1 of the stages it reads.
func shiftStage(t *testing.T, m *kir.Module, name string) {
	t.Helper()
	for _, k := range m.Kernels {
		for _, s := range k.Body {
			st, ok := s.(*kir.Stage)
			if !ok || st.Name != name {
				continue
			}
			for i, x := range st.Body {
				if f, ok := x.(*kir.For); ok && f.Kind == kir.GridStride {
					hi := f.Hi.(*kir.Const)
					u := kir.NewVar(f.Var.Name+"_shift", te.I32)
					st.Body[i] = &kir.For{Var: u, Kind: f.Kind, Lo: f.Lo, Hi: kir.I(int(hi.Value) + 1), Body: []kir.Stmt{
						&kir.Let{Var: f.Var, Value: kir.Sub(u, kir.I(1))},
						&kir.If{Cond: kir.Ge(f.Var, kir.I(0)), Then: f.Body},
					}}
					return
				}
			}
		}
	}
	t.Fatalf("no grid-stride loop in stage %s", name)
}
