package lower

import (
	"testing"

	"tec/te"
)

// TestDeadBranch lowers selects whose condition the ranges decide and whose
// other branch loads out of bounds (issue 17, F1), built directly in te so
// that no front end has folded them: the lowering must drop the dead branch
// rather than hand the verifier an out-of-bounds constant index.
func TestDeadBranch(t *testing.T) {
	tests := []struct {
		name  string
		build func(b *builder) *te.Tensor
	}{
		{"then_dead_extent_one", func(b *builder) *te.Tensor {
			x := b.input("x", te.F32, 2)
			return b.f32("y", shp(1), func(ax []te.Index) te.Expr {
				i := ax[0].AddConst(-2)
				return sel(bin(te.Ge, ix(i), ci(0)), ld(x, i), cf(0))
			})
		}},
		{"else_dead_constant", func(b *builder) *te.Tensor {
			a, bb := b.input("a", te.F32, 3), b.input("b", te.F32, 2)
			return b.f32("y", shp(4), func(ax []te.Index) te.Expr {
				return mul(ix(ax[0]), sel(bin(te.Lt, ci(1), ci(3)), ld(a, c(1)), ld(bb, c(-2))))
			})
		}},
		{"else_dead_under_reduce", func(b *builder) *te.Tensor {
			x := b.input("x", te.F32, 4)
			return b.f32("y", shp(2), func(ax []te.Index) te.Expr {
				return sum1(4, func(k te.Index) te.Expr {
					return sel(bin(te.Le, ix(k), ci(3)), ld(x, k), ld(x, c(7)))
				})
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder(tt.name)
			differential(t, b.outputs(tt.build(b)), 1)
		})
	}
}
