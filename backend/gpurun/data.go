package gpurun

import (
	"encoding/binary"
	"fmt"
	"math"

	"tec/te"
)

// Encode returns a's elements as the device stores them: little-endian f32,
// IEEE binary16 for f16, bfloat16 bits for bf16, int32 for i32, one byte
// (0 or 1) for bool. b is the buffer that a is for: its dtype and shape must
// be a's.
func Encode(a *te.Array, b Buffer) ([]byte, error) {
	if err := fits(a.DType, a.Shape, b); err != nil {
		return nil, err
	}
	size := a.DType.Size()
	out := make([]byte, len(a.Data)*size)
	for i, v := range a.Data {
		at := out[i*size:]
		switch a.DType {
		case te.F32:
			binary.LittleEndian.PutUint32(at, math.Float32bits(float32(v)))
		case te.F16:
			binary.LittleEndian.PutUint16(at, te.Float32ToFloat16(float32(v)))
		case te.BF16:
			binary.LittleEndian.PutUint16(at, te.Float32ToBFloat16(float32(v)))
		case te.I32:
			binary.LittleEndian.PutUint32(at, uint32(int32(v)))
		case te.Bool:
			if v != 0 {
				at[0] = 1
			}
		}
	}
	return out, nil
}

// Decode returns the array that data, as the device stores it (see Encode),
// holds for buffer b.
func Decode(data []byte, b Buffer) (*te.Array, error) {
	dt, ok := te.ParseDType(b.DType)
	if !ok {
		return nil, fmt.Errorf("%s: unknown dtype %q", b.Name, b.DType)
	}
	if int64(len(data)) != b.Bytes {
		return nil, fmt.Errorf("%s %s: %d bytes, want %d", b.Name, b.Type(), len(data), b.Bytes)
	}
	a := te.NewArray(dt, append([]int{}, b.Shape...))
	size := dt.Size()
	for i := range a.Data {
		at := data[i*size:]
		switch dt {
		case te.F32:
			a.Data[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(at)))
		case te.F16:
			a.Data[i] = float64(te.Float16ToFloat32(binary.LittleEndian.Uint16(at)))
		case te.BF16:
			a.Data[i] = float64(te.BFloat16ToFloat32(binary.LittleEndian.Uint16(at)))
		case te.I32:
			a.Data[i] = float64(int32(binary.LittleEndian.Uint32(at)))
		case te.Bool:
			if at[0] != 0 {
				a.Data[i] = 1
			}
		}
	}
	return a, nil
}

// fits checks that an array of dtype dt and shape fits buffer b.
func fits(dt te.DType, shape []int, b Buffer) error {
	if dt.String() != b.DType || !te.SameShape(shape, b.Shape) {
		s := dt.String() + "["
		for i, d := range shape {
			if i > 0 {
				s += ", "
			}
			s += fmt.Sprint(d)
		}
		return fmt.Errorf("%s: got %s], want %s", b.Name, s, b.Type())
	}
	return nil
}
