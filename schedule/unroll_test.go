package schedule

import (
	"slices"
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// TestReduceUnroll checks how a thread's reduction loops are unrolled:
// nests of at most UnrollPoints points whole, the innermost loops whole
// and the next by the rest of the window, a loop left to the compiler
// where not even two of its iterations fit, and nothing where the body
// nests a reduction that moves with the axes (one that does not is
// computed before the loops and unrolls as a load).
func TestReduceUnroll(t *testing.T) {
	b := tb.New("u")
	x := b.Input("x", 4096)
	sum := func(extents ...int) *te.Reduce {
		names := []string{"a", "b", "c"}[:len(extents)]
		return tb.ReduceN(te.Sum, names, extents, func(r []te.Index) te.Expr {
			i := r[0]
			for _, ix := range r[1:] {
				i = i.Add(ix)
			}
			return tb.Ld(x, i)
		}).(*te.Reduce)
	}
	nest := func(moving bool) *te.Reduce {
		return tb.Reduce(te.Sum, "a", 8, func(a te.Index) te.Expr {
			return tb.Reduce(te.ReduceMax, "b", 8, func(bi te.Index) te.Expr {
				if moving {
					return tb.Ld(x, a.Add(bi))
				}
				return tb.Ld(x, bi)
			})
		}).(*te.Reduce)
	}
	for _, tt := range []struct {
		name    string
		r       *te.Reduce
		factors []int
		points  int
	}{
		{"a flash-decoding merge's 8 chunks", sum(8), []int{8}, 8},
		{"4×4 whole", sum(4, 4), []int{4, 4}, 16},
		{"49 by 16", sum(49), []int{16}, 16},
		{"a 7×7 pool two rows at a time", sum(7, 7), []int{2, 7}, 14},
		{"3×3 of 64 channels: the 3×3 whole", sum(64, 3, 3), []int{1, 3, 3}, 9},
		{"17 by 16", sum(17), []int{16}, 16},
		{"a long inner loop by 16", sum(4, 100), []int{1, 16}, 16},
		{"a nested reduction that moves", nest(true), []int{1}, 1},
		{"a nested reduction that does not", nest(false), []int{8}, 8},
	} {
		factors, points := ReduceUnroll(tt.r)
		if !slices.Equal(factors, tt.factors) || points != tt.points {
			t.Errorf("%s: factors %v, %d points; want %v, %d", tt.name, factors, points, tt.factors, tt.points)
		}
	}
}
