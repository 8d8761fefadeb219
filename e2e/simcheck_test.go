package e2e

import (
	"testing"

	"tec/backend/kir"
	"tec/backend/sim"
	"tec/internal/numeric"
	"tec/pipeline"
	"tec/te"
)

// buildAndCompare builds p with opts, simulates it with race and
// initialisation checks on the inputs in, and compares every output with
// the reference outputs want within tol. It returns the build and the
// simulation for further checks.
func buildAndCompare(t *testing.T, p *te.Program, opts pipeline.Options, in, want map[string]*te.Array, tol numeric.Tolerance) (*pipeline.Result, *sim.Result) {
	t.Helper()
	res, err := pipeline.Build(p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res, simulateAndCompare(t, p, res.Module, in, want, tol)
}

// simulateAndCompare runs m, the kernels of p, in the simulator with race
// detection and compares every output with want.
func simulateAndCompare(t *testing.T, p *te.Program, m *kir.Module, in, want map[string]*te.Array, tol numeric.Tolerance) *sim.Result {
	t.Helper()
	out := simulate(t, m, in, sim.Options{Race: true, ResidentBlocks: resident})
	if out.RaceCount > 0 {
		t.Errorf("%d races; first: %s", out.RaceCount, out.Races[0])
	}
	for _, o := range p.Outputs {
		mm, err := numeric.Compare(out.Outputs[o.Name], want[o.Name], tol)
		if err != nil {
			t.Fatalf("output %s: %v", o.Name, err)
		}
		if mm != nil {
			t.Errorf("output %s: %s", o.Name, mm)
		}
	}
	return out
}
