package report

import (
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/te"
)

// guarded is a kernel over n elements of x in a grid of 3 blocks of 32
// threads: a thread-stride loop whose body loads x[i] where i is even
// (an index condition) or where x[i] > 0 (a data condition, when dataCond).
func guarded(n int, dataCond bool) *kir.Module {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F16, Shape: []int{n}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{n}}
	i := kir.NewVar("i", te.I32)
	cond := kir.Eq(kir.Mod(i, kir.I(2)), kir.I(0))
	if dataCond {
		cond = kir.Bin(te.Gt, kir.Ld(x, i), kir.F(0))
	}
	return &kir.Module{
		Name: "guarded", Buffers: []*kir.Buffer{x, y}, Outputs: []*kir.Buffer{y},
		Kernels: []*kir.Kernel{{
			Name: "k", Grid: kir.Grid{Blocks: 3}, Block: 32, Params: []*kir.Buffer{x, y},
			Body: []kir.Stmt{
				&kir.For{Var: i, Kind: kir.ThreadStride, Lo: kir.I(0), Hi: kir.I(n), Body: []kir.Stmt{
					&kir.Store{Buf: y, Index: i, Value: &kir.Select{Cond: cond,
						Then: kir.Mul(kir.Ld(x, i), kir.F(2)), Else: kir.F(0)}},
				}},
				&kir.SyncThreads{},
			},
		}},
	}
}

func TestCounts(t *testing.T) {
	r := Module(guarded(101, false), Config{})
	k := r.Kernels[0]
	want := kir.Counts{LoadBytes: 51 * 2, StoreBytes: 101 * 4, FLOPs: 51, BlockBarriers: 3}
	if !k.Exact || k.Counts != want {
		t.Errorf("got %v (exact %v), want %v (exact)", k.Counts, k.Exact, want)
	}
	if r := Module(guarded(101, true), Config{}); r.Exact {
		t.Errorf("a data-dependent condition gave an exact report: %v", r.Total)
	}
	var b strings.Builder
	if err := r.Fprint(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "k") || !strings.Contains(b.String(), "total") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestSampled(t *testing.T) {
	r := Module(guarded(1<<12, false), Config{EnumLimit: 100})
	k := r.Kernels[0]
	if k.Exact {
		t.Errorf("a sampled count is marked exact")
	}
	if got, want := float64(k.FLOPs), float64(1<<11); got < 0.8*want || got > 1.2*want {
		t.Errorf("sampled FLOPs %v, want about %v", got, want)
	}
}

func TestDRAMBytes(t *testing.T) {
	buf := func(name string, role kir.Role, n int) *kir.Buffer {
		return &kir.Buffer{Name: name, Role: role, DType: te.F32, Shape: []int{n}}
	}
	w := buf("w", kir.Param, 1000) // 4000 B
	a := buf("a", kir.Temp, 500)   // 2000 B
	b := buf("b", kir.Temp, 500)
	c := buf("c", kir.Temp, 500)
	for _, tc := range []struct {
		name      string
		l2        int64
		traffic   []Traffic
		workspace map[*kir.Buffer]int64
		want      int64
	}{
		{"re-reads hit when the kernel fits", 1 << 20, []Traffic{{Buffer: w, Load: 40000}}, nil, 4000},
		{"a temporary written then read moves once", 1 << 20, []Traffic{{Buffer: a, Load: 6000, Store: 2000}}, nil, 2000},
		{"a temporary only read comes from DRAM", 1 << 20, []Traffic{{Buffer: a, Load: 6000}}, nil, 2000},
		{"too big for L2: every access", 5000, []Traffic{{Buffer: w, Load: 40000}, {Buffer: a, Load: 6000, Store: 2000}}, nil, 48000},
		{"too big, but a small buffer still hits", 30000, []Traffic{{Buffer: w, Load: 40000}, {Buffer: a, Load: 6000, Store: 2000}, {Buffer: buf("big", kir.Param, 7000), Load: 28000}}, nil, 40000 + 2000 + 28000},
		{"temporaries sharing workspace bytes are written back once", 1 << 20,
			[]Traffic{{Buffer: a, Load: 2000, Store: 2000}, {Buffer: b, Load: 2000, Store: 2000}, {Buffer: c, Store: 2000}},
			map[*kir.Buffer]int64{a: 0, b: 0, c: 1024}, 3024},
		{"apart, they are written back each", 1 << 20,
			[]Traffic{{Buffer: a, Store: 2000}, {Buffer: b, Store: 2000}},
			map[*kir.Buffer]int64{a: 0, b: 2048}, 4000},
		{"too big for L2: sharing bytes saves nothing", 3000,
			[]Traffic{{Buffer: a, Store: 2000}, {Buffer: b, Store: 2000}},
			map[*kir.Buffer]int64{a: 0, b: 0}, 4000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Kernels: []Kernel{{Traffic: tc.traffic}}, Workspace: tc.workspace}
			if got := r.DRAMBytes(tc.l2, nil); got != tc.want {
				t.Errorf("DRAMBytes = %d, want %d", got, tc.want)
			}
		})
	}
}
