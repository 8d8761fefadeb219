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
	// a horizontally concatenated contraction's operand: x in batch 0,
	// x2 in batch 1 (a condition a vector's points share), and the same
	// choice made along k (one they do not)
	b := &te.Var{Name: "b", Extent: 2}
	x2 := half("x2", 32, 64)
	choice := func(v *te.Var, at float64) te.Expr {
		return &te.Select{Cond: &te.Binary{Op: te.Lt, X: &te.IndexExpr{Index: te.VarIndex(v)}, Y: &te.ConstExpr{Value: at, DType: te.I32}}, Then: ld(x, M, K), Else: ld(x2, M, K)}
	}
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
		{"X chosen by batch", choice(b, 1), ld(w, K, N), StageVector, StageVector, false},
		{"X chosen along k", choice(k, 32), ld(w, K, N), StageElements, StageVector, false},
	} {
		s := StagingOf(tc.X, tc.Y, te.F16, []*te.Var{m}, []*te.Var{n}, r, 32, 48, 64, true)
		if s.X.Mode != tc.x || s.Y.Mode != tc.y || s.Y.KMajor != tc.kMajor || !s.X.KMajor {
			t.Errorf("%s: X %v, Y %v (k-major %v); want %v, %v (%v)", tc.name, s.X.Mode, s.Y.Mode, s.Y.KMajor, tc.x, tc.y, tc.kMajor)
		}
		// Without cp.async (sm_75), what it would copy is a 16-byte
		// register prefetch; the rest is the same.
		wx, wy := tc.x, tc.y
		if wx == StageAsync {
			wx, wy = StageVector, StageVector
		}
		if s := StagingOf(tc.X, tc.Y, te.F16, []*te.Var{m}, []*te.Var{n}, r, 32, 48, 64, false); s.X.Mode != wx || s.Y.Mode != wy || s.Y.KMajor != tc.kMajor {
			t.Errorf("%s without cp.async: X %v, Y %v (k-major %v); want %v, %v (%v)", tc.name, s.X.Mode, s.Y.Mode, s.Y.KMajor, wx, wy, tc.kMajor)
		}
		if s.X.Mode == StageElements && s.X.Why == "" {
			t.Errorf("%s: X staged element by element without a reason", tc.name)
		}
		// A choice between two tensors: the prefetch fetches one, and
		// keeps the other's addresses too.
		if want := map[bool]int{true: 2}[tc.name == "X chosen by batch"]; s.X.Choices != want {
			t.Errorf("%s: X chooses among %d loads, want %d", tc.name, s.X.Choices, want)
		}
	}
}

// TestStagingOfNarrow checks the width of the loads of operands whose
// layout allows no 16-byte vector: rows of M or K halves that are not a
// multiple of 8, a weight packed at an offset of 4 or 2 halves, a row of
// an odd length (element loads along it), a row read at every other
// element (element loads along k), a padding's select whose condition
// the points of a chunk share (along k: element loads along k, fetched
// where it holds; along m: 16-byte loads along m), and one along both,
// which allows no prefetch.
func TestStagingOfNarrow(t *testing.T) {
	half := func(name string, shape ...int) *te.Tensor {
		return &te.Tensor{Name: name, DType: te.F16, Shape: shape}
	}
	ld := func(t *te.Tensor, idx ...te.Index) te.Expr { return &te.Load{Tensor: t, Index: idx} }
	for _, tc := range []struct {
		name             string
		M, N, K          int
		X, Y             func(m, n, k te.Index) te.Expr
		xWidth, yWidth   int // 0: element by element
		xKMajor, yKMajor bool
	}{
		{"rows of 196 pixels", 196, 64, 64,
			func(m, n, k te.Index) te.Expr { return ld(half("x", 64, 196), k, m) },
			func(m, n, k te.Index) te.Expr { return ld(half("w", 64, 64), n, k) },
			8, 16, false, true},
		{"rows of 98 pixels", 98, 64, 64,
			func(m, n, k te.Index) te.Expr { return ld(half("x", 64, 98), k, m) },
			func(m, n, k te.Index) te.Expr { return ld(half("w", 64, 64), n, k) },
			4, 16, false, true},
		{"rows of 49 pixels", 49, 64, 64,
			func(m, n, k te.Index) te.Expr { return ld(half("x", 64, 49), k, m) },
			func(m, n, k te.Index) te.Expr { return ld(half("w", 64, 64), n, k) },
			2, 16, false, true},
		{"K of 49", 64, 64, 49,
			func(m, n, k te.Index) te.Expr {
				return &te.Cast{To: te.F16, X: &te.Unary{Op: te.Exp, X: ld(half("s", 64, 49), m, k)}}
			},
			func(m, n, k te.Index) te.Expr { return ld(half("v", 49, 64), k, n) },
			2, 16, true, false},
		{"every other pixel", 64, 64, 64,
			func(m, n, k te.Index) te.Expr { return ld(half("x", 64, 128), k, m.Scale(2)) },
			func(m, n, k te.Index) te.Expr { return ld(half("w", 64, 64), n, k) },
			2, 16, true, true},
		{"padding along m", 64, 64, 64,
			func(m, n, k te.Index) te.Expr {
				return &te.Select{Cond: &te.Binary{Op: te.Lt, X: &te.IndexExpr{Index: m}, Y: &te.ConstExpr{Value: 60, DType: te.I32}},
					Then: ld(half("x", 64, 64), k, m), Else: &te.ConstExpr{Value: 0, DType: te.F16}}
			},
			func(m, n, k te.Index) te.Expr { return ld(half("w", 64, 64), n, k) },
			2, 16, true, true},
		{"padding along k", 64, 64, 64,
			func(m, n, k te.Index) te.Expr {
				return &te.Select{Cond: &te.Binary{Op: te.Lt, X: &te.IndexExpr{Index: k}, Y: &te.ConstExpr{Value: 60, DType: te.I32}},
					Then: ld(half("x", 64, 64), k, m), Else: &te.ConstExpr{Value: 0, DType: te.F16}}
			},
			func(m, n, k te.Index) te.Expr { return ld(half("w", 64, 64), n, k) },
			16, 16, false, true},
		{"padding along m and k", 64, 64, 64,
			func(m, n, k te.Index) te.Expr {
				return &te.Select{Cond: &te.Binary{Op: te.Lt, X: &te.IndexExpr{Index: m.Add(k)}, Y: &te.ConstExpr{Value: 100, DType: te.I32}},
					Then: ld(half("x", 64, 64), k, m), Else: &te.ConstExpr{Value: 0, DType: te.F16}}
			},
			func(m, n, k te.Index) te.Expr { return ld(half("w", 64, 64), n, k) },
			0, 16, true, true},
		{"K of 52", 64, 64, 52,
			func(m, n, k te.Index) te.Expr { return ld(half("x", 64, 52), m, k) },
			func(m, n, k te.Index) te.Expr { return ld(half("w", 52, 64), k, n) },
			8, 16, true, false},
		{"packed weight", 64, 128, 64,
			func(m, n, k te.Index) te.Expr { return ld(half("x", 64, 64), m, k) },
			func(m, n, k te.Index) te.Expr {
				return ld(half("wts", 4+64*128), k.Scale(128).Add(n).Add(te.Const(4)))
			},
			16, 8, true, false},
		{"packed weight at 2", 64, 128, 64,
			func(m, n, k te.Index) te.Expr { return ld(half("x", 64, 64), m, k) },
			func(m, n, k te.Index) te.Expr {
				return ld(half("wts", 2+64*128), k.Scale(128).Add(n).Add(te.Const(2)))
			},
			16, 4, true, false},
	} {
		m := &te.Var{Name: "m", Extent: tc.M}
		n := &te.Var{Name: "n", Extent: tc.N}
		k := &te.Var{Name: "k", Extent: tc.K}
		r := &te.Reduce{Op: te.Sum, Axes: []*te.Var{k}}
		M, N, K := te.VarIndex(m), te.VarIndex(n), te.VarIndex(k)
		s := StagingOf(tc.X(M, N, K), tc.Y(M, N, K), te.F16, []*te.Var{m}, []*te.Var{n}, r, tc.M, tc.N, tc.K, true)
		for _, o := range []struct {
			name   string
			op     Operand
			width  int
			kMajor bool
		}{{"X", s.X, tc.xWidth, tc.xKMajor}, {"Y", s.Y, tc.yWidth, tc.yKMajor}} {
			width := o.op.Width
			if o.op.Mode == StageElements {
				width = 0
				if o.op.Why == "" {
					t.Errorf("%s: %s element by element without a reason", tc.name, o.name)
				}
			}
			if width != o.width || o.op.KMajor != o.kMajor {
				t.Errorf("%s: %s staged %v (k-major %v), want %d-byte loads (k-major %v)", tc.name, o.name, o.op, o.op.KMajor, o.width, o.kMajor)
			}
			if width > 0 && width < 16 && (o.op.Why == "" || o.op.Narrow() == "") {
				t.Errorf("%s: %s staged with %d-byte loads without a reason", tc.name, o.name, width)
			}
			if width == 16 && o.op.Narrow() != "" {
				t.Errorf("%s: %s staged with 16-byte loads, described as narrow: %s", tc.name, o.name, o.op.Narrow())
			}
			if o.op.Mode == StageAsync && (width != 16 || o.op.Vec != 8) {
				t.Errorf("%s: %s copied by cp.async with %d-byte loads", tc.name, o.name, width)
			}
		}
	}
}
