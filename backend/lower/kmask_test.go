package lower_test

import (
	"fmt"
	"math"
	"testing"

	"tec/backend/kir"
	"tec/backend/lower"
	"tec/backend/sim"
	"tec/internal/numeric"
	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// TestMatVecKMask checks the value side of masked attention, o[b, e] =
// sum[t](p[b, t] * v[b, t, e]) with p = exp(select(t <= pos[b], sc, -inf))
// exactly 0 past pos[b]: a matrix-vector stage with a k mask, staged at
// once (T = 64) or in chunks (T = 4608), right and race-free on several
// grids at positions from the first slot to the last, and loading at
// least v's row (4·E bytes) fewer for each t past pos[b] than at the last;
// and the same unfused (-O0), where o is a row reduction per output.
func TestMatVecKMask(t *testing.T) {
	const B, E = 2, 8
	for _, c := range []struct {
		T      int
		chunks bool
	}{{64, false}, {4608, true}} {
		t.Run(fmt.Sprint("T", c.T), func(t *testing.T) {
			T := c.T
			bld := tb.New("values")
			sc, v := bld.Input("sc", B, T), bld.Input("v", B, T, E)
			pos := bld.InputOf("pos", te.I32, B)
			p := bld.Compute("p", tb.Shape(B, T), func(ax []te.Index) te.Expr {
				return tb.Un(te.Exp, tb.Sel(tb.Bin(te.Le, tb.Idx(ax[1]), tb.Ld(pos, ax[0])), tb.Ld(sc, ax[0], ax[1]), tb.F(math.Inf(-1))))
			})
			o := bld.Compute("o", tb.Shape(B, E), func(ax []te.Index) te.Expr {
				return tb.Reduce(te.Sum, "t", T, func(k te.Index) te.Expr {
					return tb.Bin(te.Mul, tb.Ld(p, ax[0], k), tb.Ld(v, ax[0], k, ax[1]))
				})
			})
			prog := bld.Program(o)
			fused, pl := fusedModule(t, prog, "a100", false)
			s := pl.Schedules[o]
			if s.MatVec == nil || s.KMask == nil || (s.MatVec.Chunk > 0) != c.chunks {
				t.Fatalf("o: %s; want a matrix-vector stage with a k mask, chunked %v", s, c.chunks)
			}
			// Unfused, o is a row reduction per output whose terms test
			// their position.
			unfused, err := lower.Unfused(prog, lower.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []*kir.Module{fused, unfused} {
				var full int64
				for _, at := range [][]float64{{float64(T - 1), float64(T - 1)}, {0, 0}, {float64(T / 2), 3}} {
					in := randomFeeds(prog)
					copy(in["pos"].Data, at)
					want, err := te.Evaluate(prog, in, te.EvalOptions{})
					if err != nil {
						t.Fatal(err)
					}
					for _, blocks := range []int{1, 3, 64} {
						res, err := sim.Run(m, in, sim.Options{Race: true, ResidentBlocks: blocks})
						if err != nil {
							t.Fatal(err)
						}
						if res.RaceCount > 0 {
							t.Fatalf("pos %v, %d blocks: %d races; first: %s", at, blocks, res.RaceCount, res.Races[0])
						}
						if mm, err := numeric.Compare(res.Outputs["o"], want["o"], numeric.Tolerance{Rtol: 1e-4, Atol: 1e-5}); err != nil || mm != nil {
							t.Errorf("pos %v, %d blocks: %v %v", at, blocks, err, mm)
						}
						loads := res.Total().LoadBytes
						if at[0] == float64(T-1) {
							full = loads
							continue
						}
						dead := int64(2*(T-1) - int(at[0]) - int(at[1]))
						if got := full - loads; got < 4*E*dead {
							t.Errorf("pos %v, %d blocks: %d bytes fewer loaded than at the last slot; want at least v's %d of the %d t past pos", at, blocks, got, 4*E*dead, dead)
						}
					}
				}
			}
		})
	}
}
