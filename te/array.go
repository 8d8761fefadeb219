package te

import (
	"fmt"
	"math"
	"strconv"
)

// Array is a dense tensor value in row-major (C) order. Elements are held as
// float64 whatever the dtype; values of f16, bf16, i32 and bool arrays are
// always exactly representable in their dtype (see Round).
type Array struct {
	DType DType
	Shape []int
	Data  []float64
}

// MaxElements is the most elements a tensor may have: 2^30. The emitted
// kernels index tensors with 32-bit signed ints, and a grid-stride loop
// steps an index i < n by at most n rounded up to a block; with n <= 2^30
// the step cannot overflow an int, and every element stays addressable.
// The front end rejects larger shapes where they are declared or
// inferred, and every allocation in te and the simulator checks again
// (CheckShape), so that no caller is trusted with the arithmetic.
const MaxElements = 1 << 30

// CheckShape returns the number of elements of shape, or an error if a
// dimension is negative or the count exceeds MaxElements. The product is
// computed without overflow whatever the dimensions.
func CheckShape(shape []int) (int, error) {
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("shape %s has a negative dimension", shapeList(shape))
		}
		if d == 0 {
			return 0, nil
		}
	}
	n := 1
	for _, d := range shape {
		if d > MaxElements/n {
			return 0, fmt.Errorf("shape %s has more than %d elements (2^30), the most a tensor may have", shapeList(shape), MaxElements)
		}
		n *= d
	}
	return n, nil
}

// NewArray returns a zero-filled array of the given type and shape. The
// shape must pass CheckShape; NewArray panics otherwise, as make does.
func NewArray(dt DType, shape []int) *Array {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return &Array{DType: dt, Shape: append([]int(nil), shape...), Data: make([]float64, n)}
}

// Len returns the number of elements.
func (a *Array) Len() int { return len(a.Data) }

// Strides returns the row-major element strides of the array's shape.
func (a *Array) Strides() []int { return Strides(a.Shape) }

// Strides returns the row-major element strides of shape.
func Strides(shape []int) []int {
	s := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = n
		n *= shape[i]
	}
	return s
}

// SameShape reports whether a and b have the same dimensions.
func SameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// CheckType returns an error unless a has dtype dt and the given shape.
func (a *Array) CheckType(dt DType, shape []int) error {
	if a.DType != dt || !SameShape(a.Shape, shape) {
		return fmt.Errorf("got %s%s, want %s%s", a.DType, shapeList(a.Shape), dt, shapeList(shape))
	}
	return nil
}

// Round returns v rounded to the precision of storage type dt: to the nearest
// f16 or bf16 value (ties to even); for i32 towards zero, saturated to the
// i32 range (±inf to its ends) and NaN as 0, as PTX's cvt.rzi.s32.f32; to 0
// or 1 for bool, NaN counting as non-zero.
// For f32 it returns v unchanged: the reference evaluator keeps f32 tensors in
// float64 so that it is more accurate than any device it checks.
func Round(dt DType, v float64) float64 {
	switch dt {
	case F16:
		return roundBinary(v, 10, -14, 65504)
	case BF16:
		return roundBinary(v, 7, -126, 0x1.fep127)
	case I32:
		if math.IsNaN(v) {
			return 0
		}
		return math.Trunc(math.Max(math.MinInt32, math.Min(math.MaxInt32, v)))
	case Bool:
		if v != 0 {
			return 1
		}
		return 0
	}
	return v
}

// maxTF32 is the largest finite TF32 value, (2 - 2^-10)·2^127.
const maxTF32 = 0x1.ffcp127

// RoundTF32Value returns v rounded to TF32 precision (10 fraction bits and
// f32's exponent range, subnormals included) to nearest, ties away from
// zero: the rounding of PTX's cvt.rna.tf32.f32, which on an f32 operand is
// adding half a unit in the last place to the bits and clearing the 13 low
// fraction bits. Magnitudes that round beyond the largest finite value
// become infinite, as the carry into the exponent makes them there.
func RoundTF32Value(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	_, e := math.Frexp(v)
	q := math.Ldexp(1, max(e-1, -126)-10)
	r := math.Round(v/q) * q // math.Round: half away from zero
	if math.Abs(r) > maxTF32 {
		return math.Copysign(math.Inf(1), v)
	}
	return r
}

// roundBinary rounds v to the nearest value (ties to even) of a binary
// floating-point format with mbits fraction bits and least normal exponent
// emin; magnitudes that round beyond maxFinite become infinite. It rounds once,
// straight from float64: going through float32 first would round twice.
func roundBinary(v float64, mbits, emin int, maxFinite float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	_, e := math.Frexp(v) // |v| = f·2^e with f in [0.5, 1)
	q := math.Ldexp(1, max(e-1, emin)-mbits)
	r := math.RoundToEven(v/q) * q // both steps exact: q is a power of two
	if math.Abs(r) > maxFinite {
		return math.Copysign(math.Inf(1), v)
	}
	return r
}

// Float32ToFloat16 converts f to IEEE 754 binary16 bits, rounding to nearest
// even; values beyond the range become ±Inf.
func Float32ToFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b >> 23) & 0xff)
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp-127 > 15:
		return sign | 0x7c00
	case exp-127 >= -14: // normal half
		e := uint32(exp - 127 + 15)
		m := mant >> 13
		rest := mant & 0x1fff
		h := uint32(e<<10) | m
		if rest > 0x1000 || (rest == 0x1000 && m&1 == 1) {
			h++ // may carry into the exponent, which is the right answer
		}
		return sign | uint16(h)
	case exp-127 >= -25: // subnormal half
		full := mant | 0x800000
		shift := uint32(-14-(exp-127)) + 13
		m := full >> shift
		rest := full & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || (rest == half && m&1 == 1) {
			m++
		}
		return sign | uint16(m)
	}
	return sign
}

// Float16ToFloat32 converts IEEE 754 binary16 bits to float32 exactly.
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		v := float32(mant) / 1024 / 16384 // mant · 2^-24
		if sign != 0 {
			return -v
		}
		return v
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// Float32ToBFloat16 converts f to bfloat16 bits, rounding to nearest even.
func Float32ToBFloat16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BFloat16ToFloat32 converts bfloat16 bits to float32 exactly.
func BFloat16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// shapeList formats a shape as messages do, like the language: [2, 10].
func shapeList(shape []int) string {
	b := []byte{'['}
	for i, d := range shape {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(d), 10)
	}
	return string(append(b, ']'))
}
