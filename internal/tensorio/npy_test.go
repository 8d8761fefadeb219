package tensorio

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tec/te"
)

var (
	testDTypes = []te.DType{te.F32, te.F16, te.BF16, te.I32, te.Bool}
	testShapes = [][]int{{}, {1}, {7}, {2, 3, 4}, {2, 1, 3, 1, 2}, {0}, {3, 0, 2}}
)

// sample returns an array of the given type and shape whose values are exact
// in the type and, for floats, include -0, +Inf and NaN.
func sample(dt te.DType, shape []int) *te.Array {
	a := te.NewArray(dt, shape)
	for i := range a.Data {
		var v float64
		switch dt {
		case te.I32:
			v = float64(i*1000003 - 500000)
			switch i {
			case 1:
				v = math.MinInt32
			case 2:
				v = math.MaxInt32
			}
		case te.Bool:
			if i%3 == 0 {
				v = 1
			}
		default:
			v = float64(float32(float64(i)*0.37 - 3))
			switch i {
			case 1:
				v = math.Copysign(0, -1)
			case 2:
				v = math.Inf(1)
			case 3:
				v = math.NaN()
			}
		}
		a.Data[i] = te.Round(dt, v)
	}
	return a
}

// same reports whether x and y are the same value: equal with the same sign,
// or both NaN.
func same(x, y float64) bool {
	if math.IsNaN(x) || math.IsNaN(y) {
		return math.IsNaN(x) && math.IsNaN(y)
	}
	return x == y && math.Signbit(x) == math.Signbit(y)
}

// checkArray reports how got differs from want, read back as type dt.
func checkArray(t *testing.T, got, want *te.Array, dt te.DType) {
	t.Helper()
	if got.DType != dt || !te.SameShape(got.Shape, want.Shape) || len(got.Data) != len(want.Data) {
		t.Fatalf("got %s%v with %d elements, want %s%v with %d", got.DType, got.Shape, len(got.Data), dt, want.Shape, len(want.Data))
	}
	for i := range want.Data {
		if !same(got.Data[i], want.Data[i]) {
			t.Fatalf("element %d: got %v, want %v", i, got.Data[i], want.Data[i])
		}
	}
}

// readType returns the type an array of type dt is read back as.
func readType(dt te.DType) te.DType {
	if dt == te.BF16 {
		return te.F32
	}
	return dt
}

func TestRoundTrip(t *testing.T) {
	for _, dt := range testDTypes {
		for _, shape := range testShapes {
			a := sample(dt, shape)
			t.Run(dt.String()+fmt.Sprint(shape), func(t *testing.T) {
				var buf bytes.Buffer
				if err := WriteNPY(&buf, a); err != nil {
					t.Fatal(err)
				}
				if data := buf.Len() - len(a.Data)*readType(dt).Size(); data%64 != 0 {
					t.Errorf("data starts at offset %d, want a multiple of 64", data)
				}
				got, err := ReadNPY(&buf)
				if err != nil {
					t.Fatal(err)
				}
				checkArray(t, got, a, readType(dt))
				if buf.Len() != 0 {
					t.Errorf("%d bytes left unread", buf.Len())
				}
			})
		}
	}
}

// Files written by numpy.save (NumPy 1.24).
func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		a    *te.Array
		hex  string
	}{
		{"f32 2x3", &te.Array{DType: te.F32, Shape: []int{2, 3}, Data: []float64{-1, -0.5, 0, 0.5, 1, 1.5}},
			"934e554d5059010076007b276465736372273a20273c6634272c2027666f7274" +
				"72616e5f6f72646572273a2046616c73652c20277368617065273a2028322c20" +
				"33292c207d202020202020202020202020202020202020202020202020202020" +
				"202020202020202020202020202020202020202020202020202020202020200a" +
				"000080bf000000bf000000000000003f0000803f0000c03f"},
		{"i32 scalar", &te.Array{DType: te.I32, Shape: []int{}, Data: []float64{7}},
			"934e554d5059010076007b276465736372273a20273c6934272c2027666f7274" +
				"72616e5f6f72646572273a2046616c73652c20277368617065273a2028292c20" +
				"7d20202020202020202020202020202020202020202020202020202020202020" +
				"202020202020202020202020202020202020202020202020202020202020200a" +
				"07000000"},
		{"bool 3", &te.Array{DType: te.Bool, Shape: []int{3}, Data: []float64{1, 0, 1}},
			"934e554d5059010076007b276465736372273a20277c6231272c2027666f7274" +
				"72616e5f6f72646572273a2046616c73652c20277368617065273a2028332c29" +
				"2c207d2020202020202020202020202020202020202020202020202020202020" +
				"202020202020202020202020202020202020202020202020202020202020200a" +
				"010001"},
		{"f16 3", &te.Array{DType: te.F16, Shape: []int{3}, Data: []float64{1, -2.5, 65504}},
			"934e554d5059010076007b276465736372273a20273c6632272c2027666f7274" +
				"72616e5f6f72646572273a2046616c73652c20277368617065273a2028332c29" +
				"2c207d2020202020202020202020202020202020202020202020202020202020" +
				"202020202020202020202020202020202020202020202020202020202020200a" +
				"003c00c1ff7b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := hex.DecodeString(tt.hex)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := WriteNPY(&buf, tt.a); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("WriteNPY wrote\n%q\nwant\n%q", buf.Bytes(), want)
			}
			got, err := ReadNPY(bytes.NewReader(want))
			if err != nil {
				t.Fatal(err)
			}
			checkArray(t, got, tt.a, tt.a.DType)
		})
	}
}

// npyFile returns a .npy file with the given format version, header
// dictionary and data, padded as NumPy pads it.
func npyFile(major byte, dict string, data []byte) []byte {
	lenSize := 2
	if major >= 2 {
		lenSize = 4
	}
	hlen := len(dict) + 1
	hlen += 64 - (8+lenSize+hlen)%64
	b := append([]byte(magic), major, 0)
	if major >= 2 {
		b = binary.LittleEndian.AppendUint32(b, uint32(hlen))
	} else {
		b = binary.LittleEndian.AppendUint16(b, uint16(hlen))
	}
	b = append(b, dict...)
	b = append(b, bytes.Repeat([]byte{' '}, hlen-len(dict)-1)...)
	b = append(b, '\n')
	return append(b, data...)
}

func le32(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func le64(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

// Files that other writers than our own may produce.
func TestReadVariants(t *testing.T) {
	f64 := func(v float64) uint64 { return math.Float64bits(v) }
	tests := []struct {
		name string
		file []byte
		want *te.Array
	}{
		{"version 2.0", npyFile(2, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", le32(1, 2)),
			&te.Array{DType: te.I32, Shape: []int{2}, Data: []float64{1, 2}}},
		{"version 3.0", npyFile(3, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", le32(1, 2)),
			&te.Array{DType: te.I32, Shape: []int{2}, Data: []float64{1, 2}}},
		{"keys in any order", npyFile(1, `{"shape": (1, 2), "descr": "<i4", "fortran_order": False}`, le32(3, 4)),
			&te.Array{DType: te.I32, Shape: []int{1, 2}, Data: []float64{3, 4}}},
		{"python 2 longs", npyFile(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (1L, 2L), }", le32(3, 4)),
			&te.Array{DType: te.I32, Shape: []int{1, 2}, Data: []float64{3, 4}}},
		{"f8 rounds to f32", npyFile(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", le64(f64(0.1), f64(1e300), f64(-2))),
			&te.Array{DType: te.F32, Shape: []int{3}, Data: []float64{float64(float32(0.1)), math.Inf(1), -2}}},
		{"i8 to i32", npyFile(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", le64(uint64(math.MaxInt32), 1<<64-1)),
			&te.Array{DType: te.I32, Shape: []int{2}, Data: []float64{math.MaxInt32, -1}}},
		{"bool bytes", npyFile(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", []byte{0, 1, 7}),
			&te.Array{DType: te.Bool, Shape: []int{3}, Data: []float64{0, 1, 1}}},
		{"fortran order of a vector", npyFile(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (1, 2, 1), }", le32(5, 6)),
			&te.Array{DType: te.I32, Shape: []int{1, 2, 1}, Data: []float64{5, 6}}},
		{"fortran order, zero size", npyFile(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 0, 3), }", nil),
			&te.Array{DType: te.I32, Shape: []int{2, 0, 3}, Data: []float64{}}},
		{"zero size, huge dimensions", npyFile(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904, 0), }", nil),
			&te.Array{DType: te.I32, Shape: []int{1 << 62, 1 << 62, 0}, Data: []float64{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadNPY(bytes.NewReader(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			checkArray(t, got, tt.want, tt.want.DType)
		})
	}
}

func TestReadErrors(t *testing.T) {
	valid := npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", le32(1, 2, 3, 4))
	v2 := func(n uint32) []byte {
		return binary.LittleEndian.AppendUint32([]byte(magic+"\x02\x00"), n)
	}
	hdr := func(dict string) []byte { return npyFile(1, dict, make([]byte, 64)) }
	tests := []struct {
		name string
		file []byte
		want string // the error message, or a part of it
	}{
		{"empty", nil, "tensorio: truncated header: unexpected EOF"},
		{"bad magic", []byte("PK\x03\x04 this is a zip file"), `tensorio: not a .npy file: bad magic "PK\x03\x04 t"`},
		{"truncated magic", valid[:4], "truncated header"},
		{"truncated length", valid[:9], "truncated header"},
		{"truncated header", valid[:40], "truncated header"},
		{"version 4.0", []byte(magic + "\x04\x00\x10\x00\x00\x00"), "unsupported format version 4.0"},
		{"huge header length", v2(0xffffffff), "header length 4294967295 exceeds the limit"},
		{"truncated data", valid[:len(valid)-1], "tensorio: truncated data: got 15 of 16 bytes: unexpected EOF"},
		{"no data", valid[:len(valid)-16], "truncated data: got 0 of 16 bytes"},
		{"huge shape", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }"),
			"shape [1099511627776] has more than 1073741824 elements"},
		{"shape beyond the data", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (1073741824,), }"),
			"truncated data: got 64 of 4294967296 bytes"},
		{"overflowing shape", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }"),
			"shape [4294967296, 4294967296] has more than 1073741824 elements"},
		{"overflowing bytes", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }"),
			"shape [4611686018427387904] has more than 1073741824 elements"},
		{"shape beyond int64", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
			"bad integer"},
		{"negative shape", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"),
			"want a tuple of non-negative integers"},
		{"shape not a tuple", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': [2], }"),
			"'shape' is [2], want a tuple of integers"},
		{"shape of strings", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': ('a',), }"),
			"want a tuple of non-negative integers"},
		{"missing key", hdr("{'descr': '<f4', 'shape': (2,), }"), "missing key 'fortran_order'"},
		{"extra key", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}"), "unexpected key 'x'"},
		{"duplicate key", hdr("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}"), "duplicate key 'descr'"},
		{"not a dict", hdr("(1, 2)"), "not a dictionary"},
		{"garbage", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x"), `unexpected "x" after the dictionary`},
		{"unterminated", hdr("{'descr': '<f4"), "unterminated string"},
		{"fortran_order not bool", hdr("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}"), "'fortran_order' is 0, want True or False"},
		{"deep nesting", hdr("{'descr': " + strings.Repeat("[", 100) + "}"), "too deeply nested"},
		{"unsupported dtype", hdr("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }"),
			"tensorio: unsupported dtype '<c8' (want f4, f2, i4, b1, f8 or i8)"},
		{"u1", hdr("{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }"), "unsupported dtype '|u1'"},
		{"structured dtype", hdr("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }"),
			"unsupported dtype '[('a', '<f4')]'"},
		{"big-endian", hdr("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }"),
			`tensorio: big-endian dtype '>f4' is not supported (header "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }")`},
		{"fortran order", hdr("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }"),
			`tensorio: data in Fortran order is not supported (header "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }")`},
		{"i8 out of range", npyFile(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", le64(1, 1<<31)),
			"tensorio: element 1: int64 value 2147483648 does not fit in i32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ReadNPY(bytes.NewReader(tt.file))
			if err == nil {
				t.Fatalf("got %v, want error %q", a, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %q, want %q", err, tt.want)
			}
		})
	}
}

func TestReadErrorNamesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.npy")
	if err := os.WriteFile(path, npyFile(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", make([]byte, 8)), 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := ReadNPYFile(path, nil)
	want := "tensorio: " + path + ": unsupported dtype '<c8' (want f4, f2, i4, b1, f8 or i8)"
	if err == nil || err.Error() != want {
		t.Errorf("got error %v, want %q", err, want)
	}
	_, err = ReadNPYFile(filepath.Join(t.TempDir(), "missing.npy"), nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("got error %v, want one that is os.ErrNotExist", err)
	}
}

func TestWriteErrors(t *testing.T) {
	tests := []struct {
		name string
		a    *te.Array
		want string
	}{
		{"nil", nil, "tensorio: nil array"},
		{"short data", &te.Array{DType: te.F32, Shape: []int{2, 2}, Data: []float64{1}},
			"tensorio: shape [2, 2] has 4 elements but the data has 1"},
		{"negative dimension", &te.Array{DType: te.F32, Shape: []int{-1}}, "negative dimension"},
		{"bad dtype", &te.Array{DType: te.DType(99), Shape: []int{}, Data: []float64{0}}, "unsupported dtype dtype(99)"},
		{"i32 fraction", &te.Array{DType: te.I32, Shape: []int{2}, Data: []float64{1, 1.5}},
			"tensorio: i32 value 1.5 at index 1 is not an int32"},
		{"i32 range", &te.Array{DType: te.I32, Shape: []int{1}, Data: []float64{1 << 31}}, "is not an int32"},
		{"i32 NaN", &te.Array{DType: te.I32, Shape: []int{1}, Data: []float64{math.NaN()}}, "is not an int32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := WriteNPY(io.Discard, tt.a)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	a := sample(te.F16, []int{2, 3, 4})
	path := filepath.Join(dir, "a.npy")
	if err := WriteNPYFile(path, a); err != nil {
		t.Fatal(err)
	}
	got, err := ReadNPYFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkArray(t, got, a, te.F16)

	bad := filepath.Join(dir, "bad.npy")
	if err := WriteNPYFile(bad, &te.Array{DType: te.I32, Shape: []int{1}, Data: []float64{0.5}}); err == nil {
		t.Error("WriteNPYFile wrote an i32 0.5")
	}
	if _, err := os.Stat(bad); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WriteNPYFile left %s behind after an error: %v", bad, err)
	}
}

func TestNPZ(t *testing.T) {
	dir := t.TempDir()
	arrays := map[string]*te.Array{}
	for _, dt := range testDTypes {
		for i, shape := range testShapes {
			arrays[dt.String()+"_"+strconv.Itoa(i)] = sample(dt, shape)
		}
	}
	path := filepath.Join(dir, "a.npz")
	if err := WriteNPZ(path, arrays); err != nil {
		t.Fatal(err)
	}
	got, err := ReadNPZ(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(arrays) {
		t.Errorf("got %d arrays, want %d", len(got), len(arrays))
	}
	for name, a := range arrays {
		g, ok := got[name]
		if !ok {
			t.Errorf("array %s missing", name)
			continue
		}
		checkArray(t, g, a, readType(a.DType))
	}

	// Entries are name.npy in sorted order, and the file is deterministic.
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	prev := ""
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, ".npy") || f.Name <= prev {
			t.Errorf("entry %q after %q", f.Name, prev)
		}
		prev = f.Name
	}
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	path2 := filepath.Join(dir, "b.npz")
	if err := WriteNPZ(path2, arrays); err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(path2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Error("WriteNPZ is not deterministic")
	}
}

func TestNPZErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.npz")
	err := WriteNPZ(path, map[string]*te.Array{"w": {DType: te.F32, Shape: []int{2}, Data: []float64{1}}})
	want := "tensorio: " + path + ": w: shape [2] has 2 elements but the data has 1"
	if err == nil || err.Error() != want {
		t.Errorf("got error %v, want %q", err, want)
	}
	if err := WriteNPZ(path, map[string]*te.Array{"": te.NewArray(te.F32, nil)}); err == nil {
		t.Error("WriteNPZ accepted an empty name")
	}

	// A .npz whose entry is not a valid .npy file.
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("x.npy")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(npyFile(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", make([]byte, 4)))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}
	_, err = ReadNPZ(path)
	want = "tensorio: " + path + ": x.npy: big-endian dtype '>f4' is not supported"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got error %v, want %q...", err, want)
	}

	if err := os.WriteFile(path, []byte("not a zip file"), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadNPZ(path); err == nil || !strings.HasPrefix(err.Error(), "tensorio: "+path+": ") {
		t.Errorf("got error %v, want one naming %s", err, path)
	}
}
