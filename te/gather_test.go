package te

import (
	"strings"
	"testing"
)

// gatherProgram is e[s, d] = wte[ids[s] + off, d] * 2, with wte[v, d] =
// 10·v + d and ids fed by the caller.
func gatherProgram(ids []int, vocab, dim, off int) (*Program, map[string]*Array) {
	b := newBuilder("gather")
	idt := b.input("ids", I32, len(ids))
	wte := b.param("wte", F32, vocab, dim)
	e := b.f32("e", shp(len(ids), dim), func(ax []Index) Expr {
		g := &Load{Tensor: wte, Index: []Index{Const(off), ax[1]}, Gather: []Expr{ld(idt, ax[0]), nil}}
		return mul(g, cf(2))
	})
	p := b.outputs(e)
	feeds := map[string]*Array{"ids": NewArray(I32, []int{len(ids)}), "wte": NewArray(F32, []int{vocab, dim})}
	for i, v := range ids {
		feeds["ids"].Data[i] = float64(v)
	}
	for i := range feeds["wte"].Data {
		feeds["wte"].Data[i] = float64(10*(i/dim) + i%dim)
	}
	return p, feeds
}

func TestEvaluateGather(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []int
		off  int
	}{
		{"plain", []int{3, 0, 4, 3}, 0},
		{"offset", []int{2, 0, 3}, 1},
		{"negative_offset", []int{1, 5, 2}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const vocab, dim = 5, 3
			p, feeds := gatherProgram(tc.ids, vocab, dim, tc.off)
			for _, noGEMM := range []bool{false, true} {
				got, err := Evaluate(p, feeds, EvalOptions{noGEMM: noGEMM})
				if err != nil {
					t.Fatal(err)
				}
				for s, id := range tc.ids {
					for d := range dim {
						want := float64(2 * (10*(id+tc.off) + d))
						if v := got["e"].Data[s*dim+d]; v != want {
							t.Errorf("e[%d, %d] = %g, want %g", s, d, v, want)
						}
					}
				}
			}
		})
	}
}

func TestEvaluateGatherOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []int
		off  int
		want string
	}{
		{"above", []int{1, 2, 3, 50000}, 0, "gather index ids[3] = 50000 is outside wte's dimension 0 [0, 5)"},
		{"negative", []int{-1}, 0, "gather index ids[0] = -1 is outside wte's dimension 0 [0, 5)"},
		{"offset", []int{0, 4}, 1, "gather index ids[1] + 1 = 5 is outside wte's dimension 0 [0, 5)"},
		{"negative_offset", []int{0}, -1, "gather index ids[0] - 1 = -1 is outside wte's dimension 0 [0, 5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, feeds := gatherProgram(tc.ids, 5, 3, tc.off)
			_, err := Evaluate(p, feeds, EvalOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestFormatGather(t *testing.T) {
	p, _ := gatherProgram([]int{0}, 5, 3, 1)
	if got, want := FormatExpr(p.Tensors[2].Body), "wte[ids[i] + 1, j] * 2.0"; got != want {
		t.Errorf("FormatExpr = %q, want %q", got, want)
	}
	l := p.Tensors[2].Body.(*Binary).X.(*Load)
	if LoadsInBounds(l) {
		t.Error("LoadsInBounds says a gather is in bounds")
	}
	if ins := Inputs(l); len(ins) != 2 || ins[0].Name != "wte" || ins[1].Name != "ids" {
		t.Errorf("Inputs = %v, want wte and ids", ins)
	}
	if !UsedVars(l)[p.Tensors[2].Axes[0]] {
		t.Error("UsedVars misses the axis the gather's index tensor is read at")
	}
}

func TestEvaluateArgReduce(t *testing.T) {
	b := newBuilder("arg")
	x := b.input("x", F32, 3, 5)
	am := b.compute("am", I32, shp(3), func(ax []Index) Expr {
		return red(Argmax, []int{5}, func(ks []Index) Expr { return ld(x, ax[0], ks[0]) })
	})
	an := b.compute("an", I32, shp(3), func(ax []Index) Expr {
		return red(Argmin, []int{5}, func(ks []Index) Expr { return ld(x, ax[0], ks[0]) })
	})
	// The flat position over two axes: x viewed as [3][5] reduced whole.
	flat := b.compute("flat", I32, shp(1), func([]Index) Expr {
		return red(Argmax, []int{3, 5}, func(ks []Index) Expr { return ld(x, ks[0], ks[1]) })
	})
	p := b.outputs(am, an, flat)
	feeds := map[string]*Array{"x": NewArray(F32, []int{3, 5})}
	copy(feeds["x"].Data, []float64{
		1, 7, 3, 7, 0, // ties: the first maximum, 1
		-2, -2, -5, 4, -5, // argmin ties: 2
		9, 9, 9, 9, 9, // all equal: 0
	})
	if TypeOf(am.Body) != I32 {
		t.Fatalf("argmax has type %s, want i32", TypeOf(am.Body))
	}
	got, err := Evaluate(p, feeds, EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]float64{"am": {1, 3, 0}, "an": {4, 2, 0}, "flat": {10}} {
		for i, w := range want {
			if g := got[name].Data[i]; g != w {
				t.Errorf("%s[%d] = %g, want %g", name, i, g, w)
			}
		}
	}
}
