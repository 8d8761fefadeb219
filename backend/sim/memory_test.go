package sim

import (
	"testing"

	"tec/backend/kir"
	"tec/te"
)

func TestEstimateMemory(t *testing.T) {
	x := &kir.Buffer{Name: "x", DType: te.F32, Shape: []int{4, 8}}
	y := &kir.Buffer{Name: "y", DType: te.F16, Shape: []int{16}}
	tile := &kir.Buffer{Name: "tile", Space: kir.Shared, DType: te.F32, Shape: []int{32}}
	acc := &kir.Buffer{Name: "acc", DType: te.F32, Shape: []int{2}}
	fixed := &kir.Kernel{Name: "k0", Grid: kir.Grid{Blocks: 100}, Block: 64, Shared: []*kir.Buffer{tile}, Locals: []*kir.Buffer{acc}}
	resident := &kir.Kernel{Name: "k1", Grid: kir.Grid{Resident: true}, Block: 32, Shared: []*kir.Buffer{tile}}
	tests := []struct {
		name    string
		kernels []*kir.Kernel
		opts    Options
		buffers []int64
		blocks  int64
	}{
		{"no kernels", nil, Options{}, []int64{32 * 8, 16 * 8}, 0},
		{"race", nil, Options{Race: true}, []int64{32 * 56, 16 * 56}, 0},
		// One block at a time: its shared tile and 64 threads' locals.
		{"fixed grid", []*kir.Kernel{fixed}, Options{}, []int64{256, 128}, 32*8 + 2*64*8},
		// Every resident block at once, DefaultResidentBlocks of them.
		{"resident grid", []*kir.Kernel{resident}, Options{}, []int64{256, 128}, DefaultResidentBlocks * 32 * 8},
		{"resident blocks given", []*kir.Kernel{resident}, Options{ResidentBlocks: 10}, []int64{256, 128}, 10 * 32 * 8},
		{"the larger of two kernels", []*kir.Kernel{fixed, resident}, Options{}, []int64{256, 128}, 32*8 + 2*64*8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &kir.Module{Name: "m", Buffers: []*kir.Buffer{x, y}, Kernels: tt.kernels}
			got := EstimateMemory(m, tt.opts)
			if len(got.Buffers) != len(tt.buffers) || got.Buffers[0] != tt.buffers[0] || got.Buffers[1] != tt.buffers[1] || got.Blocks != tt.blocks {
				t.Errorf("EstimateMemory = %+v, want buffers %v and blocks %d", got, tt.buffers, tt.blocks)
			}
			if want := tt.buffers[0] + tt.buffers[1] + tt.blocks; got.Total() != want {
				t.Errorf("Total = %d, want %d", got.Total(), want)
			}
		})
	}
}
