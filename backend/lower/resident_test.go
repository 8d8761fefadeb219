package lower

import (
	"fmt"
	"strings"
	"testing"

	"tec/analysis"
	"tec/backend/kir"
	"tec/backend/sim"
	"tec/gpu"
	"tec/partition"
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

// gemvThenReduce is issue 17's F5: two weight-resident matrix-vector
// stages h and g over u, and y, which reads g at every column (y[i, j] =
// Σk w[i, k]·g[j, k]).
func gemvThenReduce() *te.Program {
	const n = 12
	b := newBuilder("f5")
	x := b.input("x", te.F32, 1, n)
	w := b.param("w", te.F32, n, n)
	u := b.param("u", te.F32, n, n)
	mv := func(name string, in *te.Tensor) *te.Tensor {
		return b.f32(name, shp(1, n), func(ax []te.Index) te.Expr {
			return sum1(n, func(k te.Index) te.Expr { return mul(ld(in, ax[0], k), ld(u, k, ax[1])) })
		})
	}
	g := mv("g", mv("h", x))
	y := b.f32("y", shp(n, 1), func(ax []te.Index) te.Expr {
		return sum1(n, func(k te.Index) te.Expr { return mul(ld(w, ax[0], k), ld(g, ax[1], k)) })
	})
	return b.outputs(y)
}

// TestCheckEpilogue checks that the lowering refuses a plan that puts in a
// resident stage's epilogue a stage that does not read it at its own
// columns, as the planner once did, instead of emitting a kernel that
// reads other threads' results (F6) or leaves an axis unbound (F5).
func TestCheckEpilogue(t *testing.T) {
	p := gemvThenReduce()
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin("a100")
	byName := map[string]*te.Tensor{}
	for _, tn := range p.Tensors {
		byName[tn.Name] = tn
	}
	gt, y := byName["g"], byName["y"]
	for _, tt := range []struct {
		name string
		axes map[*te.Var]*te.Var
		want string
	}{
		// What the planner chose: k, a reduction axis, for g's columns,
		// and nothing for y's i.
		{"unbound axis", map[*te.Var]*te.Var{y.Axes[1]: gt.Axes[0], y.Body.(*te.Reduce).Axes[0]: gt.Axes[1]}, "do not correspond one to one"},
		{"other columns", map[*te.Var]*te.Var{y.Axes[1]: gt.Axes[0], y.Axes[0]: gt.Axes[1]}, "not at its own column"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := partition.Partition(a, g, partition.Options{Split: true, Reuse: true})
			if err != nil {
				t.Fatal(err)
			}
			rs := pl.Schedules[gt].Resident
			if rs == nil || len(rs.Epilogue) != 0 || pl.Schedules[y].EpilogueOf != nil {
				t.Fatalf("want g resident with an empty epilogue:\n%s", pl)
			}
			if _, err := Fused(p, pl, FusedOptions{}); err != nil {
				t.Fatalf("the plan as made: %v", err)
			}
			rs.Epilogue, rs.EpilogueGroup, rs.EpilogueAxes = []*te.Tensor{y}, []int{0}, []map[*te.Var]*te.Var{tt.axes}
			pl.Schedules[y].EpilogueOf = gt
			_, err = Fused(p, pl, FusedOptions{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Fused: %v; want an error saying %q", err, tt.want)
			}
		})
	}
}
