package contraction

import (
	"math"
	"testing"

	tb "tec/internal/testkit/tebuild"
	"tec/te"
)

func TestZeroPast(t *testing.T) {
	x := &te.Tensor{Name: "x", Kind: te.Input, DType: te.F32, Shape: []int{4}}
	pos := &te.Tensor{Name: "pos", Kind: te.Input, DType: te.I32, Shape: []int{4}}
	iv := te.NewVar("i", 4)
	i := te.VarIndex(iv)
	ninf := tb.F(math.Inf(-1))
	runtime := tb.Bin(te.Le, tb.Idx(i), tb.Ld(pos, i))
	data := tb.Bin(te.Gt, tb.Ld(x, i), tb.F(0))
	masked := tb.Sel(runtime, tb.Ld(x, i), ninf)
	exp := func(e te.Expr) te.Expr { return tb.Un(te.Exp, e) }
	// s is a computed tensor over its own axis a, read at i: the mask
	// comes back over i.
	av := te.NewVar("a", 4)
	s := &te.Tensor{Name: "s", Kind: te.Compute, DType: te.F32, Shape: []int{4}, Axes: []*te.Var{av},
		Body: tb.Sel(tb.Bin(te.Le, tb.Idx(te.VarIndex(av)), tb.Ld(pos, te.VarIndex(av))), tb.Ld(x, te.VarIndex(av)), ninf)}
	tests := []struct {
		name string
		e    te.Expr
		ok   bool
	}{
		{"exp_of_masked", exp(tb.Bin(te.Sub, masked, tb.Ld(x, i))), true},
		{"times_value", tb.Bin(te.Mul, tb.Ld(x, i), exp(masked)), true},
		{"over_value", tb.Bin(te.Div, exp(masked), tb.Ld(x, i)), true},
		{"zero_else", tb.Sel(runtime, tb.Ld(x, i), tb.F(0)), true},
		{"through_load", exp(tb.Bin(te.Sub, tb.Ld(s, i), tb.F(1))), true},
		{"negative_infinity_is_not_zero", masked, false},
		{"finite_fill", exp(tb.Sel(runtime, tb.Ld(x, i), tb.F(-1e30))), false},
		{"data_condition", exp(tb.Sel(data, tb.Ld(x, i), ninf)), false},
		{"minus_negative_infinity", exp(tb.Bin(te.Sub, tb.Ld(x, i), masked)), false},
		{"value_over_zero", tb.Bin(te.Div, tb.Ld(x, i), exp(masked)), false},
		{"log", tb.Un(te.Log, tb.Sel(runtime, tb.Ld(x, i), tb.F(0))), false},
		{"both_infinite", exp(tb.Bin(te.Sub, masked, masked)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := ZeroPast(tt.e)
			if ok != tt.ok {
				t.Fatalf("ZeroPast(%s) ok = %v, want %v", tt.e, ok, tt.ok)
			}
			if !ok {
				return
			}
			uses := false
			te.Walk(c, func(e te.Expr) bool {
				if x, isIdx := e.(*te.IndexExpr); isIdx {
					uses = uses || x.Index.Uses(iv)
					if x.Index.Uses(av) {
						t.Errorf("condition %s reads the producer's axis", c)
					}
				}
				return true
			})
			if !uses {
				t.Errorf("condition %s does not read i", c)
			}
		})
	}
}

// TestKMaskOf checks the k mask of attention's value side, o[b, e] =
// sum[t](p[b, t] * v[b, t, e]) with p = exp(select(t <= pos[b], sc, -inf)):
// at context 5, only t < 5 are live; with no context, every t.
func TestKMaskOf(t *testing.T) {
	const B, T, E = 2, 16, 8
	b := tb.New("values")
	sc, v := b.Input("sc", B, T), b.Input("v", B, T, E)
	pos := b.InputOf("pos", te.I32, B)
	p := b.Compute("p", tb.Shape(B, T), func(ax []te.Index) te.Expr {
		return tb.Un(te.Exp, tb.Sel(tb.Bin(te.Le, tb.Idx(ax[1]), tb.Ld(pos, ax[0])), tb.Ld(sc, ax[0], ax[1]), tb.F(math.Inf(-1))))
	})
	o := b.Compute("o", tb.Shape(B, E), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "t", T, func(k te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(p, ax[0], k), tb.Ld(v, ax[0], k, ax[1]))
		})
	})
	b.Program(o)
	d, ok := Of(o)
	if !ok {
		t.Fatal("o is not a contraction")
	}
	mk := KMaskOf(d)
	if mk == nil || len(mk.Scalars) != 1 {
		t.Fatalf("k mask %v, want one on pos", mk)
	}
	if got := mk.LiveK(); got != T {
		t.Errorf("LiveK with no context = %d, want %d", got, T)
	}
	mk.Context = 5
	if got := mk.LiveK(); got != 5 {
		t.Errorf("LiveK at context 5 = %d, want 5", got)
	}
	if !mk.DeadK(5, T-1) || mk.DeadK(4, T-1) {
		t.Errorf("DeadK: [5, %d] should be dead and [4, %d] not", T-1, T-1)
	}
}

// TestKMaskOfStatic checks that a k mask on indexes alone (a causal
// value side, t <= i) is not made: only run-time positions are.
func TestKMaskOfStatic(t *testing.T) {
	const M, T, E = 2, 16, 8
	b := tb.New("causal")
	sc, v := b.Input("sc", M, T), b.Input("v", T, E)
	p := b.Compute("p", tb.Shape(M, T), func(ax []te.Index) te.Expr {
		return tb.Un(te.Exp, tb.Sel(tb.Bin(te.Le, tb.Idx(ax[1]), tb.Idx(ax[0])), tb.Ld(sc, ax[0], ax[1]), tb.F(math.Inf(-1))))
	})
	o := b.Compute("o", tb.Shape(M, E), func(ax []te.Index) te.Expr {
		return tb.Reduce(te.Sum, "t", T, func(k te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(p, ax[0], k), tb.Ld(v, k, ax[1]))
		})
	})
	b.Program(o)
	d, ok := Of(o)
	if !ok {
		t.Fatal("o is not a contraction")
	}
	if _, ok := ZeroPast(d.X); !ok {
		t.Errorf("p: no zero past the causal mask")
	}
	if mk := KMaskOf(d); mk != nil {
		t.Errorf("k mask %v on indexes alone", mk.Live)
	}
}
