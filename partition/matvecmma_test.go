package partition

import (
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/schedule"
	"tec/te"
)

// rowsProgram is y[r, n] = Σ_k x[r, k]·w[n, k]: rows x of type xt, weights
// w of type wt laid out [out, in].
func rowsProgram(xt, wt te.DType, rows, k, n int) *te.Program {
	b := tb.New("rows")
	x := b.InputOf("x", xt, rows, k)
	w := b.ParamOf("w", wt, n, k)
	y := b.Compute("y", tb.Shape(rows, n), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", k, func(kk te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(x, ax[0], kk), tb.Ld(w, ax[1], kk))
		})
	})
	return b.Program(y)
}

// TestMMAMatVec checks which matrix-vector products the planner puts on
// tensor cores (schedule.MatVec.MMA) and how it tiles them: 2 to 16 rows
// rounded to the weights' f16 or bf16 on a GPU with mma.m16n8k16, the
// widest tile of whole column groups that still gives every SM a tile, a
// column group's warps splitting the k staged in whole steps, and the
// staged rows within the block's shared memory.
func TestMMAMatVec(t *testing.T) {
	for _, c := range []struct {
		name   string
		p      *te.Program
		gpu    string
		mma    bool
		tileF  int // where mma
		staged int // k staged at once, where mma
	}{
		{"decode B=8 down projection", rowsProgram(te.BF16, te.BF16, 8, 8192, 2048), "h100", true, 8, 2048},
		{"decode B=8 gate and up", rowsProgram(te.BF16, te.BF16, 8, 2048, 16384), "h100", true, 64, 2048},
		{"two rows f16", rowsProgram(te.F16, te.F16, 2, 1024, 4096), "a100", true, 32, 1024},
		{"twelve rows", rowsProgram(te.BF16, te.BF16, 12, 2048, 2048), "h100", true, 8, 2048},
		// Nine steps of the block's warps: three a round.
		{"k of nine steps", rowsProgram(te.BF16, te.BF16, 8, 2304, 2048), "h100", true, 8, 2304},
		{"one row", rowsProgram(te.BF16, te.BF16, 1, 2048, 2048), "h100", false, 0, 0},
		{"f32 rows", rowsProgram(te.F32, te.BF16, 8, 2048, 2048), "h100", false, 0, 0},
		{"no mma.m16n8k16", rowsProgram(te.F16, te.F16, 8, 2048, 2048), "t4", false, 0, 0},
		{"k of no whole steps", rowsProgram(te.BF16, te.BF16, 8, 200, 2048), "h100", false, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl := plan(t, c.p, c.gpu, Options{Strategy: CostModel})
			s := pl.Schedules[c.p.Outputs[0]]
			mv := s.MatVec
			if got := mv != nil && mv.MMA; got != c.mma {
				t.Fatalf("y on tensor cores: %v, want %v: %s", got, c.mma, s)
			}
			if !c.mma {
				return
			}
			if mv.TileF != c.tileF || mv.StagedK(s.K) != c.staged {
				t.Errorf("tiles of %d columns staging %d of k, want %d and %d: %s", mv.TileF, mv.StagedK(s.K), c.tileF, c.staged, s)
			}
			warps := s.Threads / warpLanes
			groups := mv.TileF / schedule.MMAColumns
			if mv.Split*mv.TileF != s.Threads || warps%groups != 0 {
				t.Errorf("%d columns a tile of %d threads, %d a column: not whole column groups of warps", mv.TileF, s.Threads, mv.Split)
			}
			if step := schedule.MMAStepK * warps / groups; c.staged%step != 0 || mv.InFlight < 1 || (c.staged/step)%mv.InFlight != 0 {
				t.Errorf("%d of k staged, %d steps in flight: not whole rounds of steps of %d", c.staged, mv.InFlight, step)
			}
		})
	}
}
