package lower

import (
	"testing"

	"tec/backend/kir"
	"tec/backend/report"
	"tec/backend/sim"
	"tec/te"
)

// TestVectorElementwise lowers element-wise tensors in kernels of their
// own, checks which compute a 16-byte vector of elements per thread
// (vectorElems: loads contiguous along the last axis, none under a
// select, a last extent a multiple of the vector), and simulates each
// against the reference evaluator, the static report counting what the
// simulator does.
func TestVectorElementwise(t *testing.T) {
	for _, tc := range []struct {
		name string
		dt   te.DType
		rows int
		cols int
		body func(x, b *te.Tensor, a []te.Index) te.Expr
		vec  bool
	}{
		{"f32 row plus bias", te.F32, 6, 12, func(x, b *te.Tensor, a []te.Index) te.Expr { return add(ld(x, a[0], a[1]), ld(b, a[1])) }, true},
		{"f16 exp", te.F16, 3, 16, func(x, b *te.Tensor, a []te.Index) te.Expr { return un(te.Exp, ld(x, a[0], a[1])) }, true},
		{"f32 extent 10", te.F32, 4, 10, func(x, b *te.Tensor, a []te.Index) te.Expr { return ld(x, a[0], a[1]) }, false},
		{"reversed", te.F32, 4, 12, func(x, b *te.Tensor, a []te.Index) te.Expr { return ld(x, a[0], a[1].Scale(-1).AddConst(11)) }, false},
		{"under a select", te.F32, 4, 12, func(x, b *te.Tensor, a []te.Index) te.Expr {
			return sel(bin(te.Lt, ix(a[1]), ci(6)), ld(x, a[0], a[1]), cf(1))
		}, false},
		{"a row's scalar", te.F32, 4, 8, func(x, b *te.Tensor, a []te.Index) te.Expr { return mul(ld(b, a[0].Scale(2)), ix(a[1])) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bld := newBuilder("vec")
			x := bld.input("x", tc.dt, tc.rows, tc.cols)
			b := bld.param("b", tc.dt, 2*max(tc.rows, tc.cols))
			y := bld.compute("y", tc.dt, shp(tc.rows, tc.cols), func(a []te.Index) te.Expr { return tc.body(x, b, a) })
			p := bld.outputs(y)
			m, err := Unfused(p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			vec := false
			kir.WalkStmts(m.Kernels[0].Body, func(s kir.Stmt) bool {
				if c, ok := s.(*kir.VecCopy); ok && c.Dst.Space == kir.Global {
					vec = true
				}
				return true
			})
			if vec != tc.vec {
				t.Errorf("vector stores %v, want %v", vec, tc.vec)
			}
			feeds := randFeeds(p, 3)
			want, err := te.Evaluate(p, feeds, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := sim.Run(m, feeds, sim.Options{Race: true})
			if err != nil {
				t.Fatal(err)
			}
			tol := 1e-6 // f32 rounding of the inputs and the result
			if tc.dt == te.F16 {
				tol = 1e-3
			}
			for i, v := range want["y"].Data {
				if got := res.Outputs["y"].Data[i]; abs(got-v) > tol*(abs(v)+1e-3) {
					t.Fatalf("y[%d] = %v, want %v", i, got, v)
				}
			}
			if rep := report.Module(m, report.Config{}); rep.Total != res.Total() {
				t.Errorf("static report counts %v, the simulator %v", rep.Total, res.Total())
			}
		})
	}
}

func abs(x float64) float64 { return max(x, -x) }
