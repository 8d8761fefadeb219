package lower

import (
	"fmt"
	"testing"

	"tec/backend/kir"
	"tec/backend/sim"
	"tec/te"
)

// TestPiecewise checks the select chains that give each batch entry of a
// resident stage its slice family, by running them in the simulator: one
// thread per entry stores piecewise(vals, entry).
func TestPiecewise(t *testing.T) {
	for _, vals := range [][]int{
		{7},
		{0, 1, 2, 3},                 // affine
		{4, 5, 6, 7, 0, 1, 2, 3},     // two runs: an LSTM wavefront's layers 1 and 0
		{5, 5, 5, 2, 9, 16, 23, 0},   // constant, single, slope 7, single
		{36, 37, 38, 39, 32, 33, 34}, // a run cut short
	} {
		t.Run(fmt.Sprint(vals), func(t *testing.T) {
			out := &kir.Buffer{Name: "out", Role: kir.Output, DType: te.I32, Shape: []int{len(vals)}}
			i := kir.NewVar("i", te.I32)
			k := &kir.Kernel{Name: "pw", Grid: kir.Grid{Blocks: 1}, Block: 32, Params: []*kir.Buffer{out},
				Body: []kir.Stmt{&kir.Stage{Name: "out", Body: []kir.Stmt{
					&kir.For{Var: i, Kind: kir.BlockStride, Lo: kir.I(0), Hi: kir.I(len(vals)), Body: []kir.Stmt{
						&kir.Store{Buf: out, Index: i, Value: piecewise(vals, i)}}}}}}}
			m := &kir.Module{Name: "pw", Buffers: []*kir.Buffer{out}, Kernels: []*kir.Kernel{k}, Outputs: []*kir.Buffer{out}}
			res, err := sim.Run(m, nil, sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for x, want := range vals {
				if got := int(res.Outputs["out"].Data[x]); got != want {
					t.Errorf("piecewise(%d) = %d, want %d", x, got, want)
				}
			}
		})
	}
}
