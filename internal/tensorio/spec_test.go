package tensorio

import (
	"archive/zip"
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tec/te"
)

// TestReadAsChecksTheHeaderFirst: a header that does not meet the caller's
// Spec is an error before any data is read, and a header that does is
// followed by exactly its data, however much more the stream holds.
func TestReadAsChecksTheHeaderFirst(t *testing.T) {
	dict := func(descr, shape string) string {
		return "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }"
	}
	f32x4x8 := Spec{te.F32, []int{4, 8}}
	tests := []struct {
		name  string
		dict  string
		data  []byte
		want  Spec
		err   string // "" for success
		dtype te.DType
	}{
		{"R3: huge declared shape", dict("<f4", "(16384, 16384)"), make([]byte, 1<<20), f32x4x8,
			"the header declares float32[16384, 16384], want f32[4, 8] (nothing was read)", 0},
		{"transposed", dict("<f4", "(8, 4)"), make([]byte, 128), f32x4x8, "declares float32[8, 4], want f32[4, 8]", 0},
		{"rank", dict("<f4", "(32,)"), make([]byte, 128), f32x4x8, "declares float32[32], want f32[4, 8]", 0},
		{"int for float", dict("<i4", "(4, 8)"), make([]byte, 128), f32x4x8, "declares int32[4, 8], want f32[4, 8]", 0},
		{"int64 for float", dict("<i8", "(4, 8)"), make([]byte, 256), f32x4x8, "declares int64[4, 8], want f32[4, 8]", 0},
		{"bool for int", dict("|b1", "(2,)"), make([]byte, 2), Spec{te.I32, []int{2}}, "declares bool[2], want i32[2]", 0},
		{"scalar", dict("<f4", "()"), make([]byte, 4), Spec{te.F32, []int{1}}, "declares float32[], want f32[1]", 0},
		{"f8 for f32", dict("<f8", "(2,)"), le64(0, 0), Spec{te.F32, []int{2}}, "", te.F32},
		{"f4 for bf16", dict("<f4", "(2,)"), le32(0, 0), Spec{te.BF16, []int{2}}, "", te.F32},
		{"f2 for f32", dict("<f2", "(2,)"), make([]byte, 4), Spec{te.F32, []int{2}}, "", te.F16},
		{"i8 for i32", dict("<i8", "(2,)"), le64(1, 2), Spec{te.I32, []int{2}}, "", te.I32},
		{"bool", dict("|b1", "(2,)"), []byte{0, 1}, Spec{te.Bool, []int{2}}, "", te.Bool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := npyFile(1, tt.dict, tt.data)
			header := len(file) - len(tt.data)
			r := &countingReader{r: io.MultiReader(bytes.NewReader(file), bytes.NewReader(make([]byte, 1<<20)))}
			a, err := ReadNPYAs(r, &tt.want)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				if r.n > int64(header) {
					t.Errorf("read %d bytes; the header has %d", r.n, header)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.DType != tt.dtype || !te.SameShape(a.Shape, tt.want.Shape) {
				t.Errorf("read %s%v, want %s%v", a.DType, a.Shape, tt.dtype, tt.want.Shape)
			}
			if r.n != int64(len(file)) {
				t.Errorf("read %d bytes, want exactly the file's %d", r.n, len(file))
			}
		})
	}
}

// TestReadNPZAsBomb is R3: an entry whose header declares (16384, 16384)
// f32, deflated, given where a 4×8 array is expected. Its header is
// rejected before anything of its data is inflated; entries nobody asked
// for are listed, not read.
func TestReadNPZAsBomb(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name string, content []byte) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(content); err != nil {
			t.Fatal(err)
		}
	}
	bomb := npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (16384, 16384), }", make([]byte, 8<<20))
	add("x.npy", bomb)
	add("unwanted.npy", bomb)
	add("w.npy", npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", le32(math.Float32bits(1), math.Float32bits(2))))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bomb.npz")
	if err := os.WriteFile(path, buf.Bytes(), 0o666); err != nil {
		t.Fatal(err)
	}

	_, _, err := ReadNPZAs(path, map[string]Spec{"x": {te.F32, []int{4, 8}}})
	want := "tensorio: " + path + ": x.npy: the header declares float32[16384, 16384], want f32[4, 8] (nothing was read)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}

	arrays, others, err := ReadNPZAs(path, map[string]Spec{"w": {te.F32, []int{2}}, "missing": {te.F32, nil}})
	if err != nil {
		t.Fatal(err)
	}
	if len(arrays) != 1 || arrays["w"] == nil || !slices.Equal(arrays["w"].Data, []float64{1, 2}) {
		t.Errorf("arrays = %v, want w = [1 2] alone", arrays)
	}
	if !slices.Equal(others, []string{"unwanted", "x"}) {
		t.Errorf("others = %v, want [unwanted x]", others)
	}
}
