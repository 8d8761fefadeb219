package contraction

import (
	"testing"

	"tec/te"
)

// TestTensorCoreType checks which operand pairs tensor cores multiply.
func TestTensorCoreType(t *testing.T) {
	tensor := func(dt te.DType) *te.Tensor { return &te.Tensor{Name: "t", DType: dt, Shape: []int{4}} }
	ld := func(dt te.DType) te.Expr { return &te.Load{Tensor: tensor(dt)} }
	tf32 := func(e te.Expr) te.Expr { return &te.Unary{Op: te.RoundTF32, X: e} }
	zero := &te.ConstExpr{Value: 0, DType: te.F32}
	for _, tc := range []struct {
		name string
		x, y te.Expr
		want te.DType
		ok   bool
	}{
		{"f16 loads", ld(te.F16), ld(te.F16), te.F16, true},
		{"f16 cast and load", &te.Cast{To: te.F16, X: ld(te.F32)}, ld(te.F16), te.F16, true},
		{"bf16 loads", ld(te.BF16), ld(te.BF16), te.BF16, true},
		{"tf32 roundings", tf32(ld(te.F32)), tf32(ld(te.F32)), te.F32, true},
		{"padded f16", &te.Select{Cond: &te.ConstExpr{Value: 1, DType: te.Bool}, Then: ld(te.F16), Else: zero}, ld(te.F16), te.F16, true},
		{"a choice of f16 loads", &te.Select{Cond: &te.ConstExpr{Value: 1, DType: te.Bool}, Then: ld(te.F16), Else: ld(te.F16)}, ld(te.F16), te.F16, true},
		{"a choice of f16 and bf16", &te.Select{Cond: &te.ConstExpr{Value: 1, DType: te.Bool}, Then: ld(te.F16), Else: ld(te.BF16)}, ld(te.F16), 0, false},
		{"f32 loads", ld(te.F32), ld(te.F32), 0, false},
		{"f16 and bf16", ld(te.F16), ld(te.BF16), 0, false},
		{"f16 and tf32", ld(te.F16), tf32(ld(te.F32)), 0, false},
		{"f16 times a scale", &te.Binary{Op: te.Mul, X: ld(te.F16), Y: zero}, ld(te.F16), 0, false},
	} {
		got, ok := TensorCoreType(tc.x, tc.y)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: got %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
