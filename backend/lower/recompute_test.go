package lower_test

import (
	"strings"
	"testing"

	"tec/analysis"
	"tec/backend/kir"
	"tec/backend/lower"
	"tec/backend/sim"
	"tec/gpu"
	"tec/internal/numeric"
	tb "tec/internal/testkit/tebuild"
	"tec/partition"
	"tec/schedule"
	"tec/te"
	"tec/transform"
)

// normFFN is an RMSNorm of x's rows (its mean of squares ms) before gate
// and up projections, SwiGLU, and the down projection: the producers that
// transform.Recompute moves into the projections' tiles.
func normFFN(rows, d, f int) *te.Program {
	b := tb.New("normffn")
	x, g := b.Input("x", rows, d), b.Param("g", d)
	wg, wu, wd := b.Param("wg", f, d), b.Param("wu", f, d), b.Param("wd", d, f)
	ms := b.Compute("ms", tb.Shape(rows), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "n", d, func(n te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(x, ax[0], n), tb.Ld(x, ax[0], n))
		}), tb.F(float64(d)))
	})
	h := b.Compute("h", tb.Shape(rows, d), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Bin(te.Mul, tb.Ld(x, ax...), tb.Un(te.Rsqrt, tb.Bin(te.Add, tb.Ld(ms, ax[0]), tb.F(1e-5)))), tb.Ld(g, ax[1]))
	})
	proj := func(name string, in, w *te.Tensor) *te.Tensor {
		return b.Compute(name, tb.Shape(rows, w.Shape[0]), func(ax []te.Index) te.Expr {
			return tb.Reduce(te.Sum, "k", w.Shape[1], func(k te.Index) te.Expr {
				return tb.Bin(te.Mul, tb.Ld(in, ax[0], k), tb.Ld(w, ax[1], k))
			})
		})
	}
	gate := proj("gate", h, wg)
	up := proj("up", h, wu)
	act := b.Compute("act", tb.Shape(rows, f), func(ax []te.Index) te.Expr {
		gv := tb.Ld(gate, ax...)
		return tb.Bin(te.Mul, tb.Bin(te.Mul, gv, tb.Un(te.Sigmoid, gv)), tb.Ld(up, ax...))
	})
	return b.Program(proj("down", act, wd))
}

// recomputeModule lowers p fused on the GPU model gpuName (reuse: -O4) after
// transform.Horizontal and Vertical and, if recompute, transform.Recompute taking every
// producer that qualifies, and returns the module and its plan's grid
// syncs.
func recomputeModule(t *testing.T, p *te.Program, gpuName string, reuse, recompute bool) (*kir.Module, *partition.Plan, int) {
	t.Helper()
	p, err := transform.Horizontal(p)
	if err != nil {
		t.Fatal(err)
	}
	if p, err = transform.Vertical(p); err != nil {
		t.Fatal(err)
	}
	if recompute {
		if p, err = transform.Recompute(p, func(old, nu *te.Tensor, rm []*te.Tensor) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin(gpuName)
	pl, err := partition.Partition(a, g, partition.Options{Split: true, Reuse: reuse, TempsInWorkspace: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := lower.Fused(p, pl, lower.FusedOptions{})
	if err != nil {
		t.Fatalf("%v\n%s", err, pl)
	}
	_, syncs, _ := pl.Stats()
	return m, pl, syncs
}

// prologueArray returns where the prologue results of pl's recomputing
// matrix-vector stage lie in its kernel's f32 arena: the elements lo to
// hi, the stage's last scratch array (schedule.Place).
func prologueArray(pl *partition.Plan) (lo, hi int, ok bool) {
	for _, s := range pl.Schedules {
		if s.MatVec == nil || len(s.Arrays) != 3 {
			continue
		}
		offsets, _ := schedule.Place(s.Arrays)
		return offsets[2], offsets[2] + s.Arrays[2].Len, true
	}
	return 0, 0, false
}

// TestRecomputeTiles checks the lowering of producers recomputed in
// matrix-vector tiles (the norm's mean of squares in a prologue per tile
// and row, the norm and SwiGLU as the rows are staged): race-free and
// equal to the reference on grids that give blocks several tiles, fewer
// grid syncs than with the producers stored (the sync before SwiGLU's
// reader at -O4, where the norm reads its statistic after a block
// barrier and SwiGLU waits on counters; both at -O3), and no stage of
// them. Swapping the prologue's rows (a planted wrong prologue) is caught.
func TestRecomputeTiles(t *testing.T) {
	for _, tt := range []struct {
		name      string
		rows      int
		gpu       string
		reuse     bool
		resident  int
		plantable bool
	}{
		{"one row, h100, -O4", 1, "h100", true, 1 << 20, false},
		{"two rows, small, -O3", 2, "small", false, 4, true},
		{"eight rows, a100, -O4", 8, "a100", true, 1 << 20, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := normFFN(tt.rows, 128, 128) // past the vertical transform's rereads
			m, pl, syncs := recomputeModule(t, p, tt.gpu, tt.reuse, true)
			_, _, stored := recomputeModule(t, p, tt.gpu, tt.reuse, false)
			if syncs >= stored {
				t.Errorf("%d grid syncs recomputing, %d storing: want fewer", syncs, stored)
			}
			text := m.String()
			for _, gone := range []string{"stage h ", "stage ms ", "stage act "} {
				if strings.Contains(text, gone) {
					t.Errorf("%q in the module: the producer is still a stage", gone)
				}
			}
			lo, hi, ok := prologueArray(pl)
			if !ok {
				t.Fatalf("no stage with a prologue array in the plan:\n%s", pl)
			}
			feeds := randomFeeds(p)
			want, err := te.Evaluate(p, feeds, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			run := func(m *kir.Module) *numeric.Mismatch {
				res, err := sim.Run(m, feeds, sim.Options{Race: true, ResidentBlocks: tt.resident})
				if err != nil {
					t.Fatal(err)
				}
				if res.RaceCount > 0 {
					t.Errorf("%d races; first: %s", res.RaceCount, res.Races[0])
				}
				mm, err := numeric.Compare(res.Outputs["down"], want["down"], numeric.Tolerance{Rtol: 1e-4, Atol: 1e-5})
				if err != nil {
					t.Fatal(err)
				}
				return mm
			}
			if mm := run(m); mm != nil {
				t.Errorf("down: %s", mm)
			}
			if !tt.plantable {
				return
			}
			if n := swapPrologueRows(m, tt.rows, lo, hi); n == 0 {
				t.Fatal("no prologue store to plant a mistake in")
			}
			if mm := run(m); mm == nil {
				t.Error("a prologue that swaps its rows gives the reference's result")
			}
		})
	}
}

// swapPrologueRows makes every store of a prologue result for row r of a
// tile of rows rows (shared elements lo to hi) store it at row rows-1-r
// instead, and returns how many stores it changed.
func swapPrologueRows(m *kir.Module, rows, lo, hi int) int {
	n := 0
	for _, k := range m.Kernels {
		kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
			st, ok := s.(*kir.Store)
			if !ok || st.Buf.Space != kir.Shared {
				return true
			}
			if c, ok := st.Index.(*kir.Const); ok && int(c.Value) >= lo && int(c.Value) < hi {
				i := int(c.Value) - lo
				st.Index = kir.I(lo + i - i%rows + rows - 1 - i%rows)
				n++
			}
			return true
		})
	}
	return n
}
