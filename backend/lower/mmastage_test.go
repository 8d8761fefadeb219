package lower

import (
	"fmt"
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/backend/report"
	"tec/te"
)

// operandForm is how stagedMatmul writes its operands.
type operandForm struct {
	wT      bool // w laid out [N, K] (k contiguous), as a [out, in] weight
	expX    bool // X computed: exp(x - 1/2) cast to the operand type
	reshape bool // x laid out [B, K/16, M, 16]: X's k through a div and a mod
	pad     bool // X under a select on k (zero past K-3), as a padding
	xT      bool // x laid out [B, K, M] (m contiguous), as an NCHW convolution's
	twoAxes bool // the sum over two axes, K/8 × 8
	f32x    bool // x of f32, cast to the operands' half type
	wOff    int  // w flat, from this element on, as a packed weight
	strided bool // x laid out [B, M, 2K], X its even columns
}

// stagedMatmul is halfMatmul's y = tanh(x·w + b) + r with its operands
// written as f says.
func stagedMatmul(in te.DType, B, M, K, N int, f operandForm) *te.Program {
	b := newBuilder("staged_matmul")
	xshape := shp(B, M, K)
	switch {
	case f.reshape:
		xshape = shp(B, K/16, M, 16)
	case f.xT:
		xshape = shp(B, K, M)
	case f.strided:
		xshape = shp(B, M, 2*K)
	}
	xt := in
	if f.f32x {
		xt = te.F32
	}
	x := b.input("x", xt, xshape...)
	wshape := shp(K, N)
	switch {
	case f.wOff > 0:
		wshape = shp(f.wOff + K*N)
	case f.wT:
		wshape = shp(N, K)
	}
	w := b.param("w", in, wshape...)
	bias := b.param("b", te.F32, N)
	res := b.input("r", te.F32, B, M, N)
	op := func(e te.Expr) te.Expr {
		if in == te.F32 {
			return un(te.RoundTF32, e)
		}
		if ld, isLoad := e.(*te.Load); isLoad && ld.Tensor.DType == in {
			return e
		}
		return &te.Cast{To: in, X: e}
	}
	y := b.f32("y", shp(B, M, N), func(a []te.Index) te.Expr {
		term := func(k te.Index) te.Expr {
			xe := ld(x, a[0], a[1], k)
			switch {
			case f.reshape:
				xe = ld(x, a[0], k.Div(16), a[1], k.Mod(16))
			case f.xT:
				xe = ld(x, a[0], k, a[1])
			case f.strided:
				xe = ld(x, a[0], a[1], k.Scale(2))
			}
			if f.expX {
				xe = un(te.Exp, sub(xe, cf(0.5)))
			}
			if f.pad {
				xe = sel(bin(te.Lt, ix(k), ci(K-3)), xe, cf(0))
			}
			we := ld(w, k, a[2])
			switch {
			case f.wOff > 0 && f.wT:
				we = ld(w, a[2].Scale(K).Add(k).Add(te.Const(f.wOff)))
			case f.wOff > 0:
				we = ld(w, k.Scale(N).Add(a[2]).Add(te.Const(f.wOff)))
			case f.wT:
				we = ld(w, a[2], k)
			}
			return mul(op(xe), op(we))
		}
		s := sum1(K, term)
		if f.twoAxes {
			s = red(te.Sum, []int{K / 8, 8}, func(ks []te.Index) te.Expr { return term(ks[0].Scale(8).Add(ks[1])) })
		}
		return add(un(te.Tanh, add(s, ld(bias, a[2]))), ld(res, a[0], a[1], a[2]))
	})
	return b.outputs(y)
}

// staging counts how m's kernel stages its operands: register prefetches
// (vector or element loads from global into local arrays, the narrowest
// of width bytes), cp.async copies, 16-byte stores into shared arrays, ldmatrix
// without .trans of two matrices (a k-major Y's fragments) and with
// .trans of four (an m-major X's).
type staging struct{ prefetch, width, async, vecStores, ldmB, ldmXT int }

func stagingOf(m *kir.Module) staging {
	var s staging
	kir.WalkStmts(m.Kernels[0].Body, func(x kir.Stmt) bool {
		switch x := x.(type) {
		case *kir.Store:
			// An element load into a prefetch array (prepareVector's xv0, yv0...).
			ld, isLoad := x.Value.(*kir.Load)
			if isLoad && ld.Buf.Space == kir.Global && x.Buf.Space == kir.Local && (strings.HasPrefix(x.Buf.Name, "xv") || strings.HasPrefix(x.Buf.Name, "yv")) {
				s.prefetch++
				if s.width == 0 || x.Buf.DType.Size() < s.width {
					s.width = x.Buf.DType.Size()
				}
			}
		case *kir.VecCopy:
			if x.Src.Space == kir.Global && x.Dst.Space == kir.Local {
				s.prefetch++
				if s.width == 0 || x.Size() < s.width {
					s.width = x.Size()
				}
			}
			if x.Dst.Space == kir.Shared {
				s.vecStores++
			}
		case *kir.CopyAsync:
			s.async++
		case *kir.LdMatrix:
			if x.Num == 2 && !x.Trans {
				s.ldmB++
			}
			if x.Num == 4 && x.Trans {
				s.ldmXT++
			}
		}
		return true
	})
	return s
}

// TestTensorCoreStaging lowers tensor-core contractions whose operands
// take each staging path (contraction.StagingOf) — cp.async for bare
// loads, a k-major Y (w laid out [N, K]) read with ldmatrix without
// .trans, 16-byte register prefetches for computed operands, a reshape's
// div and mod, 8- and 4-byte prefetches where rows of M or K halves or a
// packed weight's offset leave 16 bytes unaligned, and element loads
// where rows of an odd length leave nothing wider (width: the narrowest
// prefetch load), element by element under a select —
// simulates them with race detection against the reference, and checks
// that the static report counts what the simulator does, bank conflicts
// included (none).
func TestTensorCoreStaging(t *testing.T) {
	type want struct{ prefetch, async, ldmB, ldmXT bool }
	for _, tc := range []struct {
		in         te.DType
		B, M, K, N int
		f          operandForm
		want       want
		width      int
	}{
		{te.F16, 1, 64, 64, 64, operandForm{wT: true}, want{async: true, ldmB: true}, 0},
		{te.BF16, 2, 40, 48, 72, operandForm{wT: true}, want{prefetch: true, ldmB: true}, 16}, // K not a multiple of 32
		{te.F16, 1, 96, 64, 64, operandForm{expX: true}, want{prefetch: true}, 16},
		{te.F16, 1, 64, 96, 64, operandForm{expX: true, wT: true}, want{prefetch: true, ldmB: true}, 16},
		{te.F16, 2, 48, 64, 40, operandForm{reshape: true}, want{async: true}, 0},
		{te.BF16, 1, 64, 64, 64, operandForm{reshape: true, expX: true, wT: true}, want{prefetch: true, ldmB: true}, 16},
		{te.F16, 1, 64, 64, 64, operandForm{pad: true}, want{prefetch: true}, 16}, // Y only
		{te.F32, 1, 64, 40, 64, operandForm{wT: true}, want{prefetch: true}, 16},  // TF32: element fragments
		{te.F32, 1, 64, 64, 64, operandForm{reshape: true}, want{prefetch: true}, 16},
		{te.F16, 1, 64, 64, 64, operandForm{f32x: true}, want{prefetch: true}, 16},
		{te.BF16, 1, 48, 64, 64, operandForm{f32x: true, xT: true, wT: true}, want{prefetch: true, ldmB: true, ldmXT: true}, 16},
		{te.F16, 1, 64, 64, 64, operandForm{xT: true}, want{async: true, ldmXT: true}, 0},
		{te.BF16, 2, 40, 48, 64, operandForm{xT: true, wT: true}, want{prefetch: true, ldmB: true, ldmXT: true}, 16},
		{te.F16, 1, 64, 64, 48, operandForm{xT: true, expX: true}, want{prefetch: true, ldmXT: true}, 16},
		{te.F32, 1, 64, 32, 64, operandForm{xT: true, wT: true}, want{async: false, prefetch: true}, 16},
		{te.F16, 1, 64, 64, 64, operandForm{twoAxes: true, wT: true}, want{async: true, ldmB: true}, 0},
		{te.BF16, 1, 48, 64, 40, operandForm{twoAxes: true, xT: true}, want{async: true, ldmXT: true}, 0},
		// Rows of 36 or 18 halves (a channel of 6×6 or 3×6 pixels): 8- or
		// 4-byte loads, the last vector of M cut by the extent.
		{te.F16, 1, 36, 64, 64, operandForm{xT: true}, want{prefetch: true, ldmXT: true}, 8},
		{te.BF16, 2, 18, 48, 40, operandForm{xT: true, expX: true}, want{prefetch: true, ldmXT: true}, 4},
		{te.F32, 1, 38, 32, 64, operandForm{xT: true}, want{prefetch: true}, 8},
		// Rows of 52 or 50 halves along k: K cuts through a vector.
		{te.F16, 1, 64, 52, 64, operandForm{}, want{prefetch: true}, 8},
		{te.F16, 1, 40, 50, 48, operandForm{wT: true, expX: true}, want{prefetch: true, ldmB: true}, 4},
		// Rows of 25 or 49 halves: element loads, prefetched all the same.
		{te.F16, 1, 25, 32, 64, operandForm{xT: true}, want{prefetch: true, ldmXT: true}, 2},
		{te.BF16, 2, 40, 49, 48, operandForm{expX: true}, want{prefetch: true}, 2},
		// Every other column: element loads along k at a stride of 2.
		{te.F16, 1, 48, 40, 64, operandForm{strided: true}, want{prefetch: true}, 2},
		// A weight packed at an offset of 4 or 2 halves.
		{te.F16, 1, 64, 64, 64, operandForm{wOff: 4}, want{prefetch: true}, 8},
		{te.BF16, 1, 64, 64, 48, operandForm{wOff: 2, wT: true}, want{prefetch: true, ldmB: true}, 4},
	} {
		t.Run(fmt.Sprintf("%s/%dx%dx%dx%d/%+v", tc.in, tc.B, tc.M, tc.K, tc.N, tc.f), func(t *testing.T) {
			p := stagedMatmul(tc.in, tc.B, tc.M, tc.K, tc.N, tc.f)
			m, err := Unfused(p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			res := simulateMatmul(t, p, m, uint64(tc.M))
			s := stagingOf(m)
			if got := (want{s.prefetch > 0, s.async > 0, s.ldmB > 0, s.ldmXT > 0}); got != tc.want {
				t.Errorf("staging %+v (%+v), want %+v", got, s, tc.want)
			}
			if s.width != tc.width {
				t.Errorf("narrowest prefetch load %d bytes, want %d", s.width, tc.width)
			}
			if s.prefetch > 0 && s.vecStores == 0 {
				t.Errorf("a register prefetch without 16-byte stores to shared memory")
			}
			total := res.Total()
			if total.MMAs == 0 {
				t.Fatalf("no MMAs")
			}
			k := res.Kernels[0]
			for _, a := range []string{"xs", "ys"} {
				if b := k.ArrayBanks[a]; b.Wavefronts == 0 || b.Conflicts > 0 {
					t.Errorf("%s: %d wavefronts, %d bank conflicts", a, b.Wavefronts, b.Conflicts)
				}
			}
			rep := report.Module(m, report.Config{})
			if rep.Total != total {
				t.Errorf("static report counts %v, the simulator %v", rep.Total, total)
			}
			if rk := rep.Kernels[0]; !rk.BanksExact || rk.Banks != k.Banks {
				t.Errorf("static report (exact %v): %+v, simulator: %+v", rk.BanksExact, rk.Banks, k.Banks)
			}
		})
	}
}
