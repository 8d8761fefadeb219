package cost

import (
	"testing"

	"tec/schedule"
)

// TestTileBytes checks what a contraction's tiles load: each tile its rows
// of X and its columns of Y over all of K, so that narrower tiles along N
// re-read X more often.
func TestTileBytes(t *testing.T) {
	for _, tt := range []struct {
		name               string
		m, n, k, batch     int
		tileM, tileN, elem int
		out, want          int64
	}{
		// 2×2 tiles, each loading 32 rows of X and 32 columns of Y of K.
		{"square", 64, 64, 16, 1, 32, 32, 4, 0, 4 * (64*16*2 + 16*64*2)},
		{"output", 64, 64, 16, 1, 32, 32, 4, 1000, 4*(64*16*2+16*64*2) + 1000},
		{"f16", 64, 64, 16, 1, 32, 32, 2, 0, 2 * (64*16*2 + 16*64*2)},
		// One column tile: X read once, Y once per row tile.
		{"wide tile", 64, 64, 16, 3, 16, 64, 4, 0, 3 * 4 * (64*16*1 + 16*64*4)},
		// A ragged edge reads a whole tile's worth of rows.
		{"ragged", 40, 64, 8, 1, 32, 32, 4, 0, 4 * (40*8*2 + 8*64*2)},
	} {
		s := &schedule.Schedule{Kind: schedule.Contraction, M: tt.m, N: tt.n, K: tt.k, Batch: tt.batch, TileM: tt.tileM, TileN: tt.tileN}
		if got := TileBytes(s, tt.elem, tt.out); got != tt.want {
			t.Errorf("%s: %d B, want %d", tt.name, got, tt.want)
		}
	}
}
