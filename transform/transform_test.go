package transform

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"tec/internal/numeric"
	"tec/internal/testkit/golden"
	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

// fig3 is the paper's Fig. 3: two independent GEMMs with the same
// reduction, C1 = A1·B1 (4×16) and C2 = A2·B2 (2×16).
func fig3() *te.Program {
	b := tb.New("fig3")
	a1, b1 := b.Input("A1", 4, 8), b.Param("B1", 8, 16)
	a2, b2 := b.Input("A2", 2, 8), b.Param("B2", 8, 16)
	c1 := b.Matmul("C1", a1, b1)
	c2 := b.Matmul("C2", a2, b2)
	return b.Program(c1, c2)
}

// qkv is three projections of one input (BERT's Q, K and V, Fig. 1): the
// horizontal transform concatenates them on the output axis that the
// shared input does not use, so that the input is loaded once.
func qkv() *te.Program {
	b := tb.New("qkv")
	x := b.Input("x", 8, 16)
	wq, wk, wv := b.Param("wq", 16, 8), b.Param("wk", 16, 8), b.Param("wv", 16, 8)
	q, k, v := b.Matmul("q", x, wq), b.Matmul("k", x, wk), b.Matmul("v", x, wv)
	return b.Program(q, k, v)
}

// fig4 is the paper's Fig. 4: relu, a strided slice and a permutation,
// each one-relies-on-one.
func fig4() *te.Program {
	b := tb.New("fig4")
	a := b.Input("A", 4, 8)
	bb := b.Compute("B", tb.Shape(4, 8), func(ax []te.Index) te.Expr {
		return &te.Select{Cond: tb.Bin(te.Gt, tb.Ld(a, ax...), tb.F(0)), Then: tb.Ld(a, ax...), Else: tb.F(0)}
	})
	c := b.Compute("C", tb.Shape(2, 4), func(ax []te.Index) te.Expr { return tb.Ld(bb, ax[0].Scale(2), ax[1]) })
	d := b.Compute("D", tb.Shape(4, 2), func(ax []te.Index) te.Expr { return tb.Ld(c, ax[1], ax[0]) })
	return b.Program(d)
}

// bertAttention is the Fig. 1 BERT subgraph: QKV projections of x, scores
// q·kᵀ scaled, a softmax (max, exp, sum, divide), the context p·v and a
// bias-add epilogue of the output projection.
func bertAttention() *te.Program {
	const s, d = 8, 16
	b := tb.New("attention")
	x := b.Input("x", s, d)
	wq, wk, wv, wo := b.Param("wq", d, d), b.Param("wk", d, d), b.Param("wv", d, d), b.Param("wo", d, d)
	bo := b.Param("bo", d)
	q, k, v := b.Matmul("q", x, wq), b.Matmul("k", x, wk), b.Matmul("v", x, wv)
	kt := b.Compute("kt", tb.Shape(d, s), func(ax []te.Index) te.Expr { return tb.Ld(k, ax[1], ax[0]) })
	sc := b.Compute("sc", tb.Shape(s, s), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Reduce(te.Sum, "c", d, func(c te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(q, ax[0], c), tb.Ld(kt, c, ax[1]))
		}), tb.F(0.25))
	})
	mx := b.Compute("mx", tb.Shape(s), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.ReduceMax, "c", s, func(c te.Index) te.Expr { return tb.Ld(sc, ax[0], c) })
	})
	e := b.Compute("e", tb.Shape(s, s), func(ax []te.Index) te.Expr {
		return tb.Un(te.Exp, tb.Bin(te.Sub, tb.Ld(sc, ax...), tb.Ld(mx, ax[0])))
	})
	den := b.Compute("den", tb.Shape(s), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "c", s, func(c te.Index) te.Expr { return tb.Ld(e, ax[0], c) })
	})
	p := b.Compute("p", tb.Shape(s, s), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Ld(e, ax...), tb.Ld(den, ax[0]))
	})
	ctx := b.Matmul("ctx", p, v)
	o := b.Matmul("o", ctx, wo)
	y := b.Compute("y", tb.Shape(s, d), func(ax []te.Index) te.Expr { return tb.Bin(te.Add, tb.Ld(o, ax...), tb.Ld(bo, ax[1])) })
	return b.Program(y)
}

// lstmCell has the two reductions of an LSTM gate, x·W + h·U.
func lstmCell() *te.Program {
	b := tb.New("cell")
	x, h := b.Input("x", 1, 16), b.Input("h", 1, 16)
	w, u := b.Param("W", 16, 32), b.Param("U", 16, 32)
	g := b.Compute("g", tb.Shape(1, 32), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Add,
			tb.Reduce(te.Sum, "k", 16, func(k te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(x, ax[0], k), tb.Ld(w, k, ax[1])) }),
			tb.Reduce(te.Sum, "k", 16, func(k te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(h, ax[0], k), tb.Ld(u, k, ax[1])) }))
	})
	return b.Program(g)
}

// crossedChains is two independent matmul chains a → y → b and
// t → c → d (issue 17, F9): y and d, and b and c, are each independent, but
// fusing both pairs would make each fused TE wait for the other.
func crossedChains() *te.Program {
	b := tb.New("crossed")
	x := b.Input("x", 16, 16)
	w8, w10 := b.Param("w8", 16, 24), b.Param("w10", 24, 16)
	w21, w23 := b.Param("w21", 24, 16), b.Param("w23", 16, 24)
	y := b.Matmul("y", x, w8)
	bb := b.Matmul("b", y, w10)
	t := b.Compute("t", tb.Shape(16, 24), func(ax []te.Index) te.Expr { return tb.Ld(w10, ax[1], ax[0]) })
	c := b.Matmul("c", t, w21)
	d := b.Matmul("d", c, w23)
	return b.Program(bb, d)
}

// fig3NameTaken is fig3 with a tensor already named as the concatenation
// would be.
func fig3NameTaken() *te.Program {
	b := tb.New("fig3_taken")
	a1, b1 := b.Input("A1", 4, 8), b.Param("B1", 8, 16)
	a2, b2 := b.Input("A2", 2, 8), b.Param("B2", 8, 16)
	taken := b.Compute("hcat_C1_C2", tb.Shape(4, 8), func(ax []te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(a1, ax...), tb.F(2)) })
	c1 := b.Matmul("C1", a1, b1)
	c2 := b.Matmul("C2", a2, b2)
	return b.Program(c1, c2, taken)
}

// f16Producers has producers stored in f16 whose values differ from their
// bodies' (issue 17, F7): a constant (full(f16[n], 0.3)) and an f32
// expression, both inlined into an f32 consumer.
func f16Producers() *te.Program {
	b := tb.New("f16")
	x := b.Input("x", 13)
	c := b.ComputeOf("c", te.F16, tb.Shape(13), func([]te.Index) te.Expr { return tb.F(0.3) })
	h := b.ComputeOf("h", te.BF16, tb.Shape(13), func(ax []te.Index) te.Expr { return tb.Bin(te.Mul, tb.Ld(x, ax...), tb.F(0.7)) })
	w := b.Compute("w", tb.Shape(13), func(ax []te.Index) te.Expr { return tb.Bin(te.Add, tb.Ld(c, ax...), tb.Ld(h, ax...)) })
	return b.Program(w)
}

// f16Matmuls is two independent f16 matmuls with a bias epilogue each:
// their concatenation keeps the sums unrounded, so that each member rounds
// once, after its bias, as it did before.
func f16Matmuls() *te.Program {
	b := tb.New("f16mm")
	x := b.Input("x", 8, 16)
	w1, w2, bias := b.Param("w1", 16, 12), b.Param("w2", 16, 12), b.Param("bias", 12)
	mm := func(name string, w *te.Tensor) *te.Tensor {
		return b.ComputeOf(name, te.F16, tb.Shape(8, 12), func(ax []te.Index) te.Expr {
			return tb.Bin(te.Add, tb.Reduce(te.Sum, "k", 16, func(k te.Index) te.Expr {
				return tb.Bin(te.Mul, tb.Ld(x, ax[0], k), tb.Ld(w, k, ax[1]))
			}), tb.Ld(bias, ax[1]))
		})
	}
	return b.Program(mm("y1", w1), mm("y2", w2))
}

// distinctNames fails t if two tensors of q share a name.
func distinctNames(t *testing.T, q *te.Program) {
	t.Helper()
	seen := map[string]bool{}
	for _, u := range q.Tensors {
		if seen[u.Name] {
			t.Errorf("two tensors are named %s:\n%s", u.Name, q)
		}
		seen[u.Name] = true
	}
}

func feeds(p *te.Program) map[string]*te.Array {
	rng := rand.New(rand.NewPCG(1, 2))
	out := map[string]*te.Array{}
	for _, t := range p.Placeholders() {
		a := te.NewArray(t.DType, t.Shape)
		for i := range a.Data {
			a.Data[i] = 2*rng.Float64() - 1
		}
		out[t.Name] = a
	}
	return out
}

func TestTransforms(t *testing.T) {
	for _, tt := range []struct {
		name  string
		p     *te.Program
		pass  func(*te.Program) (*te.Program, error)
		check func(t *testing.T, q *te.Program)
	}{
		{"fig3_horizontal", fig3(), Horizontal, func(t *testing.T, q *te.Program) {
			h := q.Lookup("hcat_C1_C2")
			if h == nil || h.Shape[0] != 6 || h.Shape[1] != 16 {
				t.Fatalf("no concatenated 6×16 TE:\n%s", q)
			}
		}},
		{"qkv_horizontal", qkv(), Horizontal, func(t *testing.T, q *te.Program) {
			h := q.Lookup("hcat_q_k_v")
			if h == nil || h.Shape[1] != 24 {
				t.Fatalf("no 8×24 concatenation on the output axis:\n%s", q)
			}
			if n := strings.Count(te.FormatExpr(h.Body), "x["); n != 1 {
				t.Errorf("shared input x loaded %d times, want once: %s", n, te.FormatExpr(h.Body))
			}
		}},
		{"lstm_horizontal", lstmCell(), Horizontal, func(t *testing.T, q *te.Program) {
			g := q.Lookup("g")
			if r, ok := g.Body.(*te.Reduce); !ok || r.Axes[0].Extent != 32 {
				t.Errorf("want one sum over 32 points: %s", te.FormatExpr(g.Body))
			}
		}},
		{"crossed_chains_horizontal", crossedChains(), Horizontal, func(t *testing.T, q *te.Program) {
			distinctNames(t, q)
			n := 0
			for _, u := range q.Tensors {
				if strings.HasPrefix(u.Name, "hcat_") {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d concatenations, want 1 (the second pair would close a cycle):\n%s", n, q)
			}
		}},
		{"name_taken_horizontal", fig3NameTaken(), Horizontal, func(t *testing.T, q *te.Program) {
			distinctNames(t, q)
			if h := q.Lookup("hcat_C1_C2.1"); h == nil || h.Shape[0] != 6 {
				t.Errorf("no 6×16 concatenation named hcat_C1_C2.1:\n%s", q)
			}
		}},
		{"f16_producers_vertical", f16Producers(), Vertical, func(t *testing.T, q *te.Program) {
			if len(q.Tensors) != 2 {
				t.Errorf("want c and h inlined:\n%s", q)
			}
		}},
		{"f16_matmuls_horizontal", f16Matmuls(), Horizontal, func(t *testing.T, q *te.Program) {
			if h := q.Lookup("hcat_y1_y2"); h == nil || h.DType != te.F32 {
				t.Errorf("want the f32 concatenation hcat_y1_y2:\n%s", q)
			}
		}},
		{"fig4_vertical", fig4(), Vertical, func(t *testing.T, q *te.Program) {
			if len(q.Tensors) != 2 {
				t.Fatalf("want A and D only:\n%s", q)
			}
			// D[i, j] = C[j, i] = B[2j, i] = relu(A[2j, i]). (The paper
			// prints A[j, 2i], which composes the maps in the wrong order;
			// both stay in bounds, so only the values tell them apart.)
			if got := te.FormatExpr(q.Lookup("D").Body); got != "select(A[j*2, i] > 0.0, A[j*2, i], 0.0)" {
				t.Errorf("D = %s", got)
			}
		}},
		{"fig1_bert_both", bertAttention(), func(p *te.Program) (*te.Program, error) {
			q, err := Horizontal(p)
			if err != nil {
				return nil, err
			}
			return Vertical(q)
		}, func(t *testing.T, q *te.Program) {
			// q, k, v concatenated; kt, e, p and the slices inlined; the
			// bias add is the output projection's epilogue.
			for _, gone := range []string{"q", "k", "v", "kt", "e", "o"} {
				if q.Lookup(gone) != nil {
					t.Errorf("%s still materialised", gone)
				}
			}
			if q.Lookup("hcat_q_k_v") == nil {
				t.Errorf("q, k, v not concatenated")
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q, err := tt.pass(tt.p)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, q)
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
				// Rounding points are unchanged: only the order of float64
				// operations may differ. An f16 rounding lost or added is
				// 2^-11 relative.
				mm, err := numeric.Compare(got[o.Name], want[o.Name], numeric.Tolerance{Rtol: 1e-9, Atol: 1e-12})
				if err != nil || mm != nil {
					t.Errorf("output %s: %v %v", o.Name, err, mm)
				}
			}
			golden.CheckString(t, filepath.Join("testdata", tt.name+".golden"), q.String())
		})
	}
}

// TestInputUnchanged checks that the passes do not modify their input.
func TestInputUnchanged(t *testing.T) {
	p := bertAttention()
	before := p.String()
	if _, err := Horizontal(p); err != nil {
		t.Fatal(err)
	}
	if _, err := Vertical(p); err != nil {
		t.Fatal(err)
	}
	if after := p.String(); after != before {
		t.Errorf("input changed:\n%s\nwas\n%s", after, before)
	}
}
