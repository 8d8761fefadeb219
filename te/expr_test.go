package te

import "testing"

func TestHasLoad(t *testing.T) {
	x := &Tensor{Name: "x", Kind: Input, DType: F32, Shape: []int{4}}
	ids := &Tensor{Name: "ids", Kind: Input, DType: I32, Shape: []int{4}}
	i := NewVar("i", 4)
	load := &Load{Tensor: x, Index: []Index{VarIndex(i)}}
	tests := []struct {
		name string
		e    Expr
		want bool
	}{
		{"constant", &ConstExpr{Value: 1, DType: F32}, false},
		{"index", &IndexExpr{Index: VarIndex(i)}, false},
		{"comparison of indexes", &Binary{Op: Lt, X: &IndexExpr{Index: VarIndex(i)}, Y: &ConstExpr{Value: 2, DType: I32}}, false},
		{"load", load, true},
		{"under a select", &Select{Cond: &ConstExpr{Value: 1, DType: Bool}, Then: &ConstExpr{Value: 0, DType: F32}, Else: load}, true},
		{"gather", &Load{Tensor: x, Index: []Index{Const(0)}, Gather: []Expr{&Load{Tensor: ids, Index: []Index{VarIndex(i)}}}}, true},
	}
	for _, tt := range tests {
		if got := HasLoad(tt.e); got != tt.want {
			t.Errorf("%s: HasLoad = %v, want %v", tt.name, got, tt.want)
		}
	}
}
