package tensorio

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"tec/te"
)

// findNumPy returns a Python interpreter that can import numpy. It skips the
// test if there is none, unless CI=true, where numpy is required.
func findNumPy(t *testing.T) string {
	t.Helper()
	tried := []string{"python3", "/usr/bin/python3"}
	for _, py := range tried {
		if err := exec.Command(py, "-c", "import numpy").Run(); err == nil {
			return py
		}
	}
	msg := "numpy not found (tried " + strings.Join(tried, ", ") + "); install it, e.g. apt-get install python3-numpy"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg + "; skipping the cross-check with NumPy (set CI=true to make this an error)")
	return ""
}

// runPython runs script with args and returns its standard output.
func runPython(t *testing.T, py, script string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.Bytes())
	}
	return out
}

// pyArray is an array as the Python snippets describe it: its dtype
// descriptor, shape, and values as little-endian float64s in hex.
type pyArray struct {
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
	Hex   string `json:"hex"`
	Same  bool   `json:"same"` // numpy.save writes the same bytes
	Error string `json:"error"`
}

func (p pyArray) values(t *testing.T) []float64 {
	t.Helper()
	b, err := hex.DecodeString(p.Hex)
	if err != nil {
		t.Fatal(err)
	}
	vs := make([]float64, len(b)/8)
	for i := range vs {
		vs[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return vs
}

// numpyLoad loads every .npy and .npz file in a directory, and describes
// each array, checking too that numpy.save writes it back unchanged.
const numpyLoad = `
import io, json, os, sys
import numpy as np

def describe(a):
    return {'dtype': a.dtype.str, 'shape': list(a.shape),
            'hex': np.ascontiguousarray(a, dtype='<f8').tobytes().hex()}

d = sys.argv[1]
out = {}
for name in sorted(os.listdir(d)):
    p = os.path.join(d, name)
    if name.endswith('.npy'):
        a = np.load(p)
        out[name] = describe(a)
        buf = io.BytesIO()
        np.save(buf, a)
        with open(p, 'rb') as f:
            out[name]['same'] = buf.getvalue() == f.read()
    elif name.endswith('.npz'):
        with np.load(p) as z:
            for k in z.files:
                out[name + ':' + k] = describe(z[k])
json.dump(out, sys.stdout)
`

func TestNumPyReadsOurFiles(t *testing.T) {
	py := findNumPy(t)
	dir := t.TempDir()
	arrays := map[string]*te.Array{}
	for _, dt := range testDTypes {
		for i, shape := range testShapes {
			name := dt.String() + "_" + strconv.Itoa(i)
			a := sample(dt, shape)
			arrays[name] = a
			if err := WriteNPYFile(filepath.Join(dir, name+".npy"), a); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := WriteNPZ(filepath.Join(dir, "all.npz"), arrays); err != nil {
		t.Fatal(err)
	}
	var got map[string]pyArray
	if err := json.Unmarshal(runPython(t, py, numpyLoad, dir), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*len(arrays) {
		t.Errorf("numpy loaded %d arrays, want %d", len(got), 2*len(arrays))
	}
	descr := map[te.DType]string{te.F32: "<f4", te.F16: "<f2", te.BF16: "<f4", te.I32: "<i4", te.Bool: "|b1"}
	for name, a := range arrays {
		for _, key := range []string{name + ".npy", "all.npz:" + name} {
			p, ok := got[key]
			if !ok {
				t.Errorf("%s: numpy did not load it", key)
				continue
			}
			if p.DType != descr[a.DType] || !te.SameShape(p.Shape, a.Shape) {
				t.Errorf("%s: numpy read %s%v, want %s%v", key, p.DType, p.Shape, descr[a.DType], a.Shape)
				continue
			}
			vs := p.values(t)
			for i, v := range vs {
				if !same(v, a.Data[i]) {
					t.Errorf("%s: numpy read element %d as %v, want %v", key, i, v, a.Data[i])
					break
				}
			}
			if strings.HasSuffix(key, ".npy") && !p.Same {
				t.Errorf("%s: numpy.save writes different bytes", key)
			}
		}
	}
}

// numpyWrite writes .npy and .npz files of every supported dtype and some
// unsupported ones into a directory, and describes each array.
const numpyWrite = `
import json, os, sys
import numpy as np

d = sys.argv[1]
shapes = [(), (1,), (7,), (2, 3, 4), (2, 1, 3, 1, 2), (0,), (3, 0, 2)]
out = {}
arrays = {}

def save(name, a, version=None):
    with open(os.path.join(d, name + '.npy'), 'wb') as f:
        np.lib.format.write_array(f, a, version=version)
    out[name] = {'dtype': a.dtype.str, 'shape': list(a.shape),
                 'hex': np.ascontiguousarray(a, dtype='<f8').tobytes().hex()}

for dt in ['<f4', '<f2', '<i4', '|b1', '<f8', '<i8']:
    for i, shape in enumerate(shapes):
        n = int(np.prod(shape))
        x = np.arange(n, dtype=np.float64)
        if dt[1] == 'f':
            a = x * 0.37 - 3
            a[1:4] = [-0.0, np.inf, np.nan][:len(a[1:4])]
        elif dt[1] == 'i':
            a = x * 1000003 - 500000
        else:
            a = x % 3 == 0
        a = a.astype(dt).reshape(shape)
        name = dt[1:] + '_' + str(i)
        save(name, a)
        arrays[name] = a

save('v2', np.arange(6, dtype='<f4').reshape(2, 3), version=(2, 0))
np.savez(os.path.join(d, 'plain.npz'), **arrays)
np.savez_compressed(os.path.join(d, 'compressed.npz'), **arrays)
np.save(os.path.join(d, 'fortran.npy'), np.asfortranarray(np.arange(6, dtype='<f4').reshape(2, 3)))
np.save(os.path.join(d, 'bigendian.npy'), np.arange(3, dtype='>i4'))
np.save(os.path.join(d, 'complex.npy'), np.zeros(3, dtype='<c8'))
np.save(os.path.join(d, 'overflow.npy'), np.array([1, 2**40], dtype='<i8'))
json.dump(out, sys.stdout)
`

func TestWeReadNumPyFiles(t *testing.T) {
	py := findNumPy(t)
	dir := t.TempDir()
	var want map[string]pyArray
	if err := json.Unmarshal(runPython(t, py, numpyWrite, dir), &want); err != nil {
		t.Fatal(err)
	}
	dtypes := map[string]te.DType{"<f4": te.F32, "<f8": te.F32, "<f2": te.F16, "<i4": te.I32, "<i8": te.I32, "|b1": te.Bool}
	check := func(t *testing.T, a *te.Array, p pyArray) {
		t.Helper()
		dt := dtypes[p.DType]
		vs := p.values(t)
		if p.DType == "<f8" {
			for i, v := range vs {
				vs[i] = float64(float32(v))
			}
		}
		checkArray(t, a, &te.Array{DType: dt, Shape: p.Shape, Data: vs}, dt)
	}
	npz := map[string]map[string]*te.Array{}
	for _, name := range []string{"plain.npz", "compressed.npz"} {
		m, err := ReadNPZ(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		npz[name] = m
	}
	for name, p := range want {
		t.Run(name, func(t *testing.T) {
			a, err := ReadNPYFile(filepath.Join(dir, name+".npy"), nil)
			if err != nil {
				t.Fatal(err)
			}
			check(t, a, p)
			if name == "v2" {
				return
			}
			for zname, m := range npz {
				a, ok := m[name]
				if !ok {
					t.Fatalf("%s: %s missing", zname, name)
				}
				check(t, a, p)
			}
		})
	}
	for _, tt := range []struct{ name, want string }{
		{"fortran", "data in Fortran order is not supported (header \"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\")"},
		{"bigendian", "big-endian dtype '>i4' is not supported"},
		{"complex", "unsupported dtype '<c8' (want f4, f2, i4, b1, f8 or i8)"},
		{"overflow", "element 1: int64 value 1099511627776 does not fit in i32"},
	} {
		path := filepath.Join(dir, tt.name+".npy")
		_, err := ReadNPYFile(path, nil)
		if want := "tensorio: " + path + ": " + tt.want; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: got error %v, want %q", tt.name, err, want)
		}
	}
}
