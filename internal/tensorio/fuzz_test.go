package tensorio

import (
	"bytes"
	"testing"

	"tec/te"
)

// FuzzReadNPY checks that ReadNPY never panics, and that whatever it accepts
// is a consistent array that survives a round trip.
func FuzzReadNPY(f *testing.F) {
	for _, dt := range testDTypes {
		for _, shape := range testShapes {
			var buf bytes.Buffer
			if err := WriteNPY(&buf, sample(dt, shape)); err != nil {
				f.Fatal(err)
			}
			f.Add(buf.Bytes())
		}
	}
	f.Add(npyFile(2, `{"shape": (2L,), "fortran_order": True, "descr": "<f8"}`, le64(1, 2)))
	f.Add(npyFile(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }", le64(1<<40)))
	f.Add(npyFile(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1099511627776,), }", nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := ReadNPY(bytes.NewReader(data))
		if err != nil {
			return
		}
		n, err := numElems(a.Shape)
		if err != nil || n != len(a.Data) {
			t.Fatalf("read shape %v with %d elements (%v)", a.Shape, len(a.Data), err)
		}
		var buf bytes.Buffer
		if err := WriteNPY(&buf, a); err != nil {
			t.Fatalf("cannot write what was read: %v", err)
		}
		b, err := ReadNPY(&buf)
		if err != nil {
			t.Fatalf("cannot read what was written: %v", err)
		}
		if b.DType != a.DType || !te.SameShape(a.Shape, b.Shape) {
			t.Fatalf("round trip turned %s%v into %s%v", a.DType, a.Shape, b.DType, b.Shape)
		}
		for i := range a.Data {
			if !same(a.Data[i], b.Data[i]) {
				t.Fatalf("round trip changed element %d from %v to %v", i, a.Data[i], b.Data[i])
			}
		}
	})
}
