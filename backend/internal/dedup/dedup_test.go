package dedup

import (
	"testing"

	"tec/backend/kir"
	"tec/te"
)

// scale returns a kernel y[i] = x[i] * c over n elements.
func scale(name string, x, y *kir.Buffer, c float64) *kir.Kernel {
	i := kir.NewVar("i", te.I32)
	return &kir.Kernel{Name: name, Grid: kir.Grid{Blocks: 1}, Block: 32, Params: []*kir.Buffer{x, y}, Body: []kir.Stmt{
		&kir.Stage{Name: name, Body: []kir.Stmt{
			&kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(x.Len()), Body: []kir.Stmt{
				&kir.Store{Buf: y, Index: i, Value: kir.Mul(kir.Ld(x, i), kir.F(c))},
			}},
		}},
	}}
}

func TestGroups(t *testing.T) {
	buf := func(name string, dt te.DType, n int) *kir.Buffer {
		return &kir.Buffer{Name: name, DType: dt, Shape: []int{n}}
	}
	a, b, c, d := buf("a", te.F32, 8), buf("b", te.F32, 8), buf("c", te.F32, 8), buf("d", te.F32, 8)
	h, e := buf("h", te.F16, 8), buf("e", te.F32, 16)
	k1 := scale("k1", a, b, 2)
	k2 := scale("k2", c, d, 2) // same code, other buffers
	k3 := scale("k3", a, b, 3) // another constant
	k4 := scale("k4", h, b, 2) // another dtype
	k5 := scale("k5", e, e, 2) // another length
	k6 := scale("k6", b, c, 2) // same code again
	cnt := buf("cnt", te.I32, 4)
	signalled := func(name string, at int) *kir.Kernel {
		k := scale(name, a, b, 2)
		k.Params = append(k.Params, cnt)
		k.Body = append(k.Body, &kir.Signal{Counter: cnt, Index: kir.I(at)})
		return k
	}
	k7, k8, k9 := signalled("k7", 0), signalled("k8", 1), signalled("k9", 0) // another counter tile; the same
	m := &kir.Module{Kernels: []*kir.Kernel{k1, k2, k3, k4, k5, k6, k7, k8, k9}}
	g := Groups(m)
	want := map[*kir.Kernel]*kir.Kernel{k1: k1, k2: k1, k3: k3, k4: k4, k5: k5, k6: k1, k7: k7, k8: k8, k9: k7}
	for k, w := range want {
		if g[k] != w {
			t.Errorf("Groups[%s] = %s, want %s", k.Name, g[k].Name, w.Name)
		}
	}
}
