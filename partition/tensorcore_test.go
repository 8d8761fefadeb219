package partition

import (
	"testing"

	"tec/cost"
	"tec/gpu"
	tb "tec/internal/testkit/tebuild"
	"tec/schedule"
	"tec/te"
)

// TestTensorCoreSchedule checks that a contraction of f16 operands in a
// kernel of its own gets the tensor-core schedule that backend/lower
// builds, priced at the tensor cores' peak (so well below the same
// contraction of f32 operands on the CUDA cores), and that one too small
// for an MMA keeps the SIMT tile.
func TestTensorCoreSchedule(t *testing.T) {
	matmul := func(dt te.DType, m, k, n int) *te.Program {
		b := tb.New("mm")
		x, w := b.InputOf("x", dt, m, k), b.ParamOf("w", dt, k, n)
		y := b.Compute("y", tb.Shape(m, n), func(ax []te.Index) te.Expr {
			return tb.Reduce(te.Sum, "k", k, func(kk te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(x, ax[0], kk), tb.Ld(w, kk, ax[1])) })
		})
		return b.Program(y)
	}
	planned := func(p *te.Program) (*schedule.Schedule, float64) {
		pl := plan(t, p, "a100", Options{Strategy: PerTE})
		y := p.Outputs[0]
		return pl.Schedules[y], pl.Kernels[0].Cost.Total()
	}
	s16, c16 := planned(matmul(te.F16, 1024, 1024, 1024))
	s32, c32 := planned(matmul(te.F32, 1024, 1024, 1024))
	if !s16.TensorCores || s16.TensorIn != te.F16 || s16.Threads != schedule.TensorCoreWarps*32 || s16.TileM != 64 || s16.TileN != 64 {
		t.Errorf("f16 schedule %s, want tensor cores over 64×64 tiles", s16)
	}
	if s32.TensorCores {
		t.Errorf("f32 schedule %s on tensor cores", s32)
	}
	if !(c16 < c32/4) {
		t.Errorf("f16 on tensor cores predicted %.3g s, f32 %.3g s: want well under a quarter", c16, c32)
	}
	if small, _ := planned(matmul(te.F16, 8, 64, 64)); small.TensorCores {
		t.Errorf("8-row f16 schedule %s on tensor cores", small)
	}
}

// TestSplitK checks that a fused f16 contraction with too few output tiles
// for the A100's 108 SMs (BERT's second FFN matmul: 384×768 outputs, K
// 3072) splits its K over blocks, in equal chunks of whole staged k
// steps, because the cost model predicts it faster than the unsplit
// schedule of the same block; that one with outputs enough (4096 rows)
// does not; and that a split stage has its own grid sync (InnerSync).
func TestSplitK(t *testing.T) {
	matmul := func(m, k, n int) *te.Program {
		b := tb.New("mm")
		x, w := b.InputOf("x", te.F16, m, k), b.ParamOf("w", te.F16, k, n)
		y := b.Compute("y", tb.Shape(m, n), func(ax []te.Index) te.Expr {
			return tb.Reduce(te.Sum, "k", k, func(kk te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(x, ax[0], kk), tb.Ld(w, kk, ax[1])) })
		})
		return b.Program(y)
	}
	g, _ := gpu.Builtin("a100")
	for _, tc := range []struct {
		m     int
		split bool
	}{{384, true}, {4096, false}} {
		p := matmul(tc.m, 3072, 768)
		pl := plan(t, p, "a100", Options{Split: true, Reuse: true, Threads: 256})
		s := pl.stage(p.Outputs[0])
		if !s.TensorCores || (s.KSplit > 1) != tc.split || s.InnerSync() != tc.split {
			t.Fatalf("%d rows: schedule %s, want tensor cores, split K %v", tc.m, s, tc.split)
		}
		if !tc.split {
			continue
		}
		if s.KSplit*s.KChunk != s.K || s.KChunk%schedule.TensorCoreTileK != 0 {
			t.Errorf("K %d split as %d × %d", s.K, s.KSplit, s.KChunk)
		}
		whole := s.clone()
		whole.Tiles /= s.KSplit
		whole.KSplit, whole.KChunk = 0, 0
		if split, unsplit := cost.Ideal(g, s.Schedule, s.Price), cost.Ideal(g, whole.Schedule, whole.Price); split >= unsplit {
			t.Errorf("split over %d blocks predicted %.3g s, unsplit %.3g s", s.KSplit, split, unsplit)
		}
	}
}

// TestDeepenPipelines checks that a fused kernel's tensor-core stage whose
// operands cp.async copies gets as many stages of them as its kernel's
// shared memory holds without fewer blocks per SM than two stages leave,
// and is priced with them: an f16 1024³ matmul in 64×64×32 tiles (8 KB a
// stage) on the A100 model, at 256 and 128 threads a block.
func TestDeepenPipelines(t *testing.T) {
	b := tb.New("mm")
	x, w := b.InputOf("x", te.F16, 1024, 1024), b.ParamOf("w", te.F16, 1024, 1024)
	y := b.Compute("y", tb.Shape(1024, 1024), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", 1024, func(k te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(x, ax[0], k), tb.Ld(w, k, ax[1])) })
	})
	p := b.Program(y)
	g, _ := gpu.Builtin("a100")
	for _, threads := range []int{128, 256} {
		pl := plan(t, p, "a100", Options{Threads: threads})
		s, k := pl.Schedules[y], pl.Kernels[0]
		if !s.TensorCores || s.PipelineStages < 3 || s.PipelineStages > schedule.MaxPipelineStages {
			t.Fatalf("%d threads: %s, want tensor cores in 3 or 4 cp.async stages", threads, s)
		}
		stage := (s.TileM + s.TileN) * s.TileK * 2
		if s.SharedBytes < s.PipelineStages*stage {
			t.Errorf("%d threads: %d bytes of shared memory, want %d stages of %d", threads, s.SharedBytes, s.PipelineStages, stage)
		}
		two := k.Resources.Block()
		two.SharedBytes -= (s.PipelineStages - 2) * stage
		if n, _ := g.BlocksPerSM(two); k.BlocksPerSM != n {
			t.Errorf("%d threads: %d blocks per SM with %d stages, %d with two", threads, k.BlocksPerSM, s.PipelineStages, n)
		}
		if s.PipelineStages < schedule.MaxPipelineStages {
			deeper := k.Resources.Block()
			deeper.SharedBytes += stage
			if n, _ := g.BlocksPerSM(deeper); n >= k.BlocksPerSM && deeper.SharedBytes <= g.SharedPerBlock {
				t.Errorf("%d threads: %d stages, but %d would keep %d blocks per SM", threads, s.PipelineStages, s.PipelineStages+1, n)
			}
		}
		if want := s.Load.InFlight; want%(s.PipelineStages-1) != 0 {
			t.Errorf("%d threads: %d loads in flight, not a multiple of the %d steps in flight", threads, want, s.PipelineStages-1)
		}
	}
}
