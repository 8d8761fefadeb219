package lower

import (
	"fmt"
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/backend/report"
	"tec/backend/sim"
	"tec/te"
)

// reduceKernel is a one-block module in which each of threads threads
// reduces x[tid] by treeReduce and stores the result to y[tid], so that
// every thread's copy of the result is checked.
func reduceKernel(op te.ReduceOp, t te.DType, threads int) *kir.Module {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: t, Shape: []int{threads}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: t, Shape: []int{threads}}
	red := &kir.Buffer{Name: "red", Space: kir.Shared, DType: t, Shape: []int{threads}}
	tid := kir.NewVar("tid", te.I32)
	body := []kir.Stmt{&kir.Let{Var: tid, Value: kir.Tid()}}
	g := &gen{out: &body}
	r := treeReduce(g, op, red, tid, kir.Ld(x, tid), threads)
	g.emit(&kir.Store{Buf: y, Index: tid, Value: r})
	return &kir.Module{
		Name: "reduce", Buffers: []*kir.Buffer{x, y}, Outputs: []*kir.Buffer{y},
		Kernels: []*kir.Kernel{{Name: "y", Grid: kir.Grid{Blocks: 1}, Block: threads,
			Params: []*kir.Buffer{x, y}, Shared: []*kir.Buffer{red}, Body: body}},
	}
}

// TestWarpReduce checks the block reduction for block sizes with and
// without a partial last warp, in one warp and in many: every thread gets
// the exact result (the values are small integers, so an f32 sum is exact
// in any order), with no race; blocks of a warp or more use shuffles and at
// most three barriers, which the static report counts as the simulator
// does.
func TestWarpReduce(t *testing.T) {
	for _, threads := range []int{1, 16, 31, 32, 33, 48, 63, 64, 96, 160, 192, 1000, 1024} {
		for _, op := range []te.ReduceOp{te.Sum, te.ReduceMax, te.ReduceMin} {
			for _, dt := range []te.DType{te.F32, te.I32} {
				t.Run(fmt.Sprintf("%d/%v/%v", threads, op, dt), func(t *testing.T) {
					m := reduceKernel(op, dt, threads)
					if err := kir.Verify(m); err != nil {
						t.Fatal(err)
					}
					x := te.NewArray(dt, []int{threads})
					want := op.Identity()
					for i := range x.Data {
						x.Data[i] = float64((i*37)%101 - 50)
						switch op {
						case te.Sum:
							want += x.Data[i]
						case te.ReduceMax:
							want = max(want, x.Data[i])
						case te.ReduceMin:
							want = min(want, x.Data[i])
						}
					}
					res, err := sim.Run(m, map[string]*te.Array{"x": x}, sim.Options{Race: true})
					if err != nil {
						t.Fatal(err)
					}
					if len(res.Races) > 0 {
						t.Fatalf("races: %v", res.Races)
					}
					for i, got := range res.Outputs["y"].Data {
						if got != want {
							t.Fatalf("thread %d got %v, want %v", i, got, want)
						}
					}
					c := res.Total()
					// A partial last warp costs one barrier more, to hand its
					// partials to warp 0.
					barriers := int64(3)
					if threads%kir.WarpSize != 0 {
						barriers++
					}
					if threads >= kir.WarpSize && (c.Shuffles == 0 || c.BlockBarriers > barriers) {
						t.Errorf("%d shuffles and %d barriers, want shuffles and at most %d barriers", c.Shuffles, c.BlockBarriers, barriers)
					}
					if rep := report.Module(m, report.Config{}).Total; rep.Shuffles != c.Shuffles || rep.BlockBarriers != c.BlockBarriers {
						t.Errorf("report counts %d shuffles and %d barriers, the simulator %d and %d", rep.Shuffles, rep.BlockBarriers, c.Shuffles, c.BlockBarriers)
					}
				})
			}
		}
	}
}

// TestWarpReduceWrongMask plants a membermask missing a lane in the
// reduction's shuffles: the simulator must report it.
func TestWarpReduceWrongMask(t *testing.T) {
	for _, threads := range []int{32, 48, 256} {
		m := reduceKernel(te.Sum, te.F32, threads)
		planted := 0
		kir.WalkStmts(m.Kernels[0].Body, func(s kir.Stmt) bool {
			kir.Exprs(s, func(e kir.Expr) {
				kir.WalkExpr(e, func(e kir.Expr) bool {
					if sh, ok := e.(*kir.Shuffle); ok && planted == 0 {
						sh.Mask = kir.LaneMask(31)
						planted++
					}
					return true
				})
			})
			return true
		})
		if planted == 0 {
			t.Fatalf("%d threads: no shuffle", threads)
		}
		x := te.NewArray(te.F32, []int{threads})
		_, err := sim.Run(m, map[string]*te.Array{"x": x}, sim.Options{Race: true})
		if err == nil || !strings.Contains(err.Error(), "executed by lane 31, which is not in the mask") {
			t.Errorf("%d threads: err = %v, want the lane outside the mask reported", threads, err)
		}
	}
}
