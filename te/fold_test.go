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
