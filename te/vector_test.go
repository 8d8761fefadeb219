package te

import "testing"

// TestContiguous checks which loads read vectors of 8 elements along an axis:
// those whose flat offset moves by one element per step of the axis from
// an aligned start, reshapes by divisors that are multiples of the
// vector included, and an im2col's kernel rows, constant over a vector.
func TestContiguous(t *testing.T) {
	k := &Var{Name: "k", Extent: 64}
	m := &Var{Name: "m", Extent: 32}
	K, M := VarIndex(k), VarIndex(m)
	load := func(shape []int, idx ...Index) *Load {
		return &Load{Tensor: &Tensor{Name: "x", DType: F16, Shape: shape}, Index: idx}
	}
	f := &Var{Name: "f", Extent: 2 * 784}
	F := VarIndex(f)
	p := &Var{Name: "p", Extent: 3 * 64}
	P := VarIndex(p)
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
		// An im2col of 8×8 patches with stride 8: k = (c, kh, kw), rows
		// 8·m + kh, kw in the row; kh = floor(k/8) mod 8 is constant over
		// a vector of 8 along k.
		{"a stride-8 patch", load([]int{3, 256, 8}, P.Div(64), P.Div(8).Mod(8).Add(M.Scale(8)), P.Mod(8)), true},
		{"a stride-8 patch in rows of 12", load([]int{3, 256, 12}, P.Div(64), P.Div(8).Mod(8).Add(M.Scale(8)), P.Mod(8)), false},
		{"a patch row of floor(k/4)", load([]int{3, 512, 8}, P.Div(64), P.Div(4).Mod(16).Add(M.Scale(16)), P.Mod(8)), false},
		{"a patch row of floor(k/16) mod 8", load([]int{3, 256, 8}, P.Div(64).Mod(3), P.Div(8).Mod(8).Add(M.Scale(8)), P.Mod(8)), true},
	} {
		along := k
		switch {
		case tc.ld.Index[0].Uses(f):
			along = f
		case tc.ld.Index[0].Uses(p):
			along = p
		}
		if got := tc.ld.Contiguous(along, 8); got != tc.want {
			t.Errorf("%s: x%v: got %v, want %v", tc.name, tc.ld.Index, got, tc.want)
		}
	}
}

// TestVectorElems checks when a loop over a tensor's elements computes a
// 16-byte vector of them per thread.
func TestVectorElems(t *testing.T) {
	i, j := &Var{Name: "i", Extent: 4}, &Var{Name: "j", Extent: 16}
	I, J := VarIndex(i), VarIndex(j)
	x := &Tensor{Name: "x", Kind: Input, DType: F16, Shape: []int{4, 16}}
	b := &Tensor{Name: "b", Kind: Param, DType: F32, Shape: []int{16}}
	row := &Tensor{Name: "r", Kind: Input, DType: F32, Shape: []int{4}}
	ldx := &Load{Tensor: x, Index: []Index{I, J}}
	ldb := &Load{Tensor: b, Index: []Index{J}}
	for _, tc := range []struct {
		name   string
		dt     DType
		body   Expr
		n      int
		moving int
	}{
		{"f16 plus an f32 bias", F16, &Binary{Op: Add, X: &Cast{To: F32, X: ldx}, Y: ldb}, 8, 2},
		{"a row's scalar", F16, &Cast{To: F16, X: &Load{Tensor: row, Index: []Index{I}}}, 8, 0},
		{"f32 of f16 loads (8 bytes a vector)", F32, &Cast{To: F32, X: ldx}, 0, 0},
		{"reversed", F16, &Load{Tensor: x, Index: []Index{I, J.Scale(-1).AddConst(15)}}, 0, 0},
		{"under a select", F16, &Select{Cond: &ConstExpr{Value: 1, DType: Bool}, Then: ldx, Else: &ConstExpr{Value: 0, DType: F16}}, 0, 0},
		{"a reduction", F32, &Reduce{Op: Sum, Axes: []*Var{{Name: "k", Extent: 4}}, Body: ldb}, 0, 0},
	} {
		y := &Tensor{Name: "y", Kind: Compute, DType: tc.dt, Shape: []int{4, 16}, Axes: []*Var{i, j}, Body: tc.body}
		n, moving := VectorElems(y, nil)
		if n != tc.n || len(moving) != tc.moving {
			t.Errorf("%s: %d elements, %d moving loads; want %d, %d", tc.name, n, len(moving), tc.n, tc.moving)
		}
	}
}
