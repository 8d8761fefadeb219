package partition

import (
	"math"
	"strings"
	"testing"

	"tec/analysis"
	"tec/contraction"
	"tec/gpu"
	tb "tec/internal/testkit/tebuild"
	"tec/schedule"
	"tec/te"
)

// TestMergeRes checks that a kernel's resources merged stage by stage
// count the arenas as SharedBytes does, and the weight cache once.
func TestMergeRes(t *testing.T) {
	stage := func(persistent int, arrays ...schedule.Array) schedule.Resources {
		s := &schedule.Schedule{Threads: 256}
		s.SetArrays(arrays...)
		s.SharedBytes += persistent
		return s.Resources()
	}
	a := stage(0, schedule.Array{DType: te.F32, Len: 2048}, schedule.Array{DType: te.F32, Len: 1024})
	b := stage(0, schedule.Array{DType: te.F32, Len: 16}, schedule.Array{DType: te.F32, Len: 4096})
	c := stage(0, schedule.Array{DType: te.F32, Len: 256}, schedule.Array{DType: te.I32, Len: 256})
	d := stage(2052, schedule.Array{DType: te.F32, Len: 64}, schedule.Array{DType: te.F32, Len: 256})
	got := mergeRes(mergeRes(mergeRes(a, b), c), d)
	want := schedule.SharedBytes(2052, [][]schedule.Array{
		{{DType: te.F32, Len: 2048}, {DType: te.F32, Len: 1024}}, {{DType: te.F32, Len: 16}, {DType: te.F32, Len: 4096}},
		{{DType: te.F32, Len: 256}, {DType: te.I32, Len: 256}}, {{DType: te.F32, Len: 64}, {DType: te.F32, Len: 256}},
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

// TestShrink checks issue 23's masked scores of one query, whose 1×256
// tile on a 16 KiB, 256-thread GPU once staged its factors 8 of K at a
// time to fit: a matrix-vector schedule now (its mask skipping tiles of
// columns, backend/lower's matVecLive), a column's threads on a warp's
// lanes (MatVec.KLanes, which a mask no longer rules out), whose row and
// partial sums take 1664 B, at -O3 and -O4 and on the A100, the kernel
// within the GPU's shared memory.
func TestShrink(t *testing.T) {
	p := maskedScores(200, 64)
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a100, _ := gpu.Builtin("a100")
	for _, tt := range []struct {
		name  string
		g     gpu.Model
		reuse bool
	}{
		{"small16/O3", smallShared(256), false},
		{"small16/O4", smallShared(256), true},
		{"a100", a100, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := Partition(a, tt.g, Options{Split: true, Reuse: tt.reuse})
			if err != nil {
				t.Fatal(err)
			}
			s := pl.Schedules[p.Outputs[0]]
			if s.Kind != schedule.Contraction || s.Mask == nil || s.MatVec == nil || !s.MatVec.KLanes || s.SharedBytes != 1664 {
				t.Errorf("schedule %s, want a masked matrix-vector contraction on a warp's lanes of 1664 B", s)
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
// computes it a block or a thread per output, and the plan says which (it
// planned a 16×16 tile's 2048 B of staged factors for a kernel that
// declared a block reduction's 1024 B). Its 4,096 outputs of 64 terms
// are a thread's each: 16 of the terms' loads in flight at once (the
// nested sum computed once, before the loop), where a block per output
// would have 64 of its 256 threads load a term each.
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
	if d, ok := contraction.Of(y); !ok || !nestsReduce(d.Reduce) {
		t.Fatal("not a contraction with a nested reduction")
	}
	pl := plan(t, p, "a100", Options{Split: true, Reuse: true})
	sy := pl.Schedules[y]
	if sy.Kind != schedule.Elementwise || sy.Tiles != 64*64/256 || len(sy.Arrays) != 0 || sy.SharedBytes != 0 {
		t.Errorf("schedule %s, arrays %v: want a thread per output, no shared memory", sy, sy.Arrays)
	}
}
