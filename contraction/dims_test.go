package contraction

import (
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// TestOf checks the sizes that make a contraction worth tiling: N of 8,
// or of 4 in a batch of several (a grouped convolution's groups of 4
// channels), and not N of 4 alone, of 4 in a batch of one, or K of 2.
func TestOf(t *testing.T) {
	for _, tc := range []struct {
		batch, n, k int
		ok          bool
	}{
		{1, 8, 16, true},
		{4, 4, 16, true},
		{1, 4, 16, false},
		{4, 2, 16, false},
		{4, 8, 2, false},
	} {
		b := tb.New("of")
		x, y := b.Input("x", tc.batch, 32, tc.k), b.Input("y", tc.batch, tc.k, tc.n)
		z := b.Compute("z", tb.Shape(tc.batch, 32, tc.n), func(ax []te.Index) te.Expr {
			return tb.Reduce(te.Sum, "k", tc.k, func(k te.Index) te.Expr {
				return tb.Bin(te.Mul, tb.Ld(x, ax[0], ax[1], k), tb.Ld(y, ax[0], k, ax[2]))
			})
		})
		b.Program(z)
		d, ok := Of(z)
		if ok != tc.ok || ok && (d.Batch != tc.batch || d.N != tc.n || d.M != 32 || d.K != tc.k) {
			t.Errorf("batch %d, N %d, K %d: %+v, %v; want a contraction %v", tc.batch, tc.n, tc.k, d, ok, tc.ok)
		}
	}
}
