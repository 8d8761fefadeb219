package pipeline

import (
	"strings"
	"testing"

	"tec/gpu"
	tb "tec/internal/testkit/tebuild"
	"tec/partition"
	"tec/te"
	"tec/transform"
)

// decodeFFN is one row (a decode step at batch 1) through an RMSNorm,
// gate and up projections, SwiGLU and the down projection, at Llama-1B's
// sizes.
func decodeFFN() *te.Program {
	const d, f = 2048, 8192
	b := tb.New("ffn")
	x, g := b.Input("x", 1, d), b.Param("g", d)
	wg, wu, wd := b.Param("wg", f, d), b.Param("wu", f, d), b.Param("wd", d, f)
	ms := b.Compute("ms", tb.Shape(1), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Div, tb.Reduce(te.Sum, "n", d, func(n te.Index) te.Expr {
			return tb.Bin(te.Mul, tb.Ld(x, ax[0], n), tb.Ld(x, ax[0], n))
		}), tb.F(d))
	})
	h := b.Compute("h", tb.Shape(1, d), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Mul, tb.Bin(te.Mul, tb.Ld(x, ax...), tb.Un(te.Rsqrt, tb.Bin(te.Add, tb.Ld(ms, ax[0]), tb.F(1e-5)))), tb.Ld(g, ax[1]))
	})
	proj := func(name string, in, w *te.Tensor) *te.Tensor {
		return b.Compute(name, tb.Shape(1, w.Shape[0]), func(ax []te.Index) te.Expr {
			return tb.Reduce(te.Sum, "k", w.Shape[1], func(k te.Index) te.Expr {
				return tb.Bin(te.Mul, tb.Ld(in, ax[0], k), tb.Ld(w, ax[1], k))
			})
		})
	}
	gate, up := proj("gate", h, wg), proj("up", h, wu)
	act := b.Compute("act", tb.Shape(1, f), func(ax []te.Index) te.Expr {
		gv := tb.Ld(gate, ax...)
		return tb.Bin(te.Mul, tb.Bin(te.Mul, gv, tb.Un(te.Sigmoid, gv)), tb.Ld(up, ax...))
	})
	down := proj("down", act, wd)
	y := b.Compute("y", tb.Shape(1, d), func(ax []te.Index) te.Expr {
		return tb.Bin(te.Add, tb.Ld(x, ax...), tb.Ld(down, ax...))
	})
	return b.Program(y)
}

// TestRecomputePlan checks that -O4 recomputes the norm and SwiGLU of a
// decode step's FFN in the projections' tiles on the H100 model: the
// stages h, ms and act are gone, with the grid syncs before gate/up and
// down that waited for them, and the plan is predicted faster than the
// plan of the same program with them stored.
func TestRecomputePlan(t *testing.T) {
	g, _ := gpu.Builtin("h100")
	p := decodeFFN()
	res, err := Build(p, Options{Level: 4, GPU: g})
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"h", "ms", "act"} {
		if res.Program.Lookup(gone) != nil {
			t.Errorf("%s is still a stage:\n%s", gone, res.Plan)
		}
	}
	q, err := transform.Horizontal(p)
	if err != nil {
		t.Fatal(err)
	}
	if q, err = transform.Vertical(q); err != nil {
		t.Fatal(err)
	}
	stored, err := plan(q, g, partition.Options{Split: true, Reuse: true, TempsInWorkspace: true})
	if err != nil {
		t.Fatal(err)
	}
	_, syncs, cost := res.Plan.Stats()
	_, was, wasCost := stored.Stats()
	if syncs >= was || cost.Total() >= wasCost.Total() {
		t.Errorf("recomputing: %d grid syncs, %.2f µs; storing: %d, %.2f µs: want fewer and faster\n%s", syncs, cost.Total()*1e6, was, wasCost.Total()*1e6, res.Plan)
	}
	if !strings.Contains(res.Plan.String(), "hcat_gate_up") {
		t.Errorf("no fused gate/up projection:\n%s", res.Plan)
	}
}
