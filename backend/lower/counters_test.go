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

// projNorm is a projection h = x·w followed by layer normalisation of
// h's rows.
func projNorm(m, k, n int) *te.Program {
	b := tb.New("projnorm")
	x, w := b.Input("x", m, k), b.Param("w", k, n)
	h := b.Matmul("h", x, w)
	mean := b.Compute("mean", tb.Shape(m), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "j", n, func(j te.Index) te.Expr { return tb.Ld(h, ax[0], j) }), tb.F(float64(n)))
	})
	vr := b.Compute("var", tb.Shape(m), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "j", n, func(j te.Index) te.Expr {
			d := tb.Bin(te.Sub, tb.Ld(h, ax[0], j), tb.Ld(mean, ax[0]))
			return tb.Bin(te.Mul, d, d)
		}), tb.F(float64(n)))
	})
	y := b.Compute("y", tb.Shape(m, n), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Bin(te.Sub, tb.Ld(h, ax...), tb.Ld(mean, ax[0])), tb.Un(te.Rsqrt, tb.Bin(te.Add, tb.Ld(vr, ax[0]), tb.F(1e-5))))
	})
	return b.Program(y)
}

// counterModule lowers p fused on the GPU model gpuName with counters wherever sound, and
// without reuse (-O3), so that the row statistics are separated by grid
// syncs that counters can replace.
func counterModule(t *testing.T, p *te.Program, gpuName string, mode partition.CounterMode) *kir.Module {
	t.Helper()
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin(gpuName)
	pl, err := partition.Partition(a, g, partition.Options{Split: true, Counters: mode})
	if err != nil {
		t.Fatal(err)
	}
	m, err := lower.Fused(p, pl, lower.FusedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCounters checks the lowering of counters on projNorm: the kernel
// zeroes the counters before its one remaining grid sync (after the
// contraction, whose columns every row needs), the statistics' tiles
// signal, the element-wise stage's chunks wait for the variance's rows and
// not for the mean's, which the block that signals a row of the variance
// computed before it (partition orders them by the variance's counters
// alone), and the result is right and race-free on several grids.
// Dropping the element-wise stage's waits (a planted bug) is reported.
func TestCounters(t *testing.T) {
	p := projNorm(24, 16, 40)
	m := counterModule(t, p, "small", partition.CountersWherever)
	text := m.String()
	for _, want := range []string{
		"stage counters.zero {", "] = 0\n", "gridsync\n",
		"signal var.ready[", "wait var.ready[",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the module:\n%s", want, text)
		}
	}
	if strings.Contains(text, "mean.ready[") {
		t.Errorf("counters for the mean, whose rows the variance's signals order:\n%s", text)
	}
	if z, g, u := strings.Index(text, "stage counters.zero"), strings.Index(text, "gridsync"), strings.Index(text, "stage mean"); !(z < g && g < u) {
		t.Errorf("the counters are zeroed at %d, the grid sync at %d, the first signalling stage at %d: want them in that order", z, g, u)
	}
	if n := strings.Count(text, "gridsync"); n != 1 {
		t.Errorf("%d grid syncs, want 1:\n%s", n, text)
	}
	onGrids(t, m, p, 1, 3, 4)

	// The planted bug: the element-wise stage reads the statistics
	// without waiting.
	k := m.Kernels[0]
	kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
		if st, ok := s.(*kir.Stage); ok && st.Name == "y" {
			kir.WalkStmts(st.Body, func(x kir.Stmt) bool {
				switch x := x.(type) {
				case *kir.If: // a thread-stride loop's chunk, or a rotated tile
					x.Then = dropWaits(x.Then)
				case *kir.For: // a loop over chunks (elementwiseChunks)
					x.Body = dropWaits(x.Body)
				}
				return true
			})
		}
		return true
	})
	res, err := sim.Run(m, randomFeeds(p), sim.Options{Race: true, ResidentBlocks: 4})
	if err != nil {
		t.Fatal(err)
	}
	if res.RaceCount == 0 {
		t.Fatal("no race reported without the element-wise stage's waits")
	}
	if r := res.Races[0].String(); !strings.Contains(r, "stage y") {
		t.Errorf("race %q, want one in stage y", r)
	}
}

func dropWaits(body []kir.Stmt) []kir.Stmt {
	var out []kir.Stmt
	for _, s := range body {
		if _, ok := s.(*kir.Wait); !ok {
			out = append(out, s)
		}
	}
	return out
}

// ropeProj is a decode step's rotary embedding of a concatenated q·k
// projection of one row, h = 2x·w (a matrix-vector stage after a grid
// sync, before which the kernel zeroes its counters), q's nh heads
// and k's nkv of dh columns each: rq reads the columns of its head and,
// under a select on the head's index, its partner ±dh/2 (rk in k's
// slice, from column nh·dh on).
func ropeProj(k, nh, nkv, dh int) *te.Program {
	b := tb.New("rope")
	x, w := b.Input("x", 1, k), b.Param("w", k, (nh+nkv)*dh)
	xs := b.Compute("xs", tb.Shape(1, k), func(ax []te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(x, ax...), tb.F(2)) })
	h := b.Matmul("h", xs, w)
	rope := func(name string, heads, offset int) *te.Tensor {
		return b.Compute(name, tb.Shape(heads, dh), func(ax []te.Index) te.Expr {
			col := ax[0].Scale(dh).Add(ax[1]).AddConst(offset)
			row := te.Index{}
			partner := tb.Sel(tb.Bin(te.Lt, tb.Idx(ax[1]), tb.I(dh/2)),
				tb.Un(te.Neg, tb.Ld(h, row, col.AddConst(dh/2))), tb.Ld(h, row, col.AddConst(-dh/2)))
			return tb.Bin(te.Add, tb.Bin(te.Mul, tb.Ld(h, row, col), tb.F(0.5)), tb.Bin(te.Mul, partner, tb.F(0.25)))
		})
	}
	rq := rope("rq", nh, 0)
	rk := rope("rk", nkv, nh*dh)
	return b.Program(rq, rk)
}

// TestMatVecCounters checks counters after a matrix-vector stage: rq and
// rk, after the one grid sync that counters replace, wait on groups of
// h's column tiles, and the result is right and race-free on several
// grids. A planted wrong range (rk waits on q's columns) is reported.
func TestMatVecCounters(t *testing.T) {
	p := ropeProj(64, 8, 4, 32)
	m := counterModule(t, p, "h100", partition.CountersWherever)
	text := m.String()
	for _, want := range []string{"signal h.ready[", "wait h.ready["} {
		if !strings.Contains(text, want) {
			t.Fatalf("no %q in the module:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "gridsync"); n != 1 {
		t.Errorf("%d grid syncs, want 1 (before h):\n%s", n, text)
	}
	onGrids(t, m, p, 1, 3, 4, 16)

	// The planted bug: rk waits on the counters of q's columns.
	kir.WalkStmts(m.Kernels[0].Body, func(s kir.Stmt) bool {
		if st, ok := s.(*kir.Stage); ok && st.Name == "rk" {
			kir.WalkStmts(st.Body, func(x kir.Stmt) bool {
				if w, ok := x.(*kir.Wait); ok {
					w.Index = kir.I(0)
				}
				return true
			})
		}
		return true
	})
	res, err := sim.Run(m, randomFeeds(p), sim.Options{Race: true, ResidentBlocks: 16})
	if err != nil {
		t.Fatal(err)
	}
	if res.RaceCount == 0 {
		t.Fatalf("no race reported with rk waiting on q's columns:\n%s", text)
	}
	if r := res.Races[0].String(); !strings.Contains(r, "stage rk") {
		t.Errorf("race %q, want one in stage rk", r)
	}
}
