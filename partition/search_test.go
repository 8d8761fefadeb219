package partition

import (
	"fmt"
	"slices"
	"testing"

	"tec/analysis"
	"tec/gpu"
	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// mixedChain is n stages over a 16×32 matrix cycling through a row sum, a
// normalisation by it, a matrix product and an element-wise stage (the
// "mixed" programs of bench/scaling): every product needs a grid sync.
func mixedChain(n int) *te.Program {
	b := tb.New("mixed")
	x, w := b.Input("x", 16, 32), b.Param("w", 32, 32)
	last := b.Compute("t0", tb.Shape(16, 32), func(ax []te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(x, ax...), tb.F(0.5)) })
	var s *te.Tensor
	for k := 1; k < n; k++ {
		name := fmt.Sprintf("t%d", k)
		switch k % 4 {
		case 0:
			prev := last
			last = b.Compute(name, tb.Shape(16, 32), func(ax []te.Index) te.Expr {
				return tb.Bin(te.Add, tb.Bin(te.Mul, tb.Ld(prev, ax...), tb.F(0.5)), tb.Ld(x, ax...))
			})
		case 1:
			prev := last
			s = b.Compute(name, tb.Shape(16), func(ax []te.Index) te.Expr {
				return tb.Reduce(te.Sum, "j", 32, func(j te.Index) te.Expr { return tb.Ld(prev, ax[0], j) })
			})
		case 2:
			prev, sum := last, s
			last = b.Compute(name, tb.Shape(16, 32), func(ax []te.Index) te.Expr {
				sq := tb.Bin(te.Mul, tb.Ld(sum, ax[0]), tb.Ld(sum, ax[0]))
				return tb.Bin(te.Div, tb.Ld(prev, ax...), tb.Bin(te.Add, sq, tb.F(1)))
			})
		case 3:
			last = b.Matmul(name, last, w)
		}
	}
	return b.Program(last)
}

// searchPlan partitions p with the cost-model search, its dominance cut on
// or off, and returns the kernels' first stages and the extensions tried.
func searchPlan(t *testing.T, p *te.Program, g gpu.Model, opts Options, dominance bool) ([]string, int) {
	t.Helper()
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts.search = &searchProbe{noDominance: !dominance}
	pl, err := Partition(a, g, opts)
	if err != nil {
		t.Fatal(err)
	}
	var starts []string
	for _, k := range pl.Kernels {
		starts = append(starts, k.Stages[0].Name)
	}
	return starts, opts.search.grown
}

// TestDominanceKeepsPlans checks that the dominance cut changes no plan:
// with and without it the search picks the same kernels, on GPUs whose L2
// holds the whole program and on one whose L2 holds a few stages (where
// long kernels are priced from DRAM), at the -O3 and -O4 options.
func TestDominanceKeepsPlans(t *testing.T) {
	tinyL2, _ := gpu.Builtin("small")
	tinyL2.Name, tinyL2.L2Bytes = "small, 16 KiB L2", 16<<10
	var gpus []gpu.Model
	for _, name := range []string{"a100", "h100", "small"} {
		g, _ := gpu.Builtin(name)
		gpus = append(gpus, g)
	}
	gpus = append(gpus, tinyL2)
	levels := map[string]Options{
		"O3": {Split: true, TempsInWorkspace: true},
		"O4": {Split: true, Reuse: true, TempsInWorkspace: true},
	}
	progs := map[string]*te.Program{
		"mixed/9":   mixedChain(9),
		"mixed/300": mixedChain(300),
		"mlp":       mlp(64, 128, 256),
		"layernorm": layernormRows(512, 1024),
	}
	for pname, p := range progs {
		for _, g := range gpus {
			for level, opts := range levels {
				t.Run(fmt.Sprintf("%s/%s/%s", pname, g.Name, level), func(t *testing.T) {
					want, all := searchPlan(t, p, g, opts, false)
					got, cut := searchPlan(t, p, g, opts, true)
					if !slices.Equal(got, want) {
						t.Errorf("kernels start at %v with the dominance cut, %v without", got, want)
					}
					if cut > all {
						t.Errorf("%d extensions with the cut > %d without", cut, all)
					}
				})
			}
		}
	}
}

// TestSearchLinear checks that the search grows kernels by a number of
// stages linear in the length of a program whose stages need grid syncs:
// four times the stages may take at most six times the extensions (without
// the dominance cut it took sixteen). The cut applies to kernels whose
// working set stays in L2 and to kernels already past it; one in between
// is grown until it passes L2, so the GPU with a small L2 keeps the
// constant small (the built-in small GPU's 1 MiB holds about 700 of these
// stages, and costs as many extensions per stage).
func TestSearchLinear(t *testing.T) {
	tinyL2, _ := gpu.Builtin("small")
	tinyL2.Name, tinyL2.L2Bytes = "small, 16 KiB L2", 16<<10
	a100, _ := gpu.Builtin("a100")
	h100, _ := gpu.Builtin("h100")
	for _, g := range []gpu.Model{a100, h100, tinyL2} {
		opts := Options{Split: true, Reuse: true, TempsInWorkspace: true}
		_, small := searchPlan(t, mixedChain(200), g, opts, true)
		_, large := searchPlan(t, mixedChain(800), g, opts, true)
		if r := float64(large) / float64(small); r > 6 {
			t.Errorf("%s: %d extensions at 200 stages, %d at 800: %.1f times", g.Name, small, large, r)
		}
	}
}

// TestReuseDistance checks the cost model's DRAM traffic in a kernel that
// streams more weights than L2 holds (a decode step's): x·w1·w2 on the A100
// (40 MB of L2, each weight 64 MiB), then x read again. The step is one
// kernel; each weight moves once; h, read right after it is written, hits
// in L2; x, read again after both weights streamed through, moves twice.
func TestReuseDistance(t *testing.T) {
	const k = 4096
	b := tb.New("stream")
	x := b.Input("x", 1, k)
	w1, w2 := b.Param("w1", k, k), b.Param("w2", k, k)
	h := b.Matmul("h", x, w1)
	y := b.Matmul("y", h, w2)
	u := b.Compute("u", tb.Shape(1, k), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Add, tb.Ld(y, ax...), tb.Ld(x, ax...))
	})
	pl := plan(t, b.Program(u), "a100", Options{Split: true, Reuse: true, TempsInWorkspace: true})
	if len(pl.Kernels) != 1 {
		t.Fatalf("%d kernels, want 1:\n%s", len(pl.Kernels), pl)
	}
	want := 2*x.Bytes() + w1.Bytes() + w2.Bytes() + h.Bytes() + y.Bytes() + u.Bytes()
	if got := pl.Kernels[0].Cost.DRAM; got != want {
		t.Errorf("DRAM %d B, want %d (the weights once, x twice, each result once)", got, want)
	}
	var sum int64
	for _, sc := range pl.Kernels[0].StageCosts {
		sum += sc.DRAM
	}
	if sum != pl.Kernels[0].Cost.DRAM || len(pl.Kernels[0].StageCosts) != 3 {
		t.Errorf("stage costs %+v do not add up to the kernel's %d B", pl.Kernels[0].StageCosts, pl.Kernels[0].Cost.DRAM)
	}
}
