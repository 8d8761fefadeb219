package contraction

import (
	"testing"

	"tec/te"
)

// TestContiguous checks which loads read 16-byte vectors along an axis:
// those whose flat offset moves by one element per step of the axis from
// an aligned start, reshapes by divisors that are multiples of the
// vector included.
func TestContiguous(t *testing.T) {
	k := &te.Var{Name: "k", Extent: 64}
	m := &te.Var{Name: "m", Extent: 32}
	K, M := te.VarIndex(k), te.VarIndex(m)
	load := func(shape []int, idx ...te.Index) *te.Load {
		return &te.Load{Tensor: &te.Tensor{Name: "x", DType: te.F16, Shape: shape}, Index: idx}
	}
	f := &te.Var{Name: "f", Extent: 2 * 784}
	F := te.VarIndex(f)
	for _, tc := range []struct {
		name string
		ld   *te.Load
		want bool
	}{
		{"an image's pixels as one axis", load([]int{2, 3, 28, 28}, F.Div(784), te.Const(1), F.Div(28).Mod(28), F.Mod(28)), true},
		{"pixels of a cropped image", load([]int{2, 3, 28, 32}, F.Div(784), te.Const(1), F.Div(28).Mod(28), F.Mod(28)), false},
		{"pixels with stride 2", load([]int{2, 3, 56, 56}, F.Div(784), te.Const(1), F.Div(28).Mod(28).Scale(2), F.Mod(28).Scale(2)), false},
		{"row-major, k last", load([]int{32, 64}, M, K), true},
		{"k first (a column)", load([]int{64, 32}, K, M), false},
		{"odd row length", load([]int{32, 60}, M, K.Div(1)), false},
		{"offset by 8", load([]int{32, 72}, M, K.AddConst(8)), true},
		{"offset by 4", load([]int{32, 72}, M, K.AddConst(4)), false},
		{"stride 2", load([]int{32, 128}, M, K.Scale(2)), false},
		{"reversed", load([]int{32, 64}, M, K.Scale(-1).AddConst(63)), false},
		{"reshape by 16", load([]int{4, 32, 16}, K.Div(16), M, K.Mod(16)), true},
		{"reshape by 4", load([]int{16, 32, 4}, K.Div(4), M, K.Mod(4)), false},
		{"m only", load([]int{32, 8}, M, te.Const(0)), false},
		{"a 1×1 window", load([]int{32, 64}, M, K.Add(te.VarIndex(&te.Var{Name: "kw", Extent: 1}))), true},
	} {
		along := k
		if tc.ld.Index[0].Uses(f) {
			along = f
		}
		if got := contiguous(tc.ld, along, 8); got != tc.want {
			t.Errorf("%s: x%v: got %v, want %v", tc.name, tc.ld.Index, got, tc.want)
		}
	}
}

// TestStagingOf checks how tensor-core tiles stage operands of each form.
func TestStagingOf(t *testing.T) {
	k := &te.Var{Name: "k", Extent: 64}
	m := &te.Var{Name: "m", Extent: 32}
	n := &te.Var{Name: "n", Extent: 48}
	K, M, N := te.VarIndex(k), te.VarIndex(m), te.VarIndex(n)
	r := &te.Reduce{Op: te.Sum, Axes: []*te.Var{k}}
	half := func(name string, shape ...int) *te.Tensor {
		return &te.Tensor{Name: name, DType: te.F16, Shape: shape}
	}
	x, w, wt := half("x", 32, 64), half("w", 64, 48), half("wt", 48, 64)
	ld := func(t *te.Tensor, idx ...te.Index) te.Expr { return &te.Load{Tensor: t, Index: idx} }
	noop := func(e te.Expr) te.Expr { return &te.Cast{To: te.F16, X: &te.Cast{To: te.F32, X: e}} }
	exp := func(e te.Expr) te.Expr { return &te.Cast{To: te.F16, X: &te.Unary{Op: te.Exp, X: e}} }
	padded := &te.Select{Cond: &te.Binary{Op: te.Lt, X: &te.IndexExpr{Index: K}, Y: &te.ConstExpr{Value: 60, DType: te.I32}}, Then: ld(x, M, K), Else: &te.ConstExpr{Value: 0, DType: te.F16}}
	for _, tc := range []struct {
		name   string
		X, Y   te.Expr
		x, y   StageMode
		kMajor bool
	}{
		{"loads", ld(x, M, K), ld(w, K, N), StageAsync, StageAsync, false},
		{"no-op casts", noop(ld(x, M, K)), noop(ld(w, K, N)), StageAsync, StageAsync, false},
		{"[out, in] weight", ld(x, M, K), ld(wt, N, K), StageAsync, StageAsync, true},
		{"computed X", exp(ld(x, M, K)), ld(w, K, N), StageVector, StageVector, false},
		{"padded X", padded, ld(wt, N, K), StageElements, StageVector, true},
	} {
		s := StagingOf(tc.X, tc.Y, te.F16, []*te.Var{m}, []*te.Var{n}, r, 32, 48, 64)
		if s.X.Mode != tc.x || s.Y.Mode != tc.y || s.Y.KMajor != tc.kMajor || !s.X.KMajor {
			t.Errorf("%s: X %v, Y %v (k-major %v); want %v, %v (%v)", tc.name, s.X.Mode, s.Y.Mode, s.Y.KMajor, tc.x, tc.y, tc.kMajor)
		}
		if s.X.Mode == StageElements && s.X.Why == "" {
			t.Errorf("%s: X staged element by element without a reason", tc.name)
		}
	}
}
