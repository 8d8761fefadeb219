package sim

import (
	"testing"

	"tec/backend/kir"
	"tec/te"
)

// TestLocalPlaces checks the layout of a kernel's local arrays: the
// arrays of one stage alone overlap those of the others, after the ones
// that several stages, or the code outside the stages, use.
func TestLocalPlaces(t *testing.T) {
	local := func(name string, n int) *kir.Buffer {
		return &kir.Buffer{Name: name, Space: kir.Local, DType: te.F32, Shape: []int{n}}
	}
	a, b1, b2, both, outside, unused := local("a", 8), local("b1", 4), local("b2", 16), local("both", 2), local("outside", 1), local("unused", 3)
	set := func(buf *kir.Buffer) kir.Stmt { return &kir.Store{Buf: buf, Index: kir.I(0), Value: kir.F(1)} }
	get := func(dst, src *kir.Buffer) kir.Stmt {
		return &kir.Store{Buf: dst, Index: kir.I(0), Value: kir.Ld(src, kir.I(0))}
	}
	k := &kir.Kernel{Name: "k", Block: 32, Grid: kir.Grid{Blocks: 1},
		Locals: []*kir.Buffer{a, b1, b2, both, outside, unused},
		Body: []kir.Stmt{
			set(outside),
			&kir.Stage{Name: "x", Body: []kir.Stmt{set(a), get(both, a)}},
			&kir.Stage{Name: "y", Body: []kir.Stmt{&kir.If{Cond: kir.Lt(kir.Tid(), kir.I(4)), Then: []kir.Stmt{set(b1), get(b2, b1)}}, set(both)}},
		}}
	offs, size := localPlaces(k)
	// both, outside and unused first (2 + 1 + 3), then x's a (8) beside
	// y's b1 and b2 (4 + 16).
	want := []int{6, 6, 10, 0, 2, 3}
	for i, b := range k.Locals {
		if offs[i] != want[i] {
			t.Errorf("%s at %d, want %d", b.Name, offs[i], want[i])
		}
	}
	if size != 26 {
		t.Errorf("storage of %d elements a thread, want 26", size)
	}
	if _, err := Run(&kir.Module{Kernels: []*kir.Kernel{k}}, nil, Options{}); err != nil {
		t.Fatal(err)
	}
}
