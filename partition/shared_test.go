package partition

import (
	"math"
	"slices"
	"strings"
	"testing"

	"tec/analysis"
	"tec/gpu"
	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

func TestPlace(t *testing.T) {
	for _, tt := range []struct {
		name    string
		arrays  []Array
		offsets []int
		need    map[te.DType]int
	}{
		{"none", nil, []int{}, map[te.DType]int{}},
		{"one tile", []Array{{te.F32, 64}, {te.F32, 4096}}, []int{0, 64}, map[te.DType]int{te.F32: 4160}},
		// An odd array takes whole 16-byte units, so that the next starts
		// aligned.
		{"odd rows", []Array{{te.F32, 13}, {te.F32, 256}, {te.F32, 1}}, []int{0, 16, 272}, map[te.DType]int{te.F32: 276}},
		{"argmax", []Array{{te.F32, 256}, {te.I32, 256}}, []int{0, 0}, map[te.DType]int{te.F32: 256, te.I32: 256}},
		{"f16 operands", []Array{{te.F16, 7}, {te.F16, 9}, {te.F32, 3}}, []int{0, 8, 0}, map[te.DType]int{te.F16: 24, te.F32: 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			offsets, need := Place(tt.arrays)
			if !slices.Equal(offsets, tt.offsets) {
				t.Errorf("offsets %v, want %v", offsets, tt.offsets)
			}
			if len(need) != len(tt.need) {
				t.Errorf("need %v, want %v", need, tt.need)
			}
			for dt, n := range tt.need {
				if need[dt] != n {
					t.Errorf("need %v, want %v", need, tt.need)
				}
			}
		})
	}
}

// TestSharedBytes checks the rule of shared.go: the scratch arrays of a
// kernel's stages share an arena per type, as large as the largest
// stage's arrays of that type, beside the persistent arrays.
func TestSharedBytes(t *testing.T) {
	matVec := []Array{{te.F32, 4 * 512}, {te.F32, 4 * 256}} // 12288 B
	masked := []Array{{te.F32, 16}, {te.F32, 16 * 256}}     // 16448 B
	argmax := []Array{{te.F32, 256}, {te.I32, 256}}         // 1024 B each
	for _, tt := range []struct {
		name       string
		persistent int
		stages     [][]Array
		want       int
	}{
		{"nothing", 0, nil, 0},
		// The kernel of issue 23: the largest stage, not each array's
		// largest size (20480 B).
		{"matvec and masked", 0, [][]Array{matVec, masked}, 16448},
		{"and a cache", 2052, [][]Array{matVec, masked}, 16448 + 2052},
		{"and an argmax", 0, [][]Array{matVec, argmax}, 12288 + 1024},
		{"argmaxes", 0, [][]Array{argmax, argmax}, 2048},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := SharedBytes(tt.persistent, tt.stages...); got != tt.want {
				t.Errorf("SharedBytes = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestMergeRes checks that a kernel's resources merged stage by stage
// count the arenas as SharedBytes does, and the weight cache once.
func TestMergeRes(t *testing.T) {
	stage := func(persistent int, arrays ...Array) Resources {
		s := &Schedule{Threads: 256}
		s.setArrays(arrays...)
		s.SharedBytes += persistent
		return s.Resources()
	}
	a := stage(0, Array{te.F32, 2048}, Array{te.F32, 1024})
	b := stage(0, Array{te.F32, 16}, Array{te.F32, 4096})
	c := stage(0, Array{te.F32, 256}, Array{te.I32, 256})
	d := stage(2052, Array{te.F32, 64}, Array{te.F32, 256})
	got := mergeRes(mergeRes(mergeRes(a, b), c), d)
	want := SharedBytes(2052, [][]Array{
		{{te.F32, 2048}, {te.F32, 1024}}, {{te.F32, 16}, {te.F32, 4096}},
		{{te.F32, 256}, {te.I32, 256}}, {{te.F32, 64}, {te.F32, 256}},
	}...)
	if got.SharedBytes != want || want != 16448+1024+2052 {
		t.Errorf("merged %d B, SharedBytes %d B, want %d", got.SharedBytes, want, 16448+1024+2052)
	}
}

// maskedScores is issue 23's masked contraction of one query against a
// cache of s positions, sc[b, t] = select(t <= pos[b], sum[e](q[b, e] *
// kc[b, t, e]), -inf).
func maskedScores(s, e int) *te.Program {
	b := tb.New("m")
	pos := b.InputOf("pos", te.I32, 1)
	q, kc := b.Input("q", 1, e), b.Input("kc", 1, s, e)
	sc := b.Compute("sc", tb.Shape(1, s), func(ax []te.Index) te.Expr {
		sum := tb.Reduce(te.Sum, "e", e, func(x te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(q, ax[0], x), tb.Ld(kc, ax[0], ax[1], x))
		})
		return tb.Sel(tb.Bin(te.Le, tb.Idx(ax[1]), tb.Ld(pos, ax[0])), sum, tb.F(math.Inf(-1)))
	})
	return b.Program(sc)
}

// smallShared is a valid GPU description of 16 KiB of shared memory per
// block and 256 threads, the least docs/gpu.md allows.
func smallShared(threads int) gpu.Model {
	g, _ := gpu.Builtin("a100")
	g.Name, g.SMs = "small16", 7
	g.SharedPerSM, g.SharedPerBlock = 16<<10, 16<<10
	g.MaxThreadsPerSM, g.MaxThreadsPerBlock = threads, threads
	return g
}

// TestShrink checks the fallback tile of a contraction whose block does
// not fit: issue 23's masked scores on a 16 KiB, 256-thread GPU stage a
// 1×256 tile's factors 8 of K at a time (16448 B at 16), at -O3 and -O4;
// on the A100 the tile keeps its 16.
func TestShrink(t *testing.T) {
	p := maskedScores(200, 64)
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a100, _ := gpu.Builtin("a100")
	for _, tt := range []struct {
		name   string
		g      gpu.Model
		reuse  bool
		tileK  int
		shared int
	}{
		{"small16/O3", smallShared(256), false, 8, 4 * (8 + 8*256)},
		{"small16/O4", smallShared(256), true, 8, 4 * (8 + 8*256)},
		{"a100", a100, true, 16, 4 * (16 + 16*256)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := Partition(a, tt.g, Options{Split: true, Reuse: tt.reuse})
			if err != nil {
				t.Fatal(err)
			}
			s := pl.Schedules[p.Outputs[0]]
			if s.Kind != Contraction || s.Mask == nil || s.TileK != tt.tileK || s.SharedBytes != tt.shared {
				t.Errorf("schedule %s, want a masked contraction staging %d of K (%d B)", s, tt.tileK, tt.shared)
			}
			if k := pl.Kernels[0]; k.Resources.SharedBytes > tt.g.SharedPerBlock {
				t.Errorf("kernel of %d B on a GPU of %d B per block", k.Resources.SharedBytes, tt.g.SharedPerBlock)
			}
		})
	}
}

// TestFitHint checks that a stage that fits on no SM is refused with what
// the user can set: the level and the GPU description's block size, not
// the block the plan chose.
func TestFitHint(t *testing.T) {
	a, err := analysis.Analyze(maskedScores(200, 64), analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := smallShared(256)
	g.RegsPerSM = 1024 // not one 256-thread block of 32 registers per thread
	_, err = Partition(a, g, Options{Split: true, Reuse: true})
	if err == nil || !strings.Contains(err.Error(), "does not fit on small16") || !strings.Contains(err.Error(), FitHint) {
		t.Errorf("err = %v, want the stage refused with %q", err, FitHint)
	}
}

// TestNestedContraction checks the schedule of a contraction with a
// reduction nested in a factor that is not a matrix-vector product,
// y[i, j] = sum[k](x[i, k] * w[k, j] / sum[m](s[m])): backend/lower
// computes it a block per output, and the plan says so (it planned a
// 16×16 tile's 2048 B of staged factors for a kernel that declared a
// block reduction's 1024 B).
func TestNestedContraction(t *testing.T) {
	b := tb.New("m")
	x, w, s := b.Input("x", 64, 64), b.Input("w", 64, 64), b.Input("s", 32)
	y := b.Compute("y", tb.Shape(64, 64), func(ax []te.Index) te.Expr {
		norm := tb.Reduce(te.Sum, "m", 32, func(m te.Index) te.Expr { return tb.Ld(s, m) })
		return tb.Reduce(te.Sum, "k", 64, func(k te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(x, ax[0], k), tb.Bin(te.Div, tb.Ld(w, k, ax[1]), norm))
		})
	})
	p := b.Program(y)
	if d, ok := ContractionDims(y); !ok || !nestsReduce(d.Reduce) {
		t.Fatal("not a contraction with a nested reduction")
	}
	pl := plan(t, p, "a100", Options{Split: true, Reuse: true})
	sy := pl.Schedules[y]
	if sy.Kind != RowReduce || sy.Tiles != 64*64 || !slices.Equal(sy.Arrays, []Array{{te.F32, 256}}) {
		t.Errorf("schedule %s, arrays %v: want a block per output reducing in one f32 array", sy, sy.Arrays)
	}
}
