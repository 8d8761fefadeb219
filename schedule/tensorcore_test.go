package schedule

import (
	"testing"

	"tec/te"
)

// TestTensorCoreBlocks checks the blocks a fused stage chooses among: the
// warp grid of each tile maximises MMAs per fragment load, slicing K in
// two where that makes the warp tiles larger, within 64 accumulators per
// thread, and every block is valid for its warps.
func TestTensorCoreBlocks(t *testing.T) {
	find := func(bs []TCBlock, tm, tn int) (TCBlock, bool) {
		for _, b := range bs {
			if b.TM == tm && b.TN == tn {
				return b, true
			}
		}
		return TCBlock{}, false
	}
	for _, tc := range []struct {
		M, N, warps, tm, tn int
		want                TCBlock
	}{
		{1024, 1024, 4, 64, 64, TCBlock{TM: 64, TN: 64, WGM: 1, WGN: 2, Slices: 2}},   // 64×32 warp tiles
		{1024, 1024, 4, 128, 64, TCBlock{TM: 128, TN: 64, WGM: 2, WGN: 2, Slices: 1}}, // sliced, 128×32 would hold 128 accumulators
		{1024, 1024, 8, 64, 128, TCBlock{TM: 64, TN: 128, WGM: 1, WGN: 4, Slices: 2}},
		{1024, 1024, 8, 128, 128, TCBlock{TM: 128, TN: 128, WGM: 2, WGN: 4, Slices: 1}},
		{1024, 1024, 16, 128, 128, TCBlock{TM: 128, TN: 128, WGM: 2, WGN: 4, Slices: 2}},
		{20, 40, 8, 16, 64, TCBlock{TM: 16, TN: 64, WGM: 1, WGN: 4, Slices: 2}},
	} {
		bs := TensorCoreBlocks(tc.M, tc.N, tc.warps)
		for _, b := range bs {
			if !b.Valid(tc.warps) {
				t.Errorf("%d warps: block %+v is not valid", tc.warps, b)
			}
			if b.TM > max(16, te.NextPow2(tc.M)) || b.TN > max(32, te.NextPow2(tc.N)) {
				t.Errorf("%dx%d: block %+v larger than the extents need", tc.M, tc.N, b)
			}
		}
		if got, ok := find(bs, tc.tm, tc.tn); !ok || got != tc.want {
			t.Errorf("%dx%d, %d warps, tile %dx%d: got %+v (%v), want %+v", tc.M, tc.N, tc.warps, tc.tm, tc.tn, got, ok, tc.want)
		}
	}
	if _, ok := find(TensorCoreBlocks(1024, 1024, 4), 128, 128); ok {
		t.Errorf("4 warps over 128×128: a block, want none (64×64 warp tiles hold 128 accumulators)")
	}
	if bs := TensorCoreBlocks(64, 64, 6); bs != nil {
		t.Errorf("6 warps: %v, want none", bs)
	}
	for _, b := range []TCBlock{{TM: 64, TN: 64, WGM: 2, WGN: 2, Slices: 1}, {TM: 64, TN: 64, WGM: 4, WGN: 2, Slices: 1}, {TM: 32, TN: 32, WGM: 4, WGN: 1, Slices: 1}, {TM: 64, TN: 64, WGM: 2, WGN: 2, Slices: 4}} {
		if want := b == (TCBlock{TM: 64, TN: 64, WGM: 2, WGN: 2, Slices: 1}); b.Valid(4) != want {
			t.Errorf("block %+v valid for 4 warps: %v, want %v", b, !want, want)
		}
	}
}
