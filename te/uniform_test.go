package te

import "testing"

// TestUniformOver checks which conditions have one value on each aligned
// vector of 8 elements along e (extent 64), as GuardedVectorElems needs
// of a select over a vector's loads.
func TestUniformOver(t *testing.T) {
	e, h := NewVar("e", 64), NewVar("h", 4)
	idx := func(x Index) Expr { return &IndexExpr{Index: x} }
	i32 := func(v int) Expr { return &ConstExpr{Value: float64(v), DType: I32} }
	cmp := func(op BinaryOp, x, y Expr) Expr { return &Binary{Op: op, X: x, Y: y} }
	pos := &Tensor{Name: "pos", Kind: Input, DType: I32, Shape: []int{1}}
	idxTable := &Tensor{Name: "idx", Kind: Input, DType: I32, Shape: []int{64}}
	for _, tc := range []struct {
		name string
		cond Expr
		want bool
	}{
		{"e < 32", cmp(Lt, idx(VarIndex(e)), i32(32)), true},
		{"e < 31", cmp(Lt, idx(VarIndex(e)), i32(31)), false},
		{"e <= 31", cmp(Le, idx(VarIndex(e)), i32(31)), true},
		{"e >= 16", cmp(Ge, idx(VarIndex(e)), i32(16)), true},
		{"32 > e", cmp(Gt, i32(32), idx(VarIndex(e))), true},
		{"e + 8h < 40", cmp(Lt, idx(VarIndex(e).Add(VarIndex(h).Scale(8))), i32(40)), true},
		{"e + h < 40", cmp(Lt, idx(VarIndex(e).Add(VarIndex(h))), i32(40)), false},
		{"e mod 32 < 16", cmp(Lt, idx(VarIndex(e).Mod(32)), i32(16)), true},
		{"e == 8", cmp(Eq, idx(VarIndex(e)), i32(8)), false},
		{"h < 2", cmp(Lt, idx(VarIndex(h)), i32(2)), true},
		{"e < 32 && h < 2", &Binary{Op: And, X: cmp(Lt, idx(VarIndex(e)), i32(32)), Y: cmp(Lt, idx(VarIndex(h)), i32(2))}, true},
		{"e against a load", cmp(Lt, idx(VarIndex(e)), &Load{Tensor: pos, Index: []Index{Const(0)}}), false},
		{"h against a load", cmp(Eq, idx(VarIndex(h)), &Load{Tensor: pos, Index: []Index{Const(0)}}), true},
		{"a load along e", cmp(Eq, idx(VarIndex(h)), &Load{Tensor: idxTable, Index: []Index{VarIndex(e)}}), false},
	} {
		if got := UniformOver(tc.cond, e, 8); got != tc.want {
			t.Errorf("%s: UniformOver = %v, want %v", tc.name, got, tc.want)
		}
	}
}
