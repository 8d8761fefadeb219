package te

import "testing"

func TestFoldSelects(t *testing.T) {
	x := &Tensor{Name: "x", Kind: Input, DType: F32, Shape: []int{2}}
	i1, i5 := VarIndex(NewVar("i", 1)), VarIndex(NewVar("j", 5))
	cmp := func(op BinaryOp, a Index, c int) Expr { return bin(op, ix(a), ci(c)) }
	tests := []struct {
		name string
		e    Expr
		want string
	}{
		{"dead_then_out_of_bounds", sel(cmp(Ge, i1.AddConst(-2), 0), ld(x, i1.AddConst(-2)), cf(0)), "0.0"},
		{"dead_else_out_of_bounds", sel(cmp(Lt, Const(1), 3), ld(x, Const(1)), ld(x, Const(-2))), "x[1]"},
		{"range_decides", sel(cmp(Lt, i5, 5), ld(x, Const(0)), ld(x, Const(9))), "x[0]"},
		{"range_undecided", sel(cmp(Lt, i5, 3), cf(1), cf(2)), "select(j < 3, 1.0, 2.0)"},
		{"not_and_or", sel(and(un(Not, cmp(Gt, i5, 4)), cmp(Ge, i5, 0)), cf(1), cf(2)), "1.0"},
		{"or_one_side_decides", sel(bin(Or, cmp(Lt, i5, 2), cmp(Eq, Const(0), 0)), cf(1), cf(2)), "1.0"},
		{"and_one_side_decides", sel(and(cmp(Lt, i5, 2), cmp(Ne, Const(0), 0)), cf(1), cf(2)), "2.0"},
		{"nested_under_reduce", sum1(3, func(k Index) Expr { return sel(cmp(Ge, k, 3), ld(x, k.AddConst(-3)), cf(1)) }), "sum(1.0, axis=[k:3])"},
		{"data_condition_kept", sel(bin(Gt, ld(x, Const(0)), cf(0)), cf(1), cf(2)), "select(x[0] > 0.0, 1.0, 2.0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FormatExpr(FoldSelects(tt.e)); got != tt.want {
				t.Errorf("FoldSelects(%s) = %s, want %s", FormatExpr(tt.e), got, tt.want)
			}
		})
	}
	unchanged := sel(cmp(Lt, i5, 3), cf(1), cf(2))
	if FoldSelects(unchanged) != unchanged {
		t.Errorf("an expression without a decidable select was copied")
	}
}

// TestConditionUnder decides conditions over the ranges of one tile of a
// causal mask's output indexes, as a masked contraction's tiles do.
func TestConditionUnder(t *testing.T) {
	iv, jv := NewVar("i", 64), NewVar("j", 64)
	i, j := VarIndex(iv), VarIndex(jv)
	causal := bin(Le, ix(j), ix(i))
	window := and(causal, bin(Lt, ix(i.Sub(j)), ci(8)))
	tests := []struct {
		name         string
		c            Expr
		ilo, ihi     int
		jlo, jhi     int
		value, known bool
	}{
		{"above_diagonal", causal, 0, 15, 16, 31, false, true},
		{"below_diagonal", causal, 16, 31, 0, 15, true, true},
		{"straddles", causal, 16, 31, 16, 31, false, false},
		{"touches_corner", causal, 0, 16, 16, 31, false, false},
		{"window_far_below", window, 48, 63, 0, 15, false, true},
		{"window_band", window, 16, 31, 16, 31, false, false},
		{"not", un(Not, causal), 0, 15, 16, 31, true, true},
		{"or_decided_by_one", bin(Or, causal, bin(Eq, ci(0), ci(0))), 0, 15, 16, 31, true, true},
		{"empty_range", causal, 5, 4, 16, 31, false, false},
		{"div_mod", bin(Lt, ix(j.Div(16)), ix(i.Mod(16))), 0, 7, 16, 31, false, false},
		{"div_decided", bin(Lt, ix(j.Div(16)), ci(1)), 0, 7, 16, 31, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := func(v *Var) (int, int) {
				if v == iv {
					return tt.ilo, tt.ihi
				}
				return tt.jlo, tt.jhi
			}
			v, ok := ConditionUnder(tt.c, rng)
			if ok != tt.known || ok && v != tt.value {
				t.Errorf("ConditionUnder(%s) = %v, %v; want %v, %v", FormatExpr(tt.c), v, ok, tt.value, tt.known)
			}
		})
	}
}
