package e2e

import (
	"testing"

	"tec/backend/kir"
	"tec/backend/sim"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/pipeline"
	"tec/precision"
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

// buildHalf applies precision mode to p and builds it at -O4 for g, and
// evaluates it in the reference on the feeds in, made its types: the
// build, the feeds and the reference's outputs.
func buildHalf(t *testing.T, p *te.Program, in map[string]*te.Array, mode precision.Mode, g gpu.Model) (*pipeline.Result, map[string]*te.Array, map[string]*te.Array) {
	t.Helper()
	half := precision.Apply(p, mode)
	hin := numeric.ConformFeeds(in, half)
	want, err := te.Evaluate(half, hin, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.Build(half, pipeline.Options{Level: pipeline.MaxLevel, GPU: g, Precision: mode})
	if err != nil {
		t.Fatal(err)
	}
	return res, hin, want
}

// checkHalf runs res in the simulator on in and checks it race-free and
// its outputs of the names given within 1 % of a half-precision
// reference's, want.
func checkHalf(t *testing.T, res *pipeline.Result, in, want map[string]*te.Array, names ...string) {
	t.Helper()
	out := simulate(t, res.Module, in, sim.Options{Race: true, ResidentBlocks: resident})
	if out.RaceCount > 0 {
		t.Errorf("%d races; first: %s", out.RaceCount, out.Races[0])
	}
	for _, name := range names {
		if e := numeric.RelError(out.Outputs[name], want[name]); !(e <= 1e-2) {
			t.Errorf("%s: relative error %.3g against the half-precision reference, want <= 1e-2", name, e)
		}
	}
}
