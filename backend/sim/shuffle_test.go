package sim

import (
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/backend/report"
	"tec/te"
)

// warpKernel is a one-block module of the given threads in which every
// thread computes body(v) from v = x[tid] and stores it to y[tid].
func warpKernel(threads int, body func(tid, v *kir.Var) kir.Expr) *kir.Module {
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F32, Shape: []int{threads}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{threads}}
	tid, v := kir.NewVar("tid", te.I32), kir.NewVar("v", te.F32)
	return &kir.Module{
		Name: "warp", Buffers: []*kir.Buffer{x, y}, Outputs: []*kir.Buffer{y},
		Kernels: []*kir.Kernel{{
			Name: "y", Grid: kir.Grid{Blocks: 1}, Block: threads, Params: []*kir.Buffer{x, y},
			Body: []kir.Stmt{
				&kir.Let{Var: tid, Value: kir.Tid()},
				&kir.Let{Var: v, Value: kir.Ld(x, tid)},
				&kir.Store{Buf: y, Index: tid, Value: body(tid, v)},
			},
		}},
	}
}

// xorSum is the butterfly sum of v over the warp, with the given mask.
func xorSum(v kir.Expr, mask kir.Expr) kir.Expr {
	for off := kir.WarpSize / 2; off > 0; off /= 2 {
		v = kir.Add(v, &kir.Shuffle{Mode: kir.ShuffleXor, X: v, Offset: off, Width: kir.WarpSize, Mask: mask})
	}
	return v
}

func shfl(mode kir.ShuffleMode, v kir.Expr, offset, width int, mask kir.Expr) kir.Expr {
	return &kir.Shuffle{Mode: mode, X: v, Offset: offset, Width: width, Mask: mask}
}

// TestShuffle checks the shuffles' values lane by lane, that the simulator
// and the static report count them alike, and that a wrong membermask is
// reported.
func TestShuffle(t *testing.T) {
	// x[i] = i: a warp's sum is 32·32w + 496.
	warpSums := func(threads int) []float64 {
		out := make([]float64, threads)
		for i := range out {
			w := i / 32
			out[i] = float64(1024*w + 496)
		}
		return out
	}
	down := func(threads, delta, width int) []float64 {
		out := make([]float64, threads)
		for i := range out {
			out[i] = float64(i)
			if lane := i % 32; lane%width+delta < width {
				out[i] = float64(i + delta)
			}
		}
		return out
	}
	tests := []struct {
		name    string
		threads int
		body    func(tid, v *kir.Var) kir.Expr
		want    []float64 // nil: want an error
		err     string
	}{
		{"xor sum", 64, func(_, v *kir.Var) kir.Expr { return xorSum(v, kir.FullMask()) }, warpSums(64), ""},
		{"down in segments of 8", 64, func(_, v *kir.Var) kir.Expr { return shfl(kir.ShuffleDown, v, 3, 8, kir.FullMask()) }, down(64, 3, 8), ""},
		{"xor in segments of 4", 32, func(_, v *kir.Var) kir.Expr { return shfl(kir.ShuffleXor, v, 2, 4, kir.FullMask()) },
			func() []float64 {
				out := make([]float64, 32)
				for i := range out {
					out[i] = float64(i ^ 2)
				}
				return out
			}(), ""},
		{"partial warp with its mask", 40, func(tid, v *kir.Var) kir.Expr {
			mask := &kir.Select{Cond: kir.Lt(tid, kir.I(32)), Then: kir.FullMask(), Else: kir.LaneMask(8)}
			return shfl(kir.ShuffleDown, v, 4, 8, mask)
		}, down(40, 4, 8), ""},
		{"partial warp with a full mask", 48, func(_, v *kir.Var) kir.Expr { return xorSum(v, kir.FullMask()) }, nil,
			"shuffle with mask 0xffffffff in warp 1 reached only by lanes 0x0000ffff: lane 16 of the mask is missing"},
		{"lane outside the mask", 32, func(_, v *kir.Var) kir.Expr { return shfl(kir.ShuffleXor, v, 1, 32, kir.LaneMask(16)) }, nil,
			"thread 16: shuffle with mask 0x0000ffff in warp 0 executed by lane 16, which is not in the mask"},
		{"reads a lane outside the mask", 16, func(_, v *kir.Var) kir.Expr { return shfl(kir.ShuffleDown, v, 1, 32, kir.LaneMask(16)) }, nil,
			"thread 15: shuffle.down reads lane 16 of warp 0, which is not in the mask 0x0000ffff: the value is undefined"},
		{"masks differ in a warp", 32, func(tid, v *kir.Var) kir.Expr {
			mask := &kir.Select{Cond: kir.Lt(tid, kir.I(16)), Then: kir.FullMask(), Else: kir.I(-2)}
			return shfl(kir.ShuffleXor, v, 1, 32, mask)
		}, nil, "thread 16: shuffle with mask 0xfffffffe in warp 0, whose lane 0 gave 0xffffffff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := warpKernel(tt.threads, tt.body)
			if err := kir.Verify(m); err != nil {
				t.Fatal(err)
			}
			x := te.NewArray(te.F32, []int{tt.threads})
			for i := range x.Data {
				x.Data[i] = float64(i)
			}
			res, err := Run(m, map[string]*te.Array{"x": x}, Options{Race: true})
			if tt.want == nil {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := res.Outputs["y"].Data
			for i, w := range tt.want {
				if got[i] != w {
					t.Errorf("y[%d] = %v, want %v", i, got[i], w)
				}
			}
			rep := report.Module(m, report.Config{})
			if sim, static := res.Total().Shuffles, rep.Total.Shuffles; sim == 0 || sim != static {
				t.Errorf("shuffles: simulator %d, report %d", sim, static)
			}
		})
	}
}
