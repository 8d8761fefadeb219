package lower_test

import (
	"testing"

	"tec/internal/numeric"
)

// TestMatVecDeepChunks checks a matrix-vector stage whose rows are staged
// in chunks deeper than the planner's usual 16 KB, so that each thread has
// the 16-byte loads in flight that Little's law asks of it between the
// barriers (partition's setMatVec): eight f32 rows of 2,048 (not rounded
// for tensor cores) by bf16 weights on the A100, a chunk of 512 giving a
// thread of 64 a column one load per column. The
// plan stages 1,024 a chunk with two loads in flight, and the module
// computes the reference's answer, race-free.
func TestMatVecDeepChunks(t *testing.T) {
	p := mixedWeights(8, 2048, 1024)
	m, pl := fusedModule(t, p, "a100", false)
	s := pl.Schedules[p.Outputs[0]]
	mv := s.MatVec
	if mv == nil || mv.Vec == 0 {
		t.Fatalf("y is not a matrix-vector stage of 16-byte loads:\n%s", pl)
	}
	if got := mv.StagedK(s.K); got <= 512 || got == s.K {
		t.Errorf("y stages %d of k at once, want a chunk deeper than 16 KB of rows (512) and less than all %d:\n%s", got, s.K, pl)
	}
	if mv.InFlight < 2 {
		t.Errorf("%d loads in flight, want 2 or more:\n%s", mv.InFlight, pl)
	}
	want, res := runRaceFree(t, p, m, randomFeeds(p))
	mm, err := numeric.Compare(res.Outputs["y"], want["y"], numeric.Tolerance{Rtol: 1e-4, Atol: 1e-4})
	if err != nil || mm != nil {
		t.Errorf("y: %v %v", err, mm)
	}
}
