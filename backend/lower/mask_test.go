package lower

import (
	"testing"

	"tec/backend/kir"
	"tec/backend/report"
	"tec/backend/sim"
	"tec/te"
)

// maskedScores is sc[h, i, j] = body(sum[e](q[h, i, e] * k[h, j, e]), i,
// j), attention's scores over h heads of s positions.
func maskedScores(h, s, e int, body func(sum te.Expr, i, j te.Index) te.Expr) *te.Program {
	b := newBuilder("scores")
	q, k := b.input("q", te.F32, h, s, e), b.input("k", te.F32, h, s, e)
	sc := b.f32("sc", shp(h, s, s), func(ax []te.Index) te.Expr {
		sum := sum1(e, func(x te.Index) te.Expr { return mul(ld(q, ax[0], ax[1], x), ld(k, ax[0], ax[2], x)) })
		return body(sum, ax[1], ax[2])
	})
	return b.outputs(sc)
}

// TestMaskedContraction lowers contractions under a causal mask, with the
// contraction in either branch, one kernel each with 16×16 tiles of 40×40
// scores: each is a tiled contraction (factors staged in shared memory),
// its k loop under the tile's mask test, right against the reference
// with race detection, and it does the products of the 6 tiles per head
// that straddle or lie below the diagonal, not of the 3 above it.
func TestMaskedContraction(t *testing.T) {
	const h, s, e = 2, 40, 8
	tests := []struct {
		name string
		body func(sum te.Expr, i, j te.Index) te.Expr
	}{
		{"then", func(sum te.Expr, i, j te.Index) te.Expr {
			return sel(bin(te.Le, ix(j), ix(i)), sum, cf(-1e30))
		}},
		{"else", func(sum te.Expr, i, j te.Index) te.Expr {
			return sel(bin(te.Gt, ix(j), ix(i)), cf(-1e30), sum)
		}},
		{"nested", func(sum te.Expr, i, j te.Index) te.Expr {
			return sel(bin(te.Ge, ix(i), ci(0)), sel(bin(te.Lt, ix(i.Sub(j)), ci(0)), cf(0), sum), cf(1))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := maskedScores(h, s, e, tt.body)
			res := differential(t, p, 1)
			m, err := Unfused(p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			k := m.Kernels[0]
			if len(k.Shared) != 2 || k.Shared[0].Name != "xs" || k.Shared[1].Name != "ys" {
				t.Fatalf("kernel %s is not a tiled contraction:\n%s", k.Name, m)
			}
			if !maskedKLoop(k.Body) {
				t.Errorf("no k loop under a mask test:\n%s", m)
			}
			tiles := h * 3 * 3
			live := tiles - h*3
			if got, want := res.Kernels[0].FLOPs, int64(live*2*16*16*e); got != want {
				t.Errorf("%d FLOPs, want %d: the products of %d of the %d tiles", got, want, live, tiles)
			}
		})
	}
}

// maskedKLoop reports whether body has a k loop (a loop with a barrier)
// directly under an If.
func maskedKLoop(body []kir.Stmt) bool {
	found := false
	kir.WalkStmts(body, func(s kir.Stmt) bool {
		if x, ok := s.(*kir.If); ok && len(x.Then) == 1 && len(x.Else) == 0 {
			if f, ok := x.Then[0].(*kir.For); ok && hasBarrier(f.Body) {
				found = true
			}
		}
		return !found
	})
	return found
}

func hasBarrier(body []kir.Stmt) bool {
	found := false
	kir.WalkStmts(body, func(s kir.Stmt) bool {
		if _, ok := s.(*kir.SyncThreads); ok {
			found = true
		}
		return !found
	})
	return found
}

// TestMaskedOutOfBounds checks that a contraction under a select whose
// factors load in bounds only where the select takes it stays a
// thread per element: tiles would stage rows of x that do not exist.
func TestMaskedOutOfBounds(t *testing.T) {
	b := newBuilder("oob")
	x, w := b.input("x", te.F32, 4, 16), b.param("w", te.F32, 16, 12)
	y := b.f32("y", shp(10, 12), func(ax []te.Index) te.Expr {
		sum := sum1(16, func(k te.Index) te.Expr { return mul(ld(x, ax[0], k), ld(w, k, ax[1])) })
		return sel(bin(te.Lt, ix(ax[0]), ci(4)), sum, cf(0))
	})
	p := b.outputs(y)
	differential(t, p, 1)
	m, err := Unfused(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.Kernels[0].Shared); n != 0 {
		t.Errorf("kernel y stages factors in %d shared arrays:\n%s", n, m)
	}
	rep := report.Module(m, report.Config{ResidentBlocks: sim.DefaultResidentBlocks})
	if !rep.Exact {
		t.Errorf("report not exact")
	}
}
