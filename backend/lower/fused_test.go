package lower_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"tec/analysis"
	"tec/backend/kir"
	"tec/backend/lower"
	"tec/backend/report"
	"tec/backend/sim"
	"tec/gpu"
	"tec/internal/numeric"
	tb "tec/internal/testkit/tebuild"
	"tec/partition"
	"tec/schedule"
	"tec/te"
)

// rowStats is a long row reduction with few outputs (a split reduction on
// a large GPU) and its consumers: mean and max of each row, the centred
// rows, and a matmul of them.
func rowStats() *te.Program {
	const m, n = 3, 32768
	b := tb.New("rowstats")
	x := b.Input("x", m, n)
	w := b.Param("w", n, 16)
	mean := b.Compute("mean", tb.Shape(m), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "k", n, func(k te.Index) te.Expr { return tb.Ld(x, ax[0], k) }), tb.F(n))
	})
	mx := b.Compute("mx", tb.Shape(m), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.ReduceMax, "k", n, func(k te.Index) te.Expr { return tb.Ld(x, ax[0], k) })
	})
	c := b.Compute("c", tb.Shape(m, n), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Bin(te.Sub, tb.Ld(x, ax...), tb.Ld(mean, ax[0])), tb.Ld(mx, ax[0]))
	})
	y := b.Matmul("y", c, w)
	return b.Program(y, mean)
}

func fusedModule(t *testing.T, p *te.Program, gpuName string, deterministic bool) (*kir.Module, *partition.Plan) {
	t.Helper()
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin(gpuName)
	pl, err := partition.Partition(a, g, partition.Options{Split: true, Reuse: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := lower.Fused(p, pl, lower.FusedOptions{Deterministic: deterministic})
	if err != nil {
		t.Fatal(err)
	}
	return m, pl
}

func randomFeeds(p *te.Program) map[string]*te.Array {
	rng := rand.New(rand.NewPCG(3, 4))
	out := map[string]*te.Array{}
	for _, t := range p.Placeholders() {
		a := te.NewArray(t.DType, t.Shape)
		for i := range a.Data {
			a.Data[i] = te.Round(t.DType, 2*rng.Float64()-1)
		}
		out[t.Name] = a
	}
	return out
}

func TestFusedSplitReduce(t *testing.T) {
	p := rowStats()
	in := randomFeeds(p)
	want, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		gpu           string
		deterministic bool
		atomics       bool // whether the module should use atomics
	}{
		{"a100", false, true},
		{"a100", true, false},
		{"small", false, false}, // 4 blocks: nothing to split
	} {
		m, pl := fusedModule(t, p, tt.gpu, tt.deterministic)
		if s := pl.Schedules[p.Lookup("mean")]; (s.Kind == schedule.SplitReduce) != (tt.gpu == "a100") {
			t.Errorf("%s: mean scheduled %s", tt.gpu, s)
		}
		atomics := 0
		for _, k := range m.Kernels {
			kir.WalkStmts(k.Body, func(s kir.Stmt) bool {
				if _, ok := s.(*kir.Atomic); ok {
					atomics++
				}
				return true
			})
		}
		if (atomics > 0) != tt.atomics {
			t.Errorf("%s deterministic=%v: %d atomics", tt.gpu, tt.deterministic, atomics)
		}
		var first map[string]*te.Array
		for run := range 2 {
			res, err := sim.Run(m, in, sim.Options{Race: true, ResidentBlocks: 1 << 20})
			if err != nil {
				t.Fatal(err)
			}
			if res.RaceCount > 0 {
				t.Errorf("%s: %d races; first %s", tt.gpu, res.RaceCount, res.Races[0])
			}
			for _, o := range p.Outputs {
				mm, err := numeric.Compare(res.Outputs[o.Name], want[o.Name], numeric.Tolerance{Rtol: 1e-4, Atol: 1e-5})
				if err != nil || mm != nil {
					t.Errorf("%s deterministic=%v output %s: %v %v", tt.gpu, tt.deterministic, o.Name, err, mm)
				}
			}
			if run == 0 {
				first = res.Outputs
				rep := report.Module(m, report.Config{ResidentBlocks: 1 << 20})
				for i, k := range rep.Kernels {
					if !k.Exact || k.Counts != res.Kernels[i].Counts {
						t.Errorf("%s: kernel %s: report %v, simulator %v", tt.gpu, k.Name, k.Counts, res.Kernels[i].Counts)
					}
				}
				continue
			}
			for name, a := range res.Outputs {
				for i, v := range a.Data {
					if v != first[name].Data[i] {
						t.Fatalf("%s: output %s[%d] differs between runs: %v, %v", tt.gpu, name, i, v, first[name].Data[i])
					}
				}
			}
		}
	}
}

// layernorm is the rows of x normalised: mean and variance (row
// reductions), then the normalised rows (element-wise, or Rows at -O4).
func layernorm(m, n int) *te.Program {
	b := tb.New("ln")
	x := b.Input("x", m, n)
	mean := b.Compute("mean", tb.Shape(m), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "k", n, func(k te.Index) te.Expr { return tb.Ld(x, ax[0], k) }), tb.F(float64(n)))
	})
	vr := b.Compute("var", tb.Shape(m), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "k", n, func(k te.Index) te.Expr {
			d := tb.Bin(te.Sub, tb.Ld(x, ax[0], k), tb.Ld(mean, ax[0]))
			return tb.Bin(te.Mul, d, d)
		}), tb.F(float64(n)))
	})
	y := b.Compute("y", tb.Shape(m, n), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Bin(te.Sub, tb.Ld(x, ax...), tb.Ld(mean, ax[0])), tb.Un(te.Rsqrt, tb.Bin(te.Add, tb.Ld(vr, ax[0]), tb.F(1e-5))))
	})
	return b.Program(y)
}

// TestFusedReuse checks -O4's same-block reuse: on the small GPU (4
// blocks, 16 rows) the variance and the normalised rows read their rows'
// statistics after block barriers only, and the result is right and free
// of races; without reuse they need grid syncs.
func TestFusedReuse(t *testing.T) {
	p := layernorm(16, 128)
	in := randomFeeds(p)
	want, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin("small")
	for _, tt := range []struct {
		reuse     bool
		gridSyncs int64
		kind      schedule.Kind // of y
	}{
		{false, 2, schedule.Elementwise},
		{true, 0, schedule.Rows},
	} {
		pl, err := partition.Partition(a, g, partition.Options{Reuse: tt.reuse})
		if err != nil {
			t.Fatal(err)
		}
		if k := pl.Schedules[p.Lookup("y")].Kind; k != tt.kind {
			t.Errorf("reuse=%v: y is %s, want %s", tt.reuse, k, tt.kind)
		}
		m, err := lower.Fused(p, pl, lower.FusedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(m, in, sim.Options{Race: true, ResidentBlocks: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if res.RaceCount > 0 {
			t.Errorf("reuse=%v: %d races; first %s", tt.reuse, res.RaceCount, res.Races[0])
		}
		if got := res.Total().GridSyncs; got != tt.gridSyncs || len(m.Kernels) != 1 {
			t.Errorf("reuse=%v: %d kernels, %d grid syncs, want 1, %d", tt.reuse, len(m.Kernels), got, tt.gridSyncs)
		}
		mm, err := numeric.Compare(res.Outputs["y"], want["y"], numeric.Tolerance{Rtol: 1e-4, Atol: 1e-5})
		if err != nil || mm != nil {
			t.Errorf("reuse=%v: %v %v", tt.reuse, err, mm)
		}
		// With reuse, the row statistics stay in shared memory: the only
		// global traffic is x, read by mean, twice by var (d*d) and by y,
		// and y written. Without, mean and var are written (2×64 B), mean
		// read twice per element by var and both once per vector of 4
		// elements by y (storeGuardedVector reads them once per vector).
		x := int64(16 * 128 * 4)
		wantBytes := 5*x + 2*64 + 2*x + 2*x/4
		if tt.reuse {
			wantBytes = 5 * x
		}
		if got := res.Total().LoadBytes + res.Total().StoreBytes; got != wantBytes {
			t.Errorf("reuse=%v: %d global bytes, want %d", tt.reuse, got, wantBytes)
		}
	}
}

// TestRotation checks that the independent stages of a grid epoch start on
// different blocks while a stage that reads another of the epoch keeps its
// mapping: a and b are independent one-block stages, c reads a where the
// same thread wrote it (so a and c stay a thread per element); b, which
// no stage reads, takes its one chunk of vectors (elementwiseChunks) one
// block on, and the result is right and race-free on grids larger and
// smaller than the stages need.
func TestRotation(t *testing.T) {
	const n = 256
	bld := tb.New("rot")
	x, y := bld.Input("x", n), bld.Input("y", n)
	a := bld.Compute("a", tb.Shape(n), func(ax []te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(x, ax...), tb.F(2)) })
	b := bld.Compute("b", tb.Shape(n), func(ax []te.Index) te.Expr { return tb.Bin(te.Add, tb.Ld(y, ax...), tb.F(1)) })
	c := bld.Compute("c", tb.Shape(n), func(ax []te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(a, ax...), tb.F(3)) })
	p := bld.Program(c, b)
	m, pl := fusedModule(t, p, "a100", false)
	if len(pl.Kernels) != 1 || len(m.Kernels) != 1 {
		t.Fatalf("want one kernel:\n%s", pl)
	}
	first := map[string]int{} // stage → Hi of its top loop
	for _, s := range m.Kernels[0].Body {
		if st, ok := s.(*kir.Stage); ok {
			for _, x := range st.Body {
				if f, ok := x.(*kir.For); ok {
					first[st.Name] = int(f.Hi.(*kir.Const).Value)
				}
			}
		}
	}
	if first["a"] != n || first["c"] != n || first["b"] != 2 {
		t.Errorf("loop bounds %v; want a and c over %d elements, b over 2 chunks (one block on)", first, n)
	}
	if g := m.Kernels[0].Grid.Blocks; g < 2 {
		t.Errorf("grid of %d blocks; want at least 2, one per independent stage", g)
	}
	onGrids(t, m, p, 1, 2, 8)
}

// TestResidentEpilogue checks a resident stage that computes its
// element-wise consumers in its tiles' epilogue: two batched matrix-vector
// stages over the same weights W[q], each followed by a stage combining
// its two batch entries column by column. Each tile computes both entries
// (a group of 2) and the consumer, so no grid sync separates them, and
// the result is right and race-free on grids of 1 to 8 blocks.
func TestResidentEpilogue(t *testing.T) {
	const k, n = 16, 16
	bld := tb.New("epi")
	x := bld.Input("x", 2, 1, k)
	w := bld.Param("W", 2, k, n)
	step := func(name string, in func(q, m, r te.Index) te.Expr) (*te.Tensor, *te.Tensor) {
		s := bld.Compute(name, tb.Shape(2, 1, n), func(ax []te.Index) te.Expr {
			return tb.Reduce(te.Sum, "k", k, func(r te.Index) te.Expr {
				return tb.Bin(te.Mul, in(ax[0], ax[1], r), tb.Ld(w, ax[0], r, ax[2]))
			})
		})
		e := bld.Compute(name+"e", tb.Shape(1, n), func(ax []te.Index) te.Expr {
			return tb.Un(te.Tanh, tb.Bin(te.Add, tb.Ld(s, te.Const(0), ax[0], ax[1]), tb.Ld(s, te.Const(1), ax[0], ax[1])))
		})
		return s, e
	}
	s1, e1 := step("s1", func(q, m, r te.Index) te.Expr { return tb.Ld(x, q, m, r) })
	s2, e2 := step("s2", func(q, m, r te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Ld(e1, m, r), tb.Ld(x, q, m, r))
	})
	p := bld.Program(e2)
	m, pl := fusedModule(t, p, "small", false)
	for _, c := range []struct{ s, e *te.Tensor }{{s1, e1}, {s2, e2}} {
		r := pl.Schedules[c.s].Resident
		if r == nil || r.Group != 2 || len(r.Epilogue) != 1 || r.Epilogue[0] != c.e || pl.Schedules[c.e].EpilogueOf != c.s {
			t.Errorf("%s: resident %+v; want a group of 2 with %s in the epilogue:\n%s", c.s.Name, r, c.e.Name, pl)
		}
	}
	if len(pl.Kernels) != 1 || pl.Kernels[0].GridSyncs != 1 {
		t.Errorf("want one kernel with one grid sync (before s2):\n%s", pl)
	}
	onGrids(t, m, p, 1, 4, 8)
}

// onGrids runs m, lowered from p, in the simulator on grids of each number
// of blocks, and checks that it is race-free and that every output equals
// the reference evaluator's.
func onGrids(t *testing.T, m *kir.Module, p *te.Program, grids ...int) {
	t.Helper()
	in := randomFeeds(p)
	want, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, blocks := range grids {
		res, err := sim.Run(m, in, sim.Options{Race: true, ResidentBlocks: blocks})
		if err != nil {
			t.Fatal(err)
		}
		if res.RaceCount > 0 {
			t.Fatalf("%d blocks: %d races; first: %s", blocks, res.RaceCount, res.Races[0])
		}
		for _, o := range p.Outputs {
			if mm, err := numeric.Compare(res.Outputs[o.Name], want[o.Name], numeric.Tolerance{Rtol: 1e-4, Atol: 1e-5}); err != nil || mm != nil {
				t.Errorf("%d blocks: output %s: %v %v", blocks, o.Name, err, mm)
			}
		}
	}
}

// TestMatVec checks contractions tiled as matrix-vector products: a vector
// times a matrix whose columns (1000) take tiles of 8, and a matrix times
// a few vectors (the wide factor on the left), each right and race-free on
// several grids; and rows too long to stage at once (a vector of 4608,
// eight of 2048), staged and summed in two and four chunks.
func TestMatVec(t *testing.T) {
	bld := tb.New("mv")
	x := bld.Input("x", 1, 96)
	w := bld.Param("w", 96, 1000)
	a := bld.Param("a", 200, 64)
	v := bld.Input("v", 64, 8)
	long := bld.Input("long", 1, 4608)
	wl := bld.Param("wl", 4608, 64)
	rows := bld.Input("rows", 8, 2048)
	wr := bld.Param("wr", 2048, 32)
	y := bld.Matmul("y", x, w)
	z := bld.Matmul("z", a, v)
	yl := bld.Matmul("yl", long, wl)
	yr := bld.Matmul("yr", rows, wr)
	p := bld.Program(y, z, yl, yr)
	m, pl := fusedModule(t, p, "a100", false)
	for _, c := range []struct {
		t                  *te.Tensor
		wide, tileF, chunk int
	}{{y, 1, 8, 0}, {z, 0, 8, 0}, {yl, 1, 1, 2304}, {yr, 1, 1, 512}} {
		mv := pl.Schedules[c.t].MatVec
		if mv == nil || mv.Wide != c.wide || mv.TileF != c.tileF || mv.Chunk != c.chunk {
			t.Errorf("%s: matvec %+v; want the wide factor %d, %d columns per tile, chunks of %d", c.t.Name, mv, c.wide, c.tileF, c.chunk)
		}
	}
	onGrids(t, m, p, 1, 3, 64)
}

// TestMatVecColumns checks matrix-vector tiles whose threads sum several
// columns each (4 and 8 rows: 4 and 2 columns per thread, on the small
// GPU's 4 SMs), with the wide factor on either side, right and race-free on
// several grids.
func TestMatVecColumns(t *testing.T) {
	bld := tb.New("mvc")
	x := bld.Input("x", 4, 64)
	w := bld.Param("w", 64, 256)
	a := bld.Param("a", 256, 64)
	v := bld.Input("v", 64, 8)
	y := bld.Matmul("y", x, w)
	z := bld.Matmul("z", a, v)
	p := bld.Program(y, z)
	m, pl := fusedModule(t, p, "small", false)
	for _, c := range []struct {
		t                 *te.Tensor
		wide, tileF, cols int
	}{{y, 1, 16, 4}, {z, 0, 16, 2}} {
		mv := pl.Schedules[c.t].MatVec
		if mv == nil || mv.Wide != c.wide || mv.TileF != c.tileF || mv.Cols != c.cols {
			t.Errorf("%s: matvec %+v (%s); want the wide factor %d, %d threads across, %d columns each", c.t.Name, mv, pl.Schedules[c.t], c.wide, c.tileF, c.cols)
		}
	}
	onGrids(t, m, p, 1, 3, 4)
}

// TestFusedErrors checks that a plan the lowering cannot honour is an
// error that says why, never a wrong kernel: a kernel whose shared memory
// exceeds the GPU's per-block limit, and a matrix-vector schedule that
// does not fit its contraction.
func TestFusedErrors(t *testing.T) {
	bld := tb.New("mv")
	x := bld.Input("x", 1, 96)
	w := bld.Param("w", 96, 1000)
	y := bld.Matmul("y", x, w)
	p := bld.Program(y)
	for _, tt := range []struct {
		name  string
		spoil func(*partition.Plan)
		want  []string
	}{
		{"shared memory", func(pl *partition.Plan) { pl.GPU.SharedPerBlock = 1024 },
			[]string{"kernel y needs", "B of shared memory per block, more than the 1024 B of A100"}},
		{"matvec", func(pl *partition.Plan) { pl.Schedules[y].MatVec.TileF = 3 },
			[]string{"stage y", "tiles it as matrix-vector products, but it is not one"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, pl := fusedModule(t, p, "a100", false)
			tt.spoil(pl)
			_, err := lower.Fused(p, pl, lower.FusedOptions{})
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
