package tensorio

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/te"
)

// TestNPZChecksCRC: an entry whose bytes do not match the CRC-32 of the
// archive's central directory is refused, naming the file, the entry and
// both CRCs, as NumPy refuses it ("Bad CRC-32"), whether a byte of the data
// or the recorded CRC changed; so is an entry with bytes after its array.
func TestNPZChecksCRC(t *testing.T) {
	var good bytes.Buffer
	a := &te.Array{DType: te.F32, Shape: []int{3}, Data: []float64{1, 2, 3}}
	if err := writeNPZ(&good, map[string]*te.Array{"w": a}); err != nil {
		t.Fatal(err)
	}
	entry := npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", le32(math.Float32bits(1), math.Float32bits(2), math.Float32bits(3)))
	// The central directory's record of w.npy: its CRC-32 is at offset 16.
	central := bytes.Index(good.Bytes(), []byte("PK\x01\x02"))
	if central < 0 {
		t.Fatal("no central directory record")
	}
	two := le32(math.Float32bits(2))
	flipped := bytes.Clone(entry)
	flipped[bytes.Index(flipped, two)+3] ^= 0x01
	sum := crc32.ChecksumIEEE(entry)

	tests := []struct {
		name string
		edit func(b []byte) []byte
		want string // the error after "tensorio: path: w.npy: "; "" for none
	}{
		{"intact", func(b []byte) []byte { return b }, ""},
		{"a flipped byte in the data", func(b []byte) []byte {
			b[bytes.Index(b, two)+3] ^= 0x01
			return b
		}, fmt.Sprintf("bad CRC-32: the entry's bytes have 0x%08x, the archive records 0x%08x (the file is corrupt)", crc32.ChecksumIEEE(flipped), sum)},
		{"the recorded CRC changed", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[central+16:], sum^0x100)
			return b
		}, fmt.Sprintf("bad CRC-32: the entry's bytes have 0x%08x, the archive records 0x%08x (the file is corrupt)", sum, sum^0x100)},
		{"the recorded CRC zeroed", func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[central+16:], 0)
			return b
		}, fmt.Sprintf("bad CRC-32: the entry's bytes have 0x%08x, the archive records 0x00000000 (the file is corrupt)", sum)},
	}
	var py string // the Python with NumPy, which must agree
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.npz")
			if err := os.WriteFile(path, tt.edit(bytes.Clone(good.Bytes())), 0o666); err != nil {
				t.Fatal(err)
			}
			for _, read := range []struct {
				name string
				f    func() error
			}{
				{"ReadNPZ", func() error { _, err := ReadNPZ(path); return err }},
				{"ReadNPZAs", func() error {
					_, _, err := ReadNPZAs(path, map[string]Spec{"w": {te.F32, []int{3}}})
					return err
				}},
			} {
				err := read.f()
				if tt.want == "" {
					if err != nil {
						t.Errorf("%s: %v", read.name, err)
					}
					continue
				}
				want := "tensorio: " + path + ": w.npy: " + tt.want
				if err == nil || err.Error() != want {
					t.Errorf("%s: err = %v, want %q", read.name, err, want)
				}
			}
			// NumPy, last: it skips where NumPy is not installed.
			if py == "" {
				py = findNumPy(t)
			}
			said := string(runPython(t, py, numpyLoads, path))
			if ok := said == "ok\n"; ok != (tt.want == "") || !ok && !strings.Contains(said, "Bad CRC-32") {
				t.Errorf("NumPy: %s", said)
			}
		})
	}
}

// numpyLoads is a Python script that loads every array of the .npz file
// argv[1] and prints "ok", or the error NumPy raised.
const numpyLoads = `
import sys, numpy
try:
    with numpy.load(sys.argv[1]) as f:
        for name in f.files:
            f[name]
    print("ok")
except Exception as e:
    print(type(e).__name__, e)
`

// TestNPZTrailingBytes: an entry must hold one array and nothing after it.
func TestNPZTrailingBytes(t *testing.T) {
	for _, method := range []uint16{zip.Store, zip.Deflate} {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, err := zw.CreateHeader(&zip.FileHeader{Name: "w.npy", Method: method})
		if err != nil {
			t.Fatal(err)
		}
		entry := npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", le32(math.Float32bits(1)))
		w.Write(append(bytes.Clone(entry), "xyz"...))
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "a.npz")
		if err := os.WriteFile(path, buf.Bytes(), 0o666); err != nil {
			t.Fatal(err)
		}
		_, err = ReadNPZ(path)
		want := fmt.Sprintf("tensorio: %s: w.npy: 3 bytes follow the array's data (the entry holds %d bytes; the header and data %d)", path, len(entry)+3, len(entry))
		if err == nil || err.Error() != want {
			t.Errorf("method %d: err = %v, want %q", method, err, want)
		}
	}
}

// TestNPZDeflatedCRC: a deflated entry whose compressed bytes changed
// inflates to other data, which the CRC catches.
func TestNPZDeflatedCRC(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "w.npy", Method: zip.Deflate})
	if err != nil {
		t.Fatal(err)
	}
	// Incompressible data, so that a byte in the middle of the file is
	// a byte of a stored deflate block.
	data := make([]byte, 4096)
	x := uint32(1)
	for i := range data {
		x = x*1664525 + 1013904223
		data[i] = byte(x >> 24)
	}
	w.Write(npyFile(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (4096,), }", data))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	b[len(b)/2] ^= 0x10
	path := filepath.Join(t.TempDir(), "a.npz")
	if err := os.WriteFile(path, b, 0o666); err != nil {
		t.Fatal(err)
	}
	_, err = ReadNPZ(path)
	want := "tensorio: " + path + ": w.npy: bad CRC-32: "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want %q...", err, want)
	}
}
