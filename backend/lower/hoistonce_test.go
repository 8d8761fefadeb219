package lower_test

import (
	"testing"

	"tec/backend/sim"
	"tec/internal/numeric"
	"tec/te"
)

// TestHoistedOncePerBlock checks that a matrix-vector stage computes the
// RMSNorm statistic of its one row once per block, not once per tile: on
// one block, which runs every tile, the kernel reads less from global
// memory than on a grid of a block per tile, where each block computes it
// for its own tile, and both give the reference's result, race-free.
func TestHoistedOncePerBlock(t *testing.T) {
	p := normFFN(1, 128, 512)
	m, _, _ := recomputeModule(t, p, "h100", true, true)
	feeds := randomFeeds(p)
	want, err := te.Evaluate(p, feeds, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	loads := map[int]int64{}
	for _, blocks := range []int{1, 1 << 20} {
		res, err := sim.Run(m, feeds, sim.Options{Race: true, ResidentBlocks: blocks})
		if err != nil {
			t.Fatal(err)
		}
		if res.RaceCount > 0 {
			t.Fatalf("%d blocks: %d races; first: %s", blocks, res.RaceCount, res.Races[0])
		}
		if mm, err := numeric.Compare(res.Outputs["down"], want["down"], numeric.Tolerance{Rtol: 1e-4, Atol: 1e-5}); err != nil || mm != nil {
			t.Errorf("%d blocks: down: %v %v", blocks, err, mm)
		}
		loads[blocks] = res.Total().LoadBytes
	}
	// The gate and up tiles (512 columns, 16 a tile at most) each read the
	// 128 values of x for the statistic when every tile has its block.
	if saved := loads[1<<20] - loads[1]; saved < 16*128*4 {
		t.Errorf("one block reads %d B, a block per tile %d B: want the statistic computed once per block", loads[1], loads[1<<20])
	}
}
