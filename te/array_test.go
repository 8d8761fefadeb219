package te

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
)

// refHalf decodes binary16 bits the long way: (-1)^s · 2^(e-15) · 1.m, or
// 2^-14 · 0.m for subnormals.
func refHalf(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10&0x1f), float64(h&0x3ff)
	switch e {
	case 0x1f:
		if m != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	case 0:
		return sign * math.Ldexp(m/1024, -14)
	}
	return sign * math.Ldexp(1+m/1024, e-15)
}

// refRound rounds v to a binary floating-point format with mbits fraction
// bits and least normal exponent emin, to nearest even; magnitudes that round
// to maxFinite·(1 + 2^-(mbits+1)) or beyond become infinite.
func refRound(v float64, mbits, emin int, maxFinite float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	_, e := math.Frexp(math.Abs(v)) // |v| = f·2^e, f in [0.5, 1)
	e = max(e-1, emin)
	quantum := math.Ldexp(1, e-mbits)
	r := math.RoundToEven(v/quantum) * quantum // exact: v/quantum scales by a power of 2
	if math.Abs(r) > maxFinite {
		return math.Copysign(math.Inf(1), v)
	}
	return r
}

func TestFloat16Exhaustive(t *testing.T) {
	for b := range 1 << 16 {
		h := uint16(b)
		f := Float16ToFloat32(h)
		want := refHalf(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("%#04x decodes to %v, want NaN", h, f)
			}
			if back := Float32ToFloat16(f); back&0x7c00 != 0x7c00 || back&0x3ff == 0 || back&0x8000 != h&0x8000 {
				t.Fatalf("NaN %#04x encodes back to %#04x", h, back)
			}
			continue
		}
		if float64(f) != want || math.Signbit(float64(f)) != math.Signbit(want) {
			t.Fatalf("%#04x decodes to %v, want %v", h, f, want)
		}
		if back := Float32ToFloat16(f); back != h {
			t.Fatalf("%#04x → %v → %#04x", h, f, back)
		}
	}
}

// TestFloat16Rounding checks rounding at every midpoint between adjacent
// half values, one float32 step either side of it, and at random values.
func TestFloat16Rounding(t *testing.T) {
	const maxHalf = 65504
	check := func(f float32) {
		t.Helper()
		got := float64(Float16ToFloat32(Float32ToFloat16(f)))
		want := refRound(float64(f), 10, -14, maxHalf)
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("f16(%v [%#08x]) = %v, want %v", f, math.Float32bits(f), got, want)
		}
	}
	for b := range 0x7c00 { // positive finite halves
		lo := float64(Float16ToFloat32(uint16(b)))
		hi := refHalf(uint16(b + 1)) // the next half, or +Inf after the largest
		if math.IsInf(hi, 1) {
			hi = maxHalf + 32 // the overflow threshold: half an ulp beyond the largest
		}
		mid := float32((lo + hi) / 2) // exact in float32
		for _, f := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9), float32(lo)} {
			check(f)
			check(-f)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		check(math.Float32frombits(rng.Uint32()))
	}
	for _, f := range []float32{1e-10, 2.9802322e-08, 2.9802326e-08, 65519.99, 65520, 1e6, float32(math.Inf(-1))} {
		check(f)
	}
}

func TestBFloat16(t *testing.T) {
	for b := range 1 << 16 {
		h := uint16(b)
		f := BFloat16ToFloat32(h)
		if math.IsNaN(float64(f)) {
			if back := Float32ToBFloat16(f); back&0x7f80 != 0x7f80 || back&0x7f == 0 {
				t.Fatalf("NaN %#04x encodes back to %#04x", h, back)
			}
			continue
		}
		if back := Float32ToBFloat16(f); back != h {
			t.Fatalf("%#04x → %v → %#04x", h, f, back)
		}
	}
	const maxBF = 3.3895313892515355e38 // (2 - 2^-7) · 2^127
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		f := math.Float32frombits(rng.Uint32())
		got := float64(BFloat16ToFloat32(Float32ToBFloat16(f)))
		want := refRound(float64(f), 7, -126, maxBF)
		if got != want && !(math.IsNaN(got) && math.IsNaN(float64(f))) {
			t.Fatalf("bf16(%v [%#08x]) = %v, want %v", f, math.Float32bits(f), got, want)
		}
	}
}

func TestRound(t *testing.T) {
	tests := []struct {
		dt      DType
		in, out float64
	}{
		{F32, 0.1, 0.1},
		{F16, 0.1, 0.0999755859375},
		{F16, 1e6, math.Inf(1)},
		{BF16, 1.00390625, 1}, // tie to even
		{BF16, 1.01171875, 1.015625},
		{I32, 2.7, 2},
		{I32, -2.7, -2},
		{I32, math.NaN(), 0},
		{I32, 1e12, math.MaxInt32},
		{Bool, -0.5, 1},
		{Bool, 0, 0},
	}
	for _, tt := range tests {
		if got := Round(tt.dt, tt.in); got != tt.out {
			t.Errorf("Round(%s, %v) = %v, want %v", tt.dt, tt.in, got, tt.out)
		}
	}
}

// TestRoundFloat64 checks that Round rounds float64 values once, to the
// nearest half (ties to even) found by searching every finite half.
func TestRoundFloat64(t *testing.T) {
	var halves []float64 // ascending non-negative finite halves
	for b := range 0x7c00 {
		halves = append(halves, refHalf(uint16(b)))
	}
	nearest := func(v float64) float64 {
		a := math.Abs(v)
		i := sort.SearchFloat64s(halves, a) // halves[i-1] < a <= halves[i]
		var r float64
		switch {
		case i == len(halves):
			if a >= 65520 {
				r = math.Inf(1)
			} else {
				r = 65504
			}
		case halves[i] == a || i == 0:
			r = halves[i]
		default:
			lo, hi := halves[i-1], halves[i]
			switch {
			case a-lo < hi-a:
				r = lo
			case a-lo > hi-a:
				r = hi
			case (i-1)%2 == 0: // the even significand
				r = lo
			default:
				r = hi
			}
		}
		return math.Copysign(r, v)
	}
	// 1 + 2^-11 + 2^-40 lies just above a tie; through float32 it would become
	// the tie and round down to 1.
	vals := []float64{1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-11, 65519.999, 65520, -0x1p-25, -0x1.0000001p-25}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 100000 {
		vals = append(vals, math.Ldexp(rng.Float64()*2-1, rng.IntN(44)-26))
	}
	for _, v := range vals {
		if got, want := Round(F16, v), nearest(v); got != want {
			t.Fatalf("Round(f16, %v) = %v, want %v", v, got, want)
		}
	}
	if got, want := Round(BF16, 1+0x1p-8+0x1p-40), 1+0x1p-7; got != want {
		t.Errorf("Round(bf16, 1 + 2^-8 + 2^-40) = %v, want %v", got, want)
	}
}

// TestShapeMessages checks that errors print shapes as the language writes
// them, [2, 10], never as Go's [2 10].
func TestShapeMessages(t *testing.T) {
	a := NewArray(F32, []int{2, 10})
	for _, err := range []error{
		a.CheckType(F32, []int{4, 8}),
		func() error { _, err := CheckShape([]int{2, -10}); return err }(),
		func() error { _, err := CheckShape([]int{1 << 20, 1 << 20}); return err }(),
	} {
		if err == nil || strings.Contains(err.Error(), "[2 10]") || strings.Contains(err.Error(), "[1048576 1048576]") ||
			!strings.Contains(err.Error(), ", ") {
			t.Errorf("error %v: want shapes written [2, 10]", err)
		}
	}
}
