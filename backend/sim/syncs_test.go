package sim

import (
	"testing"

	"tec/backend/kir"
	"tec/te"
)

// carried is a persistent kernel whose threads each keep a value of their
// own across grid syncs: v = 2·x[g] + 1, then three times a grid sync and
// v += x[g], with a temporary defined after each grid sync; y[g] = v =
// 5·x[g] + 1.
func carried(blocks, threads int) (*kir.Module, map[string]*kir.Var) {
	n := blocks * threads
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{n}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{n}}
	vars := map[string]*kir.Var{
		"g": kir.NewVar("g", te.I32), "v": kir.NewVar("v", te.F32), "s": kir.NewVar("s", te.I32),
		"t": kir.NewVar("t", te.F32), "u": kir.NewVar("u", te.F32),
	}
	g, v, s, tmp, u := vars["g"], vars["v"], vars["s"], vars["t"], vars["u"]
	return &kir.Module{
		Name: "carried", Buffers: []*kir.Buffer{x, y}, Outputs: []*kir.Buffer{y},
		Kernels: []*kir.Kernel{{
			Name: "k", Grid: kir.Grid{Resident: true}, Block: threads, Params: []*kir.Buffer{x, y},
			Body: []kir.Stmt{
				&kir.Let{Var: g, Value: kir.Add(kir.Mul(kir.Bid(), kir.Bdim()), kir.Tid())},
				&kir.Stage{Name: "v", Body: []kir.Stmt{
					&kir.Let{Var: v, Value: kir.Add(kir.Mul(kir.Ld(x, g), kir.F(2)), kir.F(1))},
					&kir.For{Var: s, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(3), Step: 1, Body: []kir.Stmt{
						&kir.GridSync{},
						&kir.Let{Var: tmp, Value: kir.Ld(x, g)},
						&kir.Assign{Var: v, Value: kir.Add(v, tmp)},
					}},
					&kir.Store{Buf: y, Index: g, Value: v},
				}},
				&kir.Let{Var: u, Value: kir.F(0)},
			},
		}},
	}, vars
}

// TestFindSyncs checks which variables findSyncs finds in scope at a grid
// sync: those defined before one and used after it, not one defined after
// the last or anew after each.
func TestFindSyncs(t *testing.T) {
	m, vars := carried(2, 4)
	si := findSyncs(m.Kernels[0].Body)
	for name, want := range map[string]bool{"g": true, "v": true, "s": true, "t": false, "u": false} {
		if got := si.live[vars[name]]; got != want {
			t.Errorf("variable %s live at a grid sync: %v, want %v", name, got, want)
		}
	}
	if len(si.spans) != 1 {
		t.Errorf("%d statements span a grid sync, want 1 (the loop)", len(si.spans))
	}
}

// TestValuesAcrossGridSync checks that each block of a persistent grid
// keeps its own values of the variables live at a grid sync while the
// other blocks run, with and without race detection: a register common to
// the blocks would leave every block the last one's values.
func TestValuesAcrossGridSync(t *testing.T) {
	const blocks, threads = 3, 4
	m, _ := carried(blocks, threads)
	x := iota(te.F32, blocks*threads)
	for _, race := range []bool{false, true} {
		res, err := Run(m, map[string]*te.Array{"x": x}, Options{ResidentBlocks: blocks, Race: race})
		if err != nil {
			t.Fatal(err)
		}
		if res.RaceCount > 0 {
			t.Errorf("race %v: %d races; first: %s", race, res.RaceCount, res.Races[0])
		}
		for i, got := range res.Outputs["y"].Data {
			if want := 5*x.Data[i] + 1; got != want {
				t.Errorf("race %v: y[%d] = %v, want %v", race, i, got, want)
			}
		}
		if res.Kernels[0].GridSyncs != 3 {
			t.Errorf("race %v: %d grid syncs, want 3", race, res.Kernels[0].GridSyncs)
		}
	}
}
