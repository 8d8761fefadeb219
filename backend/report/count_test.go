package report

import (
	"testing"

	"tec/backend/kir"
	"tec/te"
)

// stage is one grid-stride loop over n elements of y, storing where the
// element's index satisfies i%5 != 0 and the thread's i%3 == 0: a stage of
// a persistent kernel, built afresh each call (new variables, new
// expressions) as the pipeline builds each stage.
func stage(y *kir.Buffer, n int) kir.Stmt {
	i := kir.NewVar("i", te.I32)
	return &kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: []kir.Stmt{
		&kir.If{Cond: ne(kir.Mod(i, kir.I(5)), kir.I(0)), Then: []kir.Stmt{
			&kir.Store{Buf: y, Index: i, Value: &kir.Select{Cond: kir.Eq(kir.Mod(i, kir.I(3)), kir.I(0)),
				Then: kir.Mul(kir.Ld(y, i), kir.F(2)), Else: kir.F(0)}},
		}},
	}}
}

// TestStagesShareEnumerations checks that stages of the same shape are
// enumerated once (a persistent LSTM has thousands, each enumerated anew
// took minutes) and counted as often as they run.
func TestStagesShareEnumerations(t *testing.T) {
	const n, stages = 1000, 50
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{n}}
	k := &kir.Kernel{Name: "k", Grid: kir.Grid{Blocks: 4}, Block: 32, Params: []*kir.Buffer{y}}
	for range stages {
		k.Body = append(k.Body, stage(y, n), &kir.GridSync{})
	}
	c := newCounter(k, Config{ResidentBlocks: 4, EnumLimit: DefaultEnumLimit})
	c.stmts(k.Body)
	// i%5 != 0: 800 stores; of those i%3 == 0: 334 - 67 = 267 loads and FLOPs.
	want := kir.Counts{LoadBytes: stages * 267 * 4, StoreBytes: stages * 800 * 4, FLOPs: stages * 267, GridSyncs: stages}
	if !c.exact || c.counts != want {
		t.Errorf("got %v (exact %v), want %v (exact)", c.counts, c.exact, want)
	}
	if c.enums != 2 { // the If (the store), the If and the Select (the load)
		t.Errorf("%d enumerations for %d stages of one shape, want 2", c.enums, stages)
	}
}

func ne(x, y kir.Expr) kir.Expr { return kir.Bin(te.Ne, x, y) }

// TestTabulatedConditions counts a nest whose conditions depend on some of
// its loops each (evaluated from tables) and on all of them (evaluated at
// each point) against a count by brute force.
func TestTabulatedConditions(t *testing.T) {
	const ni, nj, nk = 12, 10, 7
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{ni * nj * nk}}
	i, j, kv := kir.NewVar("i", te.I32), kir.NewVar("j", te.I32), kir.NewVar("k", te.I32)
	store := &kir.Store{Buf: y, Index: kir.Add(kir.Mul(kir.Add(kir.Mul(i, kir.I(nj)), j), kir.I(nk)), kv), Value: kir.F(1)}
	nested := []kir.Stmt{store}
	for _, cond := range []kir.Expr{
		ne(kir.Mod(kir.Add(kir.Add(i, j), kv), kir.I(5)), kir.I(0)),
		kir.Lt(kir.Mod(kir.Add(j, kir.I(2)), kir.I(4)), kir.I(3)),
		ne(kir.Mod(i, kir.I(3)), kir.I(1)),
	} {
		nested = []kir.Stmt{&kir.If{Cond: cond, Then: nested}}
	}
	m := &kir.Module{
		Name: "nest", Buffers: []*kir.Buffer{y}, Outputs: []*kir.Buffer{y},
		Kernels: []*kir.Kernel{{
			Name: "k", Grid: kir.Grid{Blocks: 1}, Block: 1, Params: []*kir.Buffer{y},
			Body: []kir.Stmt{
				&kir.For{Var: i, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(ni), Step: 1, Body: []kir.Stmt{
					&kir.If{Cond: kir.Lt(kir.Mod(i, kir.I(4)), kir.I(3)), Then: []kir.Stmt{
						&kir.For{Var: j, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(nj), Step: 1, Body: []kir.Stmt{
							&kir.For{Var: kv, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(nk), Step: 1, Body: nested},
						}},
					}},
				}},
			},
		}},
	}
	var want int64
	for i := range ni {
		for j := range nj {
			for k := range nk {
				if i%4 < 3 && i%3 != 1 && (j+2)%4 < 3 && (i+j+k)%5 != 0 {
					want++
				}
			}
		}
	}
	k := Module(m, Config{}).Kernels[0]
	if !k.Exact || k.StoreBytes != 4*want {
		t.Errorf("stored %d B (exact %v), want %d", k.StoreBytes, k.Exact, 4*want)
	}
}
