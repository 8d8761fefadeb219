// Package tensorio reads and writes tensors as NumPy .npy and .npz files.
//
// Element types map to NumPy dtypes as follows:
//
//	f32   <f4 (float32)
//	f16   <f2 (float16)
//	i32   <i4 (int32)
//	bool  |b1 (bool)
//	bf16  <f4 (float32): NumPy has no bfloat16, so bf16 arrays are written
//	      as float32, exactly, and read back as f32
//
// Readers also accept <f8 (float64), rounded to f32, and <i8 (int64),
// converted to i32 with an error for a value out of range. Data must be
// little-endian and in C (row-major) order; Fortran order is accepted only
// where it coincides with C order (at most one dimension larger than 1).
// Header format versions 1.0, 2.0 and 3.0 are read; writers produce what
// numpy.save produces, byte for byte: version 1.0 (2.0 for headers too long
// for it) with the data aligned to 64 bytes.
//
// Arrays may have any rank, including 0-d scalars, and zero-size dimensions,
// and at most te.MaxElements elements. A reader never allocates much more
// memory than the data it has actually read, whatever shape a corrupt header
// declares. Callers that know what they expect say so with a Spec
// (ReadNPYAs, ReadNPYFile, ReadNPZAs): the header is checked against it
// before any data is read or decompressed, and no more than the declared
// data is read. Each entry of a .npz archive holds exactly one array and
// must match the CRC-32 its archive records, as NumPy requires: a corrupt
// entry is an error naming the file, the entry and both CRCs.
//
// Writers never remove a path they were given: files are written to a
// temporary file beside the target and renamed into place, devices are
// written through (see package safefile).
package tensorio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"tec/internal/safefile"
	"tec/te"
)

// chunk is the size of the buffer through which data is read and written.
const chunk = 64 << 10

// format describes how one NumPy dtype is stored.
type format struct {
	size  int      // bytes per element
	dtype te.DType // the array type it is read as
	// decode returns the element at the start of b; it fails only for
	// values the dtype cannot hold.
	decode func(b []byte) (float64, error)
}

// formatOf returns the format of a NumPy dtype descriptor, and false if the
// descriptor is not supported. The switch keeps the package free of mutable
// tables.
func formatOf(descr string) (format, bool) {
	le := binary.LittleEndian
	switch descr {
	case "<f4":
		return format{4, te.F32, func(b []byte) (float64, error) {
			return float64(math.Float32frombits(le.Uint32(b))), nil
		}}, true
	case "<f2":
		return format{2, te.F16, func(b []byte) (float64, error) {
			return float64(te.Float16ToFloat32(le.Uint16(b))), nil
		}}, true
	case "<i4":
		return format{4, te.I32, func(b []byte) (float64, error) {
			return float64(int32(le.Uint32(b))), nil
		}}, true
	case "|b1":
		return format{1, te.Bool, func(b []byte) (float64, error) {
			if b[0] != 0 {
				return 1, nil
			}
			return 0, nil
		}}, true
	case "<f8":
		return format{8, te.F32, func(b []byte) (float64, error) {
			return float64(float32(math.Float64frombits(le.Uint64(b)))), nil
		}}, true
	case "<i8":
		return format{8, te.I32, func(b []byte) (float64, error) {
			v := int64(le.Uint64(b))
			if v < math.MinInt32 || v > math.MaxInt32 {
				return 0, fmt.Errorf("int64 value %d does not fit in i32", v)
			}
			return float64(v), nil
		}}, true
	}
	return format{}, false
}

// descrOf returns the NumPy dtype descriptor an array of type dt is written as.
func descrOf(dt te.DType) (string, error) {
	switch dt {
	case te.F32, te.BF16:
		return "<f4", nil
	case te.F16:
		return "<f2", nil
	case te.I32:
		return "<i4", nil
	case te.Bool:
		return "|b1", nil
	}
	return "", fmt.Errorf("unsupported dtype %s", dt)
}

// wrap prefixes err with the package name and, if known, the file name.
func wrap(name string, err error) error {
	if name == "" {
		return fmt.Errorf("tensorio: %w", err)
	}
	return fmt.Errorf("tensorio: %s: %w", name, err)
}

// Spec is what a caller expects of an array: the dtype and shape of the
// tensor it binds the array to. A reader given a Spec compares the array's
// header with it before it reads any data, and then reads no more than the
// Spec's size, so that a file declaring a huge array, or a compressed entry
// that inflates to one, costs no more than its header. Float data of any
// float dtype (<f4, <f2, <f8) meets a float Spec, and is read as the file's
// type for the caller to convert; integer data (<i4, <i8) meets an i32
// Spec, bool data a bool Spec.
type Spec struct {
	DType te.DType
	Shape []int
}

// String formats s as in the language, e.g. "f32[4, 8]".
func (s Spec) String() string {
	return (&te.Tensor{DType: s.DType, Shape: s.Shape}).TypeString()
}

// check reports a header that does not meet s.
func (s Spec) check(h *header, f format) error {
	compatible := f.dtype == s.DType || f.dtype.IsFloat() && s.DType.IsFloat()
	if !compatible || !te.SameShape(h.shape, s.Shape) {
		return fmt.Errorf("the header declares %s%s, want %s (nothing was read)", numpyName(h.descr), shapeList(h.shape), s)
	}
	return nil
}

// numpyName returns NumPy's name for a supported dtype descriptor, such as
// "int64" for "<i8", so that messages name the file's type, not the one it
// would be read as.
func numpyName(descr string) string {
	switch descr {
	case "<f4":
		return "float32"
	case "<f2":
		return "float16"
	case "<f8":
		return "float64"
	case "<i4":
		return "int32"
	case "<i8":
		return "int64"
	case "|b1":
		return "bool"
	}
	return descr
}

// shapeList formats a shape as every message of tec does: [2, 3], [4], [].
func shapeList(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// ReadNPY reads one array in .npy format from r. It reads exactly the
// header and the data, so several arrays can follow one another in r. The
// array may have at most te.MaxElements elements; use ReadNPYAs where the
// caller knows what to expect.
func ReadNPY(r io.Reader) (*te.Array, error) {
	return ReadNPYAs(r, nil)
}

// ReadNPYAs is ReadNPY checking the header against want, if not nil,
// before reading any data (see Spec).
func ReadNPYAs(r io.Reader, want *Spec) (*te.Array, error) {
	a, err := readNPY(r, want)
	if err != nil {
		return nil, wrap("", err)
	}
	return a, nil
}

// ReadNPYFile reads the .npy file at path; want, if not nil, is what the
// caller expects of it (see Spec).
func ReadNPYFile(path string, want *Spec) (*te.Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, wrap("", err)
	}
	defer f.Close()
	a, err := readNPY(bufio.NewReaderSize(f, chunk), want)
	if err != nil {
		return nil, wrap(path, err)
	}
	return a, nil
}

func readNPY(r io.Reader, want *Spec) (*te.Array, error) {
	h, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	f, ok := formatOf(h.descr)
	if !ok {
		if len(h.descr) > 1 && h.descr[0] == '>' {
			if _, ok := formatOf("<" + h.descr[1:]); ok {
				return nil, fmt.Errorf("big-endian dtype '%s' is not supported (header %q)", h.descr, h.text)
			}
		}
		return nil, fmt.Errorf("unsupported dtype '%s' (want f4, f2, i4, b1, f8 or i8)", h.descr)
	}
	if want != nil {
		if err := want.check(h, f); err != nil {
			return nil, err
		}
	}
	if h.fortran && !sameOrder(h.shape) {
		return nil, fmt.Errorf("data in Fortran order is not supported (header %q)", h.text)
	}
	n, err := numElems(h.shape)
	if err != nil {
		return nil, err
	}

	// Read exactly the data the header declares, a chunk at a time, so that
	// a shape that a truncated or corrupt file does not back costs no more
	// than the data present.
	r = io.LimitReader(r, int64(n)*int64(f.size))
	data := make([]float64, 0, min(n, chunk))
	buf := make([]byte, min(n*f.size, chunk/f.size*f.size))
	for len(data) < n {
		k := min(n-len(data), len(buf)/f.size)
		b := buf[:k*f.size]
		if m, err := io.ReadFull(r, b); err != nil {
			got := len(data)*f.size + m
			return nil, fmt.Errorf("truncated data: got %d of %d bytes: %w", got, n*f.size, noEOF(err))
		}
		for i := 0; i < k; i++ {
			v, err := f.decode(b[i*f.size:])
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", len(data), err)
			}
			data = append(data, v)
		}
	}
	return &te.Array{DType: f.dtype, Shape: h.shape, Data: data}, nil
}

// sameOrder reports whether C and Fortran order lay out an array of the given
// shape identically.
func sameOrder(shape []int) bool {
	big := 0
	for _, d := range shape {
		if d == 0 {
			return true
		}
		if d > 1 {
			big++
		}
	}
	return big <= 1
}

// numElems returns the number of elements of shape, or an error if a
// dimension is negative or the count exceeds te.MaxElements.
func numElems(shape []int) (int, error) {
	return te.CheckShape(shape)
}

// WriteNPY writes a to w in .npy format, as numpy.save would. A bf16 array is
// written as float32 (see the package documentation). An i32 array must hold
// integers in the range of int32.
func WriteNPY(w io.Writer, a *te.Array) error {
	if err := writeNPY(w, a); err != nil {
		return wrap("", err)
	}
	return nil
}

// WriteNPYFile writes a to the file at path in .npy format, creating or
// replacing it as package safefile does: on error, whatever was at path is
// left as it was, and path is never removed.
func WriteNPYFile(path string, a *te.Array) error {
	if err := safefile.Write(path, 0o666, func(w io.Writer) error { return writeNPY(w, a) }); err != nil {
		return wrap(path, err)
	}
	return nil
}

func writeNPY(w io.Writer, a *te.Array) error {
	if a == nil {
		return errors.New("nil array")
	}
	descr, err := descrOf(a.DType)
	if err != nil {
		return err
	}
	n, err := numElems(a.Shape)
	if err != nil {
		return err
	}
	if n != len(a.Data) {
		return fmt.Errorf("shape %s has %d elements but the data has %d", shapeList(a.Shape), n, len(a.Data))
	}
	if _, err := w.Write(formatHeader(descr, a.Shape)); err != nil {
		return err
	}
	le := binary.LittleEndian
	buf := make([]byte, 0, min(n*a.DType.Size(), chunk))
	for i, v := range a.Data {
		switch a.DType {
		case te.F32, te.BF16:
			buf = le.AppendUint32(buf, math.Float32bits(float32(v)))
		case te.F16:
			buf = le.AppendUint16(buf, te.Float32ToFloat16(float32(v)))
		case te.I32:
			if v != math.Trunc(v) || v < math.MinInt32 || v > math.MaxInt32 {
				return fmt.Errorf("i32 value %v at index %d is not an int32", v, i)
			}
			buf = le.AppendUint32(buf, uint32(int32(v)))
		case te.Bool:
			b := byte(0)
			if v != 0 {
				b = 1
			}
			buf = append(buf, b)
		}
		if len(buf)+4 > cap(buf) || i == len(a.Data)-1 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return nil
}
