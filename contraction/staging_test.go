package contraction

import (
	"testing"

	"tec/te"
)

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
