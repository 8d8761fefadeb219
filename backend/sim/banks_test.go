package sim

import (
	"testing"

	"tec/backend/kir"
	"tec/backend/report"
	"tec/te"
)

// TestBanks runs one warp-level shared-memory instruction of one warp and
// checks its wavefronts and bank conflicts, as the simulator counts them
// and as the static report predicts them, against the hardware's rule
// worked by hand.
func TestBanks(t *testing.T) {
	tid := kir.NewVar("tid", te.I32)
	lane := func(scale, add int) kir.Expr { return kir.Add(kir.Mul(tid, kir.I(scale)), kir.I(add)) }
	s32 := &kir.Buffer{Name: "s32", Space: kir.Shared, DType: te.F32, Shape: []int{2048}}
	s16 := &kir.Buffer{Name: "s16", Space: kir.Shared, DType: te.F16, Shape: []int{64, 32}}
	r32 := &kir.Buffer{Name: "r32", Space: kir.Local, DType: te.F32, Shape: []int{4}}
	r16 := &kir.Buffer{Name: "r16", Space: kir.Local, DType: te.F16, Shape: []int{8}}
	x := &kir.Buffer{Name: "x", Role: kir.Input, DType: te.F16, Shape: []int{256}}
	y := &kir.Buffer{Name: "y", Role: kir.Output, DType: te.F32, Shape: []int{32}}
	// The ldmatrix.x4 of an m16k16 A operand from rows of 32 f16 (64 B):
	// lanes 0-15 give rows 0-15 at column 0, lanes 16-31 at column 8.
	ldA := func(rotate bool) kir.Stmt {
		row, chunk := kir.Mod(tid, kir.I(16)), kir.Div(tid, kir.I(16))
		if rotate { // chunk + row/2 within the row's 4 chunks
			chunk = kir.Mod(kir.Add(chunk, kir.Div(row, kir.I(2))), kir.I(4))
		}
		return &kir.LdMatrix{Num: 4, Dst: kir.Frag{Buf: r16}, Src: s16, Index: kir.Add(kir.Mul(row, kir.I(32)), kir.Mul(chunk, kir.I(8)))}
	}
	for _, tc := range []struct {
		name                  string
		s                     kir.Stmt
		wavefronts, conflicts int64
	}{
		{"f32 consecutive", &kir.Store{Buf: s32, Index: tid, Value: kir.F(1)}, 1, 0},
		{"f32 broadcast", &kir.Store{Buf: y, Index: tid, Value: kir.Ld(s32, kir.I(5))}, 1, 0},
		{"f32 stride 2", &kir.Store{Buf: s32, Index: lane(2, 0), Value: kir.F(1)}, 2, 1},
		{"f32 stride 32", &kir.Store{Buf: y, Index: tid, Value: kir.Ld(s32, lane(32, 3))}, 32, 31},
		{"f32 stride 33", &kir.Store{Buf: s32, Index: lane(33, 0), Value: kir.F(1)}, 1, 0},
		{"f16 consecutive", &kir.Store{Buf: s16, Index: tid, Value: kir.F(1)}, 1, 0},
		{"f16 stride 64", &kir.Store{Buf: s16, Index: lane(64, 0), Value: kir.F(1)}, 32, 31},
		{"16-byte consecutive", &kir.VecCopy{Dst: r32, DstIndex: kir.I(0), Src: s32, SrcIndex: lane(4, 0)}, 4, 0},
		{"16-byte stride 32 B", &kir.VecCopy{Dst: r32, DstIndex: kir.I(0), Src: s32, SrcIndex: lane(8, 0)}, 8, 4},
		{"16-byte store stride 128 B", &kir.VecCopy{Dst: s32, DstIndex: lane(32, 0), Src: r32, SrcIndex: kir.I(0)}, 32, 28},
		{"cp.async consecutive", &kir.CopyAsync{Dst: s16, DstIndex: lane(8, 0), Src: x, SrcIndex: lane(8, 0)}, 4, 0},
		{"cp.async stride 64 B", &kir.CopyAsync{Dst: s16, DstIndex: lane(32, 0), Src: x, SrcIndex: lane(8, 0)}, 16, 12},
		{"ldmatrix 64-byte rows", ldA(false), 16, 12},
		{"ldmatrix rotated rows", ldA(true), 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []kir.Stmt{&kir.Let{Var: tid, Value: kir.Tid()}, tc.s}
			if _, ok := tc.s.(*kir.CopyAsync); ok {
				body = append(body, &kir.CommitGroup{}, &kir.WaitGroup{})
			}
			m := &kir.Module{Name: "banks", Buffers: []*kir.Buffer{x, y}, Outputs: []*kir.Buffer{y},
				Kernels: []*kir.Kernel{{Name: "banks", Grid: kir.Grid{Blocks: 1}, Block: kir.WarpSize, Params: []*kir.Buffer{x, y},
					Shared: []*kir.Buffer{s32, s16}, Locals: []*kir.Buffer{r32, r16}, Body: body}}}
			res, err := Run(m, map[string]*te.Array{"x": te.NewArray(te.F16, []int{256})}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := kir.Banks{Wavefronts: tc.wavefronts, Conflicts: tc.conflicts}
			if got := res.Banks(); got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if k := report.Module(m, report.Config{}).Kernels[0]; !k.BanksExact || k.Banks != want {
				t.Errorf("static report (exact %v): %+v, want %+v", k.BanksExact, k.Banks, want)
			}
		})
	}
}
