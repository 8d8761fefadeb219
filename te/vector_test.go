package te

import "testing"

// TestContiguous checks which loads read vectors of 8 elements along an axis:
// those whose flat offset moves by one element per step of the axis from
// an aligned start, reshapes by divisors that are multiples of the
// vector included.
func TestContiguous(t *testing.T) {
	k := &Var{Name: "k", Extent: 64}
	m := &Var{Name: "m", Extent: 32}
	K, M := VarIndex(k), VarIndex(m)
	load := func(shape []int, idx ...Index) *Load {
		return &Load{Tensor: &Tensor{Name: "x", DType: F16, Shape: shape}, Index: idx}
	}
	f := &Var{Name: "f", Extent: 2 * 784}
	F := VarIndex(f)
	for _, tc := range []struct {
		name string
		ld   *Load
		want bool
	}{
		{"an image's pixels as one axis", load([]int{2, 3, 28, 28}, F.Div(784), Const(1), F.Div(28).Mod(28), F.Mod(28)), true},
		{"pixels of a cropped image", load([]int{2, 3, 28, 32}, F.Div(784), Const(1), F.Div(28).Mod(28), F.Mod(28)), false},
		{"pixels with stride 2", load([]int{2, 3, 56, 56}, F.Div(784), Const(1), F.Div(28).Mod(28).Scale(2), F.Mod(28).Scale(2)), false},
		{"row-major, k last", load([]int{32, 64}, M, K), true},
		{"k first (a column)", load([]int{64, 32}, K, M), false},
		{"odd row length", load([]int{32, 60}, M, K.Div(1)), false},
		{"offset by 8", load([]int{32, 72}, M, K.AddConst(8)), true},
		{"offset by 4", load([]int{32, 72}, M, K.AddConst(4)), false},
		{"stride 2", load([]int{32, 128}, M, K.Scale(2)), false},
		{"reversed", load([]int{32, 64}, M, K.Scale(-1).AddConst(63)), false},
		{"reshape by 16", load([]int{4, 32, 16}, K.Div(16), M, K.Mod(16)), true},
		{"reshape by 4", load([]int{16, 32, 4}, K.Div(4), M, K.Mod(4)), false},
		{"m only", load([]int{32, 8}, M, Const(0)), false},
		{"a 1×1 window", load([]int{32, 64}, M, K.Add(VarIndex(&Var{Name: "kw", Extent: 1}))), true},
	} {
		along := k
		if tc.ld.Index[0].Uses(f) {
			along = f
		}
		if got := tc.ld.Contiguous(along, 8); got != tc.want {
			t.Errorf("%s: x%v: got %v, want %v", tc.name, tc.ld.Index, got, tc.want)
		}
	}
}
