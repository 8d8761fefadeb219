package partition

import (
	"testing"

	"tec/contraction"
	"tec/gpu"
	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// normProj returns a projection of RMSNorm(x) (rows × d, onto n columns),
// as stored (h read by the projection) and as recomputed (the norm and its
// mean of squares inlined into the projection), and the producers
// removed.
func normProj(rows, d, n int) (old, nu *te.Tensor, removed []*te.Tensor) {
	b := tb.New("normproj")
	x, g, w := b.Input("x", rows, d), b.Param("g", d), b.Param("w", n, d)
	msBody := func(m te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "j", d, func(j te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(x, m, j), tb.Ld(x, m, j)) }), tb.F(float64(d)))
	}
	norm := func(m, k te.Index, ms te.Expr) te.Expr {
		return tb.Bin(te.Mul, tb.Bin(te.Mul, tb.Ld(x, m, k), tb.Un(te.Rsqrt, tb.Bin(te.Add, ms, tb.F(1e-5)))), tb.Ld(g, k))
	}
	ms := b.Compute("ms", tb.Shape(rows), func(ax []te.Index) te.Expr { return msBody(ax[0]) })
	h := b.Compute("h", tb.Shape(rows, d), func(ax []te.Index) te.Expr { return norm(ax[0], ax[1], tb.Ld(ms, ax[0])) })
	old = b.Compute("y", tb.Shape(rows, n), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", d, func(k te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(h, ax[0], k), tb.Ld(w, ax[1], k)) })
	})
	nu = b.Compute("y", tb.Shape(rows, n), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "k", d, func(k te.Index) te.Expr {
			return tb.Bin(te.Mul, norm(ax[0], k, msBody(ax[0])), tb.Ld(w, ax[1], k))
		})
	})
	return old, nu, []*te.Tensor{h, ms}
}

// TestRecomputePays checks the cost model's decision on recomputing an
// RMSNorm in the projection after it: it pays for a decode step's few rows
// (a matrix-vector stage whose redundant loads hit in L2 while its weights
// stream from DRAM), not where the projection is no matrix-vector stage
// (9 or 64 rows), whose tiles would recompute the norm at every product.
func TestRecomputePays(t *testing.T) {
	g, _ := gpu.Builtin("h100")
	for _, tt := range []struct {
		rows, d, n int
		want       bool
	}{
		{1, 2048, 3072, true},
		{8, 2048, 16384, true},
		{64, 2048, 3072, false},
		{9, 2048, 3072, false},
	} {
		old, nu, removed := normProj(tt.rows, tt.d, tt.n)
		if got := RecomputePays(g, 256, old, nu, removed); got != tt.want {
			s, _ := fusedSchedule(nu, g, 256)
			t.Errorf("rows %d, d %d, n %d: pays %v, want %v (recomputing: %v, %d B, %d FLOPs)", tt.rows, tt.d, tt.n, got, tt.want, s, s.Bytes, s.FLOPs)
		}
	}
}

// TestPriceHoisted checks a recomputing matrix-vector stage's prediction:
// its mean of squares is hoisted (one prologue per tile and row, in shared
// memory), its FLOPs count the norm once per staged element and not once
// per product, and its extra bytes are the tiles' redundant reads of x and
// the gain.
func TestPriceHoisted(t *testing.T) {
	g, _ := gpu.Builtin("h100")
	const rows, d, n = 1, 2048, 3072
	old, nu, _ := normProj(rows, d, n)
	so, _ := fusedSchedule(old, g, 256)
	sn, ok := fusedSchedule(nu, g, 256)
	if !ok || sn.MatVec == nil {
		t.Fatalf("recomputing stage: %v, want a matrix-vector stage", sn)
	}
	d0, _ := contraction.Of(nu)
	if hs := contraction.HoistedReductions(d0.X); len(hs) != 1 {
		t.Fatalf("%d hoisted reductions, want the mean of squares", len(hs))
	}
	tiles := int64(sn.Tiles)
	// Per tile: the prologue's d loads of x (the same element twice), and
	// x and the gain for each staged element, instead of h's.
	if want := so.Bytes + tiles*rows*d*4 + tiles*rows*d*4; sn.Bytes != want {
		t.Errorf("bytes %d, want %d", sn.Bytes, want)
	}
	if sn.FLOPs > 2*so.FLOPs {
		t.Errorf("FLOPs %d recomputing, %d stored: the norm priced per product", sn.FLOPs, so.FLOPs)
	}
	// The prologue's results, one per row, in whole 16-byte units.
	if want := so.SharedBytes + (4*int(rows)+15)/16*16; sn.SharedBytes != want {
		t.Errorf("shared %d B, want %d", sn.SharedBytes, want)
	}
}
