package partition

import (
	"math/rand/v2"
	"testing"

	"tec/analysis"
	"tec/gpu"
	tb "tec/internal/testkit/tebuild"
	"tec/schedule"
	"tec/te"
)

// TestBlockLocalAttention checks the plan of gqaAttention at -O4 (Reuse)
// on the H100 model with launches and grid syncs five times as costly
// (10 and 5 µs): one kernel in which the scores, maximum, sum and
// context each take one tile per head (the context's matrix-vector tiles
// aligned with the heads, not four 16-column tiles per head), separated
// by block barriers; the rotated queries are rows of the heads on the
// same blocks, and counters for the rotated keys replace the grid sync
// before the scores: one grid sync is left (after ss). Without Reuse each
// of the stages after ss but rk follows a grid sync, and the plan is
// predicted slower by more than half of those syncs (less the counters
// that replace one, and the longer loads of a block per head).
// At the H100's 1 µs a grid sync the cost model keeps the scores in 64
// tiles, not 8: a block per head would load its 8,192 keys with one
// scalar load in flight per thread per column (the new key's select on
// the position branches around every load), four times the round trips
// of a 16-column tile, which cost more than the sync they save.
func TestBlockLocalAttention(t *testing.T) {
	p := tb.GQAAttention(8, 2, 64, 128)
	g, _ := gpu.Builtin("h100")
	g.LaunchCost, g.GridSyncCost = 10e-6, 5e-6
	pl := planOn(t, p, g, Options{Strategy: CostModel, Split: true, Reuse: true})
	if len(pl.Kernels) != 1 {
		t.Fatalf("%d kernels, want 1:\n%s", len(pl.Kernels), pl)
	}
	k := pl.Kernels[0]
	at := map[string]int{}
	for j, s := range k.Stages {
		at[s.Name] = j
	}
	for _, name := range []string{"rq", "sc", "mx", "den", "ctx"} {
		s := pl.Schedules[k.Stages[at[name]]]
		if s.Tiles != 8 {
			t.Errorf("%s: %d tiles, want one per head (8):\n%s", name, s.Tiles, pl)
		}
	}
	if s := pl.Schedules[k.Stages[at["rq"]]]; s.Kind != schedule.Rows || s.RowAxes != 1 {
		t.Errorf("rq: %v over %d axes, want rows of the heads", s.Kind, s.RowAxes)
	}
	for _, name := range []string{"mx", "den", "ctx"} {
		if b := k.Sync[at[name]]; b != BlockSync {
			t.Errorf("%s follows barrier %d, want a block barrier:\n%s", name, b, pl)
		}
	}
	deps := k.Counters[at["sc"]]
	if k.Sync[at["sc"]] != GridSync || len(deps) != 1 || deps[0].Producer.Name != "rk" || deps[0].Most() != 1 || deps[0].Div != 4 {
		t.Errorf("sc waits on %v, want counters for the one tile of rk its key head lies in (Div 4):\n%s", deps, pl)
	}
	if k.GridSyncs != 1 {
		t.Errorf("%d grid syncs, want 1 (after ss):\n%s", k.GridSyncs, pl)
	}
	apart := planOn(t, p, g, Options{Strategy: CostModel, Split: true})
	_, syncs, cost := apart.Stats()
	_, _, local := pl.Stats()
	if syncs < 4 || cost.Total()-local.Total() < float64(syncs-1)*pl.GPU.GridSyncCost/2 {
		t.Errorf("without Reuse %d grid syncs, %.2f µs; with %.2f µs: want the syncs' cost saved", syncs, cost.Total()*1e6, local.Total()*1e6)
	}
}

// TestTileDepDiv checks TileDep.Range with Div against the tiles found
// element by element: consumer element e, of prefix p = e/Prefix, reads
// producer elements [Offset + (p/Div)·Span, Offset + (p/Div+1)·Span).
func TestTileDepDiv(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		div := 1 + rng.IntN(5)
		prefixes := div * (1 + rng.IntN(6))
		q, span := 1+rng.IntN(9), 1+rng.IntN(9)
		d := TileDep{Tile: 1 + rng.IntN(20), N: prefixes * q, Prefix: q, Span: span, Width: 1 + rng.IntN(20), Offset: rng.IntN(10), Div: div}
		for r := range te.CeilDiv(d.N, d.Tile) {
			want := map[int]bool{}
			for e := r * d.Tile; e < min((r+1)*d.Tile, d.N); e++ {
				g := e / d.Prefix / div
				for x := d.Offset + g*span; x < d.Offset+(g+1)*span; x++ {
					want[x/d.Width] = true
				}
			}
			lo, hi := d.Range(r)
			if hi-lo != len(want) {
				t.Fatalf("%+v: tile %d: range [%d, %d), want %d tiles", d, r, lo, hi, len(want))
			}
			for p := lo; p < hi; p++ {
				if !want[p] {
					t.Fatalf("%+v: tile %d: range [%d, %d) holds %d, which it does not read", d, r, lo, hi, p)
				}
			}
		}
	}
}

// planOn partitions p for GPU model g with opts, failing t on an error.
func planOn(t *testing.T, p *te.Program, g gpu.Model, opts Options) *Plan {
	t.Helper()
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := Partition(a, g, opts)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}
