package llvm

import (
	"math"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"tec/te"
)

// The helper functions below are internal functions of the emitted module,
// built on first use. NVPTX has no libm; these use its approximate
// instructions the way CUDA's fast-math intrinsics do.

func floatParams(names ...string) []*ir.Param {
	ps := make([]*ir.Param, len(names))
	for i, n := range names {
		ps[i] = ir.NewParam(n, types.Float)
	}
	return ps
}

func intParams(t types.Type, names ...string) []*ir.Param {
	ps := make([]*ir.Param, len(names))
	for i, n := range names {
		ps[i] = ir.NewParam(n, t)
	}
	return ps
}

func (g *gen) call1(b *ir.Block, name string, x value.Value) value.Value {
	return b.NewCall(g.intrinsic(name, types.Float, types.Float), x)
}

// expf returns tec_expf(x) = 2^(x·log2 e), as __expf does.
func (g *gen) expf() *ir.Func {
	return g.helper("tec_expf", types.Float, floatParams("x"), func(f *ir.Func) {
		b := f.NewBlock("")
		b.NewRet(g.call1(b, "llvm.nvvm.ex2.approx.f", b.NewFMul(f.Params[0], f32(math.Log2E))))
	})
}

// tanhf returns tec_tanhf(x): an odd Taylor polynomial for |x| < 0.125,
// where 1 - 2/(e^2x + 1) would cancel, and that formula elsewhere.
func (g *gen) tanhf() *ir.Func {
	return g.helper("tec_tanhf", types.Float, floatParams("x"), func(f *ir.Func) {
		b := f.NewBlock("")
		x := f.Params[0]
		x2 := b.NewFMul(x, x)
		// x - x³/3 + 2x⁵/15 - 17x⁷/315
		p := b.NewFAdd(f32(2.0/15), b.NewFMul(x2, f32(-17.0/315)))
		p2 := b.NewFAdd(f32(-1.0/3), b.NewFMul(x2, p))
		small := b.NewFAdd(x, b.NewFMul(b.NewFMul(x, x2), p2))
		e := b.NewCall(g.expf(), b.NewFMul(x, f32(2)))
		large := b.NewFSub(f32(1), b.NewFDiv(f32(2), b.NewFAdd(e, f32(1))))
		abs := g.call1(b, "llvm.fabs.f32", x)
		b.NewRet(b.NewSelect(b.NewFCmp(enum.FPredOLT, abs, f32(0.125)), small, large))
	})
}

// erff returns tec_erff(x): the Maclaurin series for |x| < 1, and
// 1 - erfc(|x|) with Numerical Recipes' erfc (relative error < 1.2e-7)
// beyond, with x's sign.
func (g *gen) erff() *ir.Func {
	return g.helper("tec_erff", types.Float, floatParams("x"), func(f *ir.Func) {
		b := f.NewBlock("")
		x := f.Params[0]
		// Series: 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1)), n = 0..11.
		x2 := b.NewFMul(x, x)
		var poly value.Value = f32(0)
		for n := 11; n >= 0; n-- {
			c := 2 / math.Sqrt(math.Pi) / (math.Gamma(float64(n+1)) * float64(2*n+1))
			if n%2 == 1 {
				c = -c
			}
			if n == 11 {
				poly = f32(c)
				continue
			}
			poly = b.NewFAdd(f32(c), b.NewFMul(x2, poly))
		}
		small := b.NewFMul(x, poly)
		z := g.call1(b, "llvm.fabs.f32", x)
		t := b.NewFDiv(f32(1), b.NewFAdd(f32(1), b.NewFMul(f32(0.5), z)))
		coef := []float64{-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
			0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277}
		var q value.Value = f32(coef[len(coef)-1])
		for i := len(coef) - 2; i >= 0; i-- {
			q = b.NewFAdd(f32(coef[i]), b.NewFMul(t, q))
		}
		arg := b.NewFSub(q, b.NewFMul(z, z))
		erfc := b.NewFMul(t, b.NewCall(g.expf(), arg))
		mag := b.NewFSub(f32(1), erfc)
		signed := b.NewSelect(b.NewFCmp(enum.FPredOLT, x, f32(0)), b.NewFNeg(mag), mag)
		b.NewRet(b.NewSelect(b.NewFCmp(enum.FPredOLT, z, f32(1)), small, signed))
	})
}

// powf returns tec_powf(x, y) = 2^(y·log2|x|), negated for a negative x
// and an odd integer y, NaN for a negative x and a non-integer y, and 1 for
// y = 0.
func (g *gen) powf() *ir.Func {
	return g.helper("tec_powf", types.Float, floatParams("x", "y"), func(f *ir.Func) {
		b := f.NewBlock("")
		x, y := f.Params[0], f.Params[1]
		lg := g.call1(b, "llvm.nvvm.lg2.approx.f", g.call1(b, "llvm.fabs.f32", x))
		mag := g.call1(b, "llvm.nvvm.ex2.approx.f", b.NewFMul(y, lg))
		isInt := b.NewFCmp(enum.FPredOEQ, g.call1(b, "llvm.floor.f32", y), y)
		half := b.NewFMul(y, f32(0.5))
		odd := b.NewAnd(isInt, b.NewFCmp(enum.FPredUNE, g.call1(b, "llvm.floor.f32", half), half))
		neg := b.NewFCmp(enum.FPredOLT, x, f32(0))
		negResult := b.NewSelect(isInt, b.NewSelect(odd, b.NewFNeg(mag), mag), f32(math.NaN()))
		r := b.NewSelect(neg, negResult, mag)
		b.NewRet(b.NewSelect(b.NewFCmp(enum.FPredOEQ, y, f32(0)), f32(1), r))
	})
}

// fmodf returns tec_fmodf(x, y) = x - y·floor(x/y), which has y's sign.
func (g *gen) fmodf() *ir.Func {
	return g.helper("tec_fmodf", types.Float, floatParams("x", "y"), func(f *ir.Func) {
		b := f.NewBlock("")
		x, y := f.Params[0], f.Params[1]
		q := g.call1(b, "llvm.floor.f32", b.NewFDiv(x, y))
		b.NewRet(b.NewFSub(x, b.NewFMul(y, q)))
	})
}

// floorDiv returns tec_floordiv(a, b): integer division rounding towards
// negative infinity.
func (g *gen) floorDiv(dt te.DType) *ir.Func {
	name, t := intHelper("tec_floordiv", dt)
	return g.helper(name, t, intParams(t, "a", "b"), func(f *ir.Func) {
		b := f.NewBlock("")
		x, y := f.Params[0], f.Params[1]
		zero, one := intConst(dt, 0), intConst(dt, 1)
		q, r := b.NewSDiv(x, y), b.NewSRem(x, y)
		fix := b.NewAnd(b.NewICmp(enum.IPredNE, r, zero),
			b.NewXor(b.NewICmp(enum.IPredSLT, r, zero), b.NewICmp(enum.IPredSLT, y, zero)))
		b.NewRet(b.NewSelect(fix, b.NewSub(q, one), q))
	})
}

// intHelper returns the name and LLVM type of the integer helper base for
// kir type dt: base itself on i32, base+"64" on i64 (kir's Widen).
func intHelper(base string, dt te.DType) (string, types.Type) {
	if dt == te.I64 {
		return base + "64", types.I64
	}
	return base, types.I32
}

// floorMod returns tec_floormod(a, b): integer modulo with b's sign.
func (g *gen) floorMod(dt te.DType) *ir.Func {
	name, t := intHelper("tec_floormod", dt)
	return g.helper(name, t, intParams(t, "a", "b"), func(f *ir.Func) {
		b := f.NewBlock("")
		x, y := f.Params[0], f.Params[1]
		zero := intConst(dt, 0)
		r := b.NewSRem(x, y)
		fix := b.NewAnd(b.NewICmp(enum.IPredNE, r, zero),
			b.NewXor(b.NewICmp(enum.IPredSLT, r, zero), b.NewICmp(enum.IPredSLT, y, zero)))
		b.NewRet(b.NewSelect(fix, b.NewAdd(r, y), r))
	})
}

// toBF16 returns tec_to_bf16(x): the bf16 bits nearest x (ties to even;
// NaN stays NaN).
func (g *gen) toBF16() *ir.Func {
	return g.helper("tec_to_bf16", types.I16, floatParams("x"), func(f *ir.Func) {
		b := f.NewBlock("")
		x := f.Params[0]
		bits := b.NewBitCast(x, types.I32)
		lsb := b.NewAnd(b.NewLShr(bits, i32(16)), i32(1))
		rounded := b.NewLShr(b.NewAdd(bits, b.NewAdd(lsb, i32(0x7fff))), i32(16))
		nan := b.NewFCmp(enum.FPredUNO, x, x)
		b.NewRet(b.NewSelect(nan, constant.NewInt(types.I16, 0x7fc0), b.NewTrunc(rounded, types.I16)))
	})
}

// roundTF32 returns tec_round_tf32(x): x rounded to TF32 precision (10
// fraction bits) to nearest, ties away from zero, as cvt.rna.tf32.f32
// rounds: half a unit in the last place added to the bits and the 13 low
// fraction bits cleared. Inf and NaN pass unchanged.
func (g *gen) roundTF32() *ir.Func {
	return g.helper("tec_round_tf32", types.Float, floatParams("x"), func(f *ir.Func) {
		b := f.NewBlock("")
		bits := b.NewBitCast(f.Params[0], types.I32)
		special := b.NewICmp(enum.IPredEQ, b.NewAnd(bits, i32(0x7f800000)), i32(0x7f800000))
		rounded := b.NewAnd(b.NewAdd(bits, i32(0x1000)), i32(-0x2000))
		b.NewRet(b.NewBitCast(b.NewSelect(special, bits, rounded), types.Float))
	})
}

// fromBF16 returns tec_from_bf16(h): the f32 value of bf16 bits h.
func (g *gen) fromBF16() *ir.Func {
	return g.helper("tec_from_bf16", types.Float, []*ir.Param{ir.NewParam("h", types.I16)}, func(f *ir.Func) {
		b := f.NewBlock("")
		wide := b.NewShl(b.NewZExt(f.Params[0], types.I32), i32(16))
		b.NewRet(b.NewBitCast(wide, types.Float))
	})
}

// sinf returns tec_sinf(x) and cosf tec_cosf(x); see sinCos.
func (g *gen) sinf() *ir.Func { return g.sinCos("tec_sinf", 0) }
func (g *gen) cosf() *ir.Func { return g.sinCos("tec_cosf", 1) }

// sinCos builds the sine (shift 0) or cosine (shift 1, as cos x is
// sin(x + π/2)) of an f32 value. The argument is reduced to r = x - k·π/2,
// |r| ≤ π/4, with π/2 split into three f32 parts subtracted by fused
// multiply-adds (Cody and Waite), which keeps r exact to a few units in the
// last place for |x| up to about 10⁵; sin r and cos r are Taylor
// polynomials to r¹³ and r¹⁴ (error below 10⁻¹¹ on [-π/4, π/4]), and the
// quadrant (k + shift) mod 4 picks ±sin r or ±cos r. The quadrant is
// computed in f32 (exact for every finite k), never by a conversion to an
// integer, so an infinite or huge x gives NaN or an inexact value rather
// than undefined behaviour.
func (g *gen) sinCos(name string, shift float64) *ir.Func {
	return g.helper(name, types.Float, floatParams("x"), func(f *ir.Func) {
		b := f.NewBlock("")
		x := f.Params[0]
		fma := func(a, m, c value.Value) value.Value {
			return b.NewCall(g.intrinsic("llvm.fma.f32", types.Float, types.Float, types.Float, types.Float), a, m, c)
		}
		k := g.call1(b, "llvm.rint.f32", b.NewFMul(x, f32(2/math.Pi)))
		c1 := float64(float32(math.Pi / 2))
		c2 := float64(float32(math.Pi/2 - c1))
		c3 := float64(float32(math.Pi/2 - c1 - c2))
		r := fma(k, f32(-c1), x)
		r = fma(k, f32(-c2), r)
		r = fma(k, f32(-c3), r)
		r2 := b.NewFMul(r, r)
		// sin r = r + r³ Σ (-1)^n r^2(n-1) / (2n+1)!, n = 1..6.
		var ps value.Value = f32(1 / math.Gamma(14))
		for n := 5; n >= 1; n-- {
			ps = fma(r2, ps, f32(math.Pow(-1, float64(n))/math.Gamma(float64(2*n+2))))
		}
		sin := fma(b.NewFMul(r, r2), ps, r)
		// cos r = 1 + r² Σ (-1)^n r^2(n-1) / (2n)!, n = 1..7.
		var pc value.Value = f32(-1 / math.Gamma(15))
		for n := 6; n >= 1; n-- {
			pc = fma(r2, pc, f32(math.Pow(-1, float64(n))/math.Gamma(float64(2*n+1))))
		}
		cos := fma(r2, pc, f32(1))
		// q = (k + shift) mod 4, exact in f32 for every k a finite x gives.
		ks := b.NewFAdd(k, f32(shift))
		q := b.NewFSub(ks, b.NewFMul(f32(4), g.call1(b, "llvm.floor.f32", b.NewFMul(ks, f32(0.25)))))
		odd := b.NewFCmp(enum.FPredOEQ, g.call1(b, "llvm.fabs.f32", b.NewFSub(q, f32(2))), f32(1)) // q is 1 or 3
		mag := b.NewSelect(odd, cos, sin)
		neg := b.NewFCmp(enum.FPredOGE, q, f32(2))
		b.NewRet(b.NewSelect(neg, b.NewFNeg(mag), mag))
	})
}
