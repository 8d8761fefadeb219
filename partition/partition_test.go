package partition

import (
	"fmt"
	"strings"
	"testing"

	"tec/analysis"
	"tec/cost"
	"tec/gpu"
	tb "tec/internal/testkit/tebuild"
	"tec/schedule"
	"tec/te"
)

// mlp is x → matmul → relu → matmul → y.
func mlp(m, k, n int) *te.Program {
	b := tb.New("mlp")
	x, w1, w2 := b.Input("x", m, k), b.Param("w1", k, n), b.Param("w2", n, n)
	h := b.Matmul("h", x, w1)
	r := b.Compute("r", tb.Shape(m, n), func(ax []te.Index) te.Expr { return tb.Bin(te.Max, tb.Ld(h, ax...), tb.F(0)) })
	s := b.Compute("s", tb.Shape(m, n), func(ax []te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(r, ax...), tb.F(2)) })
	y := b.Matmul("y", s, w2)
	return b.Program(y)
}

// layernormRows is mean and variance of rows, then the normalised rows.
func layernormRows(m, n int) *te.Program {
	b := tb.New("ln")
	x := b.Input("x", m, n)
	mean := b.Compute("mean", tb.Shape(m), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "k", n, func(k te.Index) te.Expr { return tb.Ld(x, ax[0], k) }), tb.F(float64(n)))
	})
	vr := b.Compute("var", tb.Shape(m), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", n, func(k te.Index) te.Expr {
			d := tb.Bin(te.Sub, tb.Ld(x, ax[0], k), tb.Ld(mean, ax[0]))
			return tb.Bin(te.Mul, d, d)
		})
	})
	y := b.Compute("y", tb.Shape(m, n), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Bin(te.Sub, tb.Ld(x, ax...), tb.Ld(mean, ax[0])), tb.Un(te.Rsqrt, tb.Ld(vr, ax[0])))
	})
	return b.Program(y)
}

func plan(t *testing.T, p *te.Program, gpuName string, opts Options) *Plan {
	t.Helper()
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin(gpuName)
	pl, err := Partition(a, g, opts)
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func syncs(k *Kernel) string {
	var b strings.Builder
	for i, s := range k.Sync {
		b.WriteString(k.Stages[i].Name)
		switch s {
		case GridSync:
			b.WriteString("|G")
		case BlockSync:
			b.WriteString("|B")
		}
		b.WriteByte(' ')
	}
	return strings.TrimSpace(b.String())
}

func TestPartition(t *testing.T) {
	for _, tt := range []struct {
		name    string
		p       *te.Program
		gpu     string
		opts    Options
		kernels []string // each kernel's stages with the barrier before each
	}{
		{"mlp/per-te", mlp(64, 64, 64), "a100", Options{Strategy: PerTE}, []string{"h", "r", "s", "y"}},
		// r reads h's elements written by other threads (a tiled
		// contraction): grid sync; s reads r at its own index: none.
		{"mlp/cost", mlp(64, 64, 64), "a100", Options{}, []string{"h r|G s y|G"}},
		// On the small GPU (4 resident blocks) the second matmul's 16 tiles
		// of 64×64 exceed the grid: Alg. 1 splits before it.
		{"mlp/greedy", mlp(256, 64, 256), "small", Options{Strategy: Greedy}, []string{"h r|G s", "y"}},
		{"ln/cost", layernormRows(64, 256), "a100", Options{}, []string{"mean var|G y|G"}},
		// With reuse, var reads mean's row from the block that computed it,
		// and so does y: its 64 rows on 64 blocks take less than the grid
		// sync they save (cost.FewRowsPay), though the A100 has 108 SMs.
		{"ln/reuse", layernormRows(64, 256), "a100", Options{Reuse: true}, []string{"mean var|B y|B"}},
		{"ln/reuse/long", layernormRows(64, 65536), "a100", Options{Reuse: true}, []string{"mean var|B y|G"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pl := plan(t, tt.p, tt.gpu, tt.opts)
			var got []string
			for _, k := range pl.Kernels {
				got = append(got, syncs(k))
			}
			if strings.Join(got, "; ") != strings.Join(tt.kernels, "; ") {
				t.Errorf("kernels:\n got %q\nwant %q\n%s", got, tt.kernels, pl)
			}
			for i, k := range pl.Kernels {
				if (i == 0) != (k.Boundary == nil) {
					t.Errorf("kernel %d: boundary %v", i, k.Boundary)
				}
				if k.Boundary != nil && k.Boundary.Reason == "" {
					t.Errorf("kernel %d: boundary without a reason", i)
				}
				if k.Grid <= 0 || k.Cost.Total() <= 0 {
					t.Errorf("kernel %d: grid %d, cost %v", i, k.Grid, k.Cost)
				}
			}
		})
	}
}

func TestSchedules(t *testing.T) {
	pl := plan(t, mlp(64, 96, 48), "a100", Options{})
	h := pl.Schedules[pl.Program.Lookup("h")]
	// 256 threads in a 16×16 grid, one output each: a larger register tile
	// would leave 12 tiles fewer still, far from filling 108 SMs.
	if h.Kind != schedule.Contraction || h.TileM != 16 || h.TileN != 16 || h.RegM != 1 || h.RegN != 1 || h.M != 64 || h.N != 48 || h.K != 96 {
		t.Errorf("h: %s", h)
	}
	// A large product has tiles to spare: 4×4 outputs per thread, 256 tiles.
	big := plan(t, mlp(1024, 256, 1024), "a100", Options{})
	if h := big.Schedules[big.Program.Lookup("h")]; h.RegM != 4 || h.RegN != 4 || h.TileM != 64 || h.TileN != 64 || h.Tiles != 256 {
		t.Errorf("large h: %s", h)
	}
	if r := pl.Schedules[pl.Program.Lookup("r")]; r.Kind != schedule.Elementwise || r.From != pl.Program.Lookup("h") {
		t.Errorf("r: %s (propagated from the contraction h)", r)
	}
	// A long reduction with few outputs is split across blocks at -O3,
	// when its chunks save more than the split's two grid syncs cost: not
	// 4 rows of 8192 (2.3 µs a block per row, as much split), nor the
	// 2048 of an RMSNorm in a decode step.
	for _, tt := range []struct {
		rows, n int
		split   bool
	}{{4, 65536, true}, {4, 8192, false}, {1, 2048, false}, {1, 32768, true}} {
		b := tb.New("sum")
		x := b.Input("x", tt.rows, tt.n)
		s := b.Compute("s", tb.Shape(tt.rows), func(ax []te.Index) te.Expr {
			return tb.Reduce(te.Sum, "k", tt.n, func(k te.Index) te.Expr { return tb.Ld(x, ax[0], k) })
		})
		pl = plan(t, b.Program(s), "a100", Options{Split: true})
		sc := pl.Schedules[s]
		if got := sc.Kind == schedule.SplitReduce; got != tt.split || got && (sc.Chunks < 2 || sc.Tiles != tt.rows*sc.Chunks) {
			t.Errorf("%d×%d: %s; want split %v", tt.rows, tt.n, sc, tt.split)
		}
	}
}

// TestParamLimit checks that a kernel takes no more buffers than the
// GPU's kernel parameters hold: a chain of 12 element-wise TEs, each
// reading its predecessor, on a GPU with room for 8 pointers.
func TestParamLimit(t *testing.T) {
	b := tb.New("chain")
	prev := b.Input("x", 64)
	for i := range 12 {
		p := prev
		prev = b.Compute(fmt.Sprintf("t%d", i), tb.Shape(64), func(ax []te.Index) te.Expr {
			return tb.Bin(te.Add, tb.Un(te.Exp, tb.Ld(p, ax...)), tb.F(1))
		})
	}
	a, err := analysis.Analyze(b.Program(prev), analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin("a100")
	g.MaxParamBytes = 8 * 8
	for _, tt := range []struct {
		opts    Options
		kernels int
	}{
		{Options{}, 2},                       // 13 buffers: 8 + 5 (t6 read again)
		{Options{TempsInWorkspace: true}, 1}, // x, the output and the workspace
	} {
		pl, err := Partition(a, g, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(pl.Kernels) != tt.kernels {
			t.Errorf("%+v: %d kernels, want %d\n%s", tt.opts, len(pl.Kernels), tt.kernels, pl)
		}
		if len(pl.Kernels) > 1 && !strings.Contains(pl.Kernels[1].Boundary.Reason, "buffer parameters") {
			t.Errorf("boundary reason: %s", pl.Kernels[1].Boundary.Reason)
		}
	}
}

// TestPerTETile checks that a contraction in a kernel of its own (-O0 to
// -O2) computes one output per thread, at a quarter of the FP32 peak.
func TestPerTETile(t *testing.T) {
	// A kernel of its own (-O0 to -O2) computes one output per thread.
	pl := plan(t, mlp(256, 64, 256), "a100", Options{Strategy: PerTE})
	h := pl.Schedules[pl.Program.Lookup("h")]
	if h.RegM != 1 || h.RegN != 1 || h.TileM != 16 || h.TileN != 16 || h.Tiles != 256 || cost.Efficiency(h) != 0.25 {
		t.Errorf("per-TE h: %s", h)
	}
}

// TestMatVecSchedule checks when a contraction is tiled as matrix-vector
// products and how wide its tiles are on the A100 model (108 SMs).
func TestMatVecSchedule(t *testing.T) {
	for _, tt := range []struct {
		m, k, n int
		tileF   int // 0: not a MatVec
		chunk   int // the part of K staged at once; 0: all of it
	}{
		{1, 512, 4096, 16, 0},     // 256 tiles of 16 fill the SMs
		{1, 512, 1024, 8, 0},      // 64 tiles of 16 would not: 128 of 8
		{2, 1152, 48, 2, 0},       // narrowed to 2 columns (24 tiles), each thread still 9 k
		{1, 1280, 1000, 8, 0},     // 1000 columns: tiles of 8 divide them
		{16, 512, 1024, 0, 0},     // 16 rows: an ordinary tile
		{1, 8, 64, 0, 0},          // 16 threads per column, 8 k: an ordinary tile
		{1, 64, 8192, 64, 0},      // a head's 64: 4 threads per column, 16 k each (128 tiles)
		{1, 64, 4096, 32, 0},      // 64 tiles of 64 would not fill the SMs: 128 of 32, 8 k each
		{1, 8192, 2048, 16, 4096}, // an FFN's down projection: two chunks of 16 KB
		{8, 2048, 2048, 16, 512},  // eight rows of 2048: four chunks; 2 columns per thread
		{1, 4608, 64, 1, 2304},    // 4096 does not divide K: the largest multiple of Split that does
	} {
		p := mlp(tt.m, tt.k, tt.n)
		pl := plan(t, p, "a100", Options{Split: true, Reuse: true})
		var h *te.Tensor
		for _, x := range p.Tensors {
			if x.Name == "h" {
				h = x
			}
		}
		mv := pl.Schedules[h].MatVec
		switch {
		case tt.tileF == 0 && mv != nil:
			t.Errorf("%dx%dx%d: matvec %+v; want none", tt.m, tt.k, tt.n, mv)
		case tt.tileF != 0 && (mv == nil || mv.Width() != tt.tileF || mv.Wide != 1 || mv.Split*mv.TileF != 256 || mv.Chunk != tt.chunk):
			t.Errorf("%dx%dx%d: matvec %+v; want %d columns per tile, chunks of %d", tt.m, tt.k, tt.n, mv, tt.tileF, tt.chunk)
		}
		// Eight rows of many columns take several columns per thread (as
		// many as their partial sums' shared memory allows), for a better
		// efficiency than one column's.
		if one := float64(tt.m) / float64(tt.m+1) / 2; mv != nil && tt.m == 8 && (mv.Cols < 2 || cost.Efficiency(pl.Schedules[h]) <= one) {
			t.Errorf("%dx%dx%d: %d columns per thread, efficiency %g", tt.m, tt.k, tt.n, mv.Cols, cost.Efficiency(pl.Schedules[h]))
		}
		if s := pl.Schedules[h]; mv != nil && s.SharedBytes > 4*(tt.m*4096+256*tt.m*max(mv.Cols, 1)) {
			t.Errorf("%dx%dx%d: %d B of shared memory", tt.m, tt.k, tt.n, s.SharedBytes)
		}
	}
}

// TestArgReduceSchedule checks that an argmax over a long row (a greedy
// token over a vocabulary) is split across blocks in chunks of whole
// passes of a block's 16-byte loads (1024 positions for 256 threads), or
// a block's row reduction where splits are not allowed, one over a
// medium row a block's row reduction, and one over a short row a
// thread's loop.
func TestArgReduceSchedule(t *testing.T) {
	for _, tt := range []struct {
		n      int
		split  bool
		kind   schedule.Kind
		chunks int
	}{
		{128256, true, schedule.SplitReduce, 126},
		{128256, false, schedule.RowReduce, 0},
		{64, true, schedule.RowReduce, 0},
		{32, true, schedule.Elementwise, 0},
	} {
		b := tb.New("greedy")
		x := b.Input("x", 2, tt.n)
		next := b.Compute("next", tb.Shape(2), func(ax []te.Index) te.Expr {
			return tb.Reduce(te.Argmax, "k", tt.n, func(k te.Index) te.Expr { return tb.Ld(x, ax[0], k) })
		})
		pl := plan(t, b.Program(next), "h100", Options{Split: tt.split, Reuse: true})
		s := pl.Schedules[next]
		if s.Kind != tt.kind || s.Kind == schedule.RowReduce && s.Tiles != 2 ||
			s.Kind == schedule.SplitReduce && (s.Chunks != tt.chunks || s.Tiles != 2*tt.chunks) {
			t.Errorf("argmax over %d, split %v: %s; want %s, %d chunks", tt.n, tt.split, s, tt.kind, tt.chunks)
		}
	}
}

// TestArgChunks checks the chunks of split argmaxes: whole passes of the
// block's loads, as many chunks as the blocks allow, at least 2.
func TestArgChunks(t *testing.T) {
	for _, tt := range []struct{ ext, threads, most, want int }{
		{128256, 256, 264, 126}, // a pass per chunk
		{128256, 256, 100, 63},  // two passes per chunk
		{128256, 256, 1, 2},
		{4096, 256, 264, 4},
		{2048, 1024, 264, 2},
	} {
		if got := argChunks(tt.ext, tt.threads, tt.most); got != tt.want {
			t.Errorf("argChunks(%d, %d, %d) = %d, want %d", tt.ext, tt.threads, tt.most, got, tt.want)
		}
	}
}
