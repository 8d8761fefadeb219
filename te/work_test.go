package te

import "testing"

func TestWork(t *testing.T) {
	x := &Tensor{Name: "x", Kind: Input, DType: F32, Shape: []int{4, 8}}
	w := &Tensor{Name: "w", Kind: Param, DType: F32, Shape: []int{8}}
	i, k := NewVar("i", 4), NewVar("k", 8)
	ld := &Load{Tensor: x, Index: []Index{VarIndex(i), VarIndex(k)}}
	// s[i] = sum[k](x[i, k] * 2): per element 1 + 8 × (1 + 3) + 1.
	s := &Tensor{Name: "s", Kind: Compute, DType: F32, Shape: []int{4}, Axes: []*Var{i},
		Body: &Reduce{Op: Sum, Axes: []*Var{k}, Body: &Binary{Op: Mul, X: ld, Y: &ConstExpr{Value: 2, DType: F32}}}}
	// c[i] = sum[k](x[i, k] * w[k]): a contraction, 8 × 4 per element.
	c := &Tensor{Name: "c", Kind: Compute, DType: F32, Shape: []int{4}, Axes: []*Var{i},
		Body: &Reduce{Op: Sum, Axes: []*Var{k}, Body: &Binary{Op: Mul, X: ld, Y: &Load{Tensor: w, Index: []Index{VarIndex(k)}}}}}
	p := &Program{Name: "m", Tensors: []*Tensor{x, w, s, c}, Outputs: []*Tensor{s, c}}
	want := Work{Scalar: 32 + 8 + 4*(2+8*4) + 4*2, Contraction: 4 * 8 * 4}
	if got := p.Work(); got != want {
		t.Errorf("Work() = %+v, want %+v", got, want)
	}

	// R8 of issue 17: a sum over 10^12 values is 10^12-scale work, and the
	// product of extents does not overflow.
	a, b := NewVar("a", 1000000), NewVar("b", 1000000)
	y := &Tensor{Name: "y", Kind: Input, DType: F32, Shape: []int{1000000}}
	z := &Tensor{Name: "z", Kind: Compute, DType: F32, Shape: nil,
		Body: &Reduce{Op: Sum, Axes: []*Var{a, b}, Body: &Load{Tensor: y, Index: []Index{VarIndex(b)}}}}
	big := &Program{Name: "big", Tensors: []*Tensor{y, z}, Outputs: []*Tensor{z}}
	if w := big.Work(); w.Scalar < 1e12 || w.Scalar > 1e13 || w.Contraction != 0 {
		t.Errorf("a sum over 10^12 values: Work() = %+v", w)
	}
}
