package transform

import (
	"strings"
	"testing"

	"tec/internal/numeric"
	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// decodeLayer is a decode step's FFN shaped small: h = RMSNorm(x) (its mean
// of squares ms a reduction of one row), gate and up projections of h,
// SwiGLU's act, and the down projection of act added to x. rows is the
// batch; out says whether act is also an output.
func decodeLayer(rows int, actOut bool) *te.Program {
	const d, f = 16, 32
	b := tb.New("ffn")
	x := b.Input("x", rows, d)
	g := b.Param("g", d)
	wg, wu, wd := b.Param("wg", f, d), b.Param("wu", f, d), b.Param("wd", d, f)
	ms := b.Compute("ms", tb.Shape(rows), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "n", d, func(n te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(x, ax[0], n), tb.Ld(x, ax[0], n))
		}), tb.F(d))
	})
	h := b.Compute("h", tb.Shape(rows, d), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Bin(te.Mul, tb.Ld(x, ax...), tb.Un(te.Rsqrt, tb.Bin(te.Add, tb.Ld(ms, ax[0]), tb.F(1e-5)))), tb.Ld(g, ax[1]))
	})
	proj := func(name string, in, w *te.Tensor, k int) *te.Tensor {
		return b.Compute(name, tb.Shape(rows, w.Shape[0]), func(ax []te.Index) te.Expr {
			return tb.Reduce(te.Sum, "k", k, func(kk te.Index) te.Expr {
				return tb.Bin(te.Mul, tb.Ld(in, ax[0], kk), tb.Ld(w, ax[1], kk))
			})
		})
	}
	gate, up := proj("gate", h, wg, d), proj("up", h, wu, d)
	act := b.Compute("act", tb.Shape(rows, f), func(ax []te.Index) te.Expr {
		gv := tb.Ld(gate, ax...)
		return tb.Bin(te.Mul, tb.Bin(te.Mul, gv, tb.Un(te.Sigmoid, gv)), tb.Ld(up, ax...))
	})
	down := proj("down", act, wd, f)
	y := b.Compute("y", tb.Shape(rows, d), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Add, tb.Ld(x, ax...), tb.Ld(down, ax...))
	})
	if actOut {
		return b.Program(y, act)
	}
	return b.Program(y)
}

// TestRecompute checks which producers Recompute substitutes into their
// readers' reductions (those that pays accepts and that qualify), that
// the program computes the same, and that the consumers read the
// producers' inputs instead.
func TestRecompute(t *testing.T) {
	always := func(old, nu *te.Tensor, removed []*te.Tensor) bool { return true }
	never := func(old, nu *te.Tensor, removed []*te.Tensor) bool { return false }
	for _, tt := range []struct {
		name       string
		p          *te.Program
		pays       RecomputePays
		gone, kept []string
	}{
		// The norm (h and its ms) into gate and up: h has two readers;
		// act into down.
		{"pays", decodeLayer(2, false), always, []string{"act"}, []string{"h", "ms", "gate", "up"}},
		{"never", decodeLayer(2, false), never, nil, []string{"h", "ms", "act"}},
		// An output stays.
		{"output", decodeLayer(2, true), always, nil, []string{"act"}},
		// ms of 9 rows is more than a tile recomputes: h stays, and
		// is read whole
		{"rows", decodeLayer(9, false), always, []string{"act"}, []string{"h", "ms"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, err := Recompute(tt.p, tt.pays)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tt.gone {
				if q.Lookup(n) != nil {
					t.Errorf("%s still materialised:\n%s", n, q)
				}
			}
			for _, n := range tt.kept {
				if q.Lookup(n) == nil {
					t.Errorf("%s recomputed, want it kept:\n%s", n, q)
				}
			}
			in := feeds(tt.p)
			want, err := te.Evaluate(tt.p, in, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := te.Evaluate(q, in, te.EvalOptions{})
			if err != nil {
				t.Fatalf("%v\n%s", err, q)
			}
			for _, o := range tt.p.Outputs {
				mm, err := numeric.Compare(got[o.Name], want[o.Name], numeric.Tolerance{Rtol: 1e-9, Atol: 1e-12})
				if err != nil || mm != nil {
					t.Errorf("output %s: %v %v", o.Name, err, mm)
				}
			}
		})
	}
}

// TestRecomputeNorm checks the norm's recomputation where its one reader
// is the projection: the mean of squares nests in the projection's sum,
// without the sum's axis.
func TestRecomputeNorm(t *testing.T) {
	p, err := Horizontal(decodeLayer(1, false)) // gate and up read h as one
	if err != nil {
		t.Fatal(err)
	}
	var removed []string
	q, err := Recompute(p, func(old, nu *te.Tensor, rm []*te.Tensor) bool {
		for _, r := range rm {
			removed = append(removed, r.Name)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(removed, " "); got != "h ms act" {
		t.Errorf("removed %q, want \"h ms act\"", got)
	}
	c := q.Lookup("hcat_gate_up")
	if c == nil {
		t.Fatalf("no hcat_gate_up:\n%s", q)
	}
	if s := te.FormatExpr(c.Body); strings.Count(s, "sum(") != 2 || strings.Contains(s, "ms[") || strings.Contains(s, "h[") {
		t.Errorf("hcat_gate_up = %s, want a sum with the mean of squares nested, reading x", s)
	}
}

// TestRecomputeKeepsShared checks that a reduction node shared by the
// vertical transform (y = v·(v + v·v), v a matrix product, read three
// times) stays one node when Recompute rewrites its tensor's loads (the
// product reads p1, which Recompute rewrote): as copies it would be three
// reductions, no longer a contraction with an epilogue.
func TestRecomputeKeepsShared(t *testing.T) {
	b := tb.New("shared")
	x, g := b.Input("x", 2, 8), b.Param("g", 8)
	w1, w2 := b.Param("w1", 8, 8), b.Param("w2", 8, 16)
	ms := b.Compute("ms", tb.Shape(2), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "n", 8, func(n te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(x, ax[0], n), tb.Ld(x, ax[0], n)) })
	})
	h := b.Compute("h", tb.Shape(2, 8), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Bin(te.Mul, tb.Ld(x, ax...), tb.Un(te.Rsqrt, tb.Ld(ms, ax[0]))), tb.Ld(g, ax[1]))
	})
	p1 := b.Matmul("p1", h, w1)
	mm := b.Matmul("mm", p1, w2)
	y := b.Compute("y", tb.Shape(2, 16), func(ax []te.Index) te.Expr {
		v := tb.Ld(mm, ax...)
		return tb.Bin(te.Mul, v, tb.Bin(te.Add, v, tb.Bin(te.Mul, v, v)))
	})
	p, err := Vertical(b.Program(y))
	if err != nil {
		t.Fatal(err)
	}
	reduces := func(p *te.Program) int {
		seen := map[*te.Reduce]bool{}
		te.Walk(p.Lookup("y").Body, func(e te.Expr) bool {
			if r, ok := e.(*te.Reduce); ok {
				seen[r] = true
			}
			return true
		})
		return len(seen)
	}
	if n := reduces(p); n != 1 {
		t.Fatalf("vertical: %d reduction nodes in y, want 1 shared:\n%s", n, p)
	}
	q, err := Recompute(p, func(old, nu *te.Tensor, rm []*te.Tensor) bool { return old.Name == "p1" })
	if err != nil {
		t.Fatal(err)
	}
	if q.Lookup("h") != nil || q.Lookup("ms") != nil {
		t.Fatalf("h not recomputed in p1:\n%s", q)
	}
	if n := reduces(q); n != 1 {
		t.Errorf("recompute: %d reduction nodes in y, want 1 shared:\n%s", n, q)
	}
}
