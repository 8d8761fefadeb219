package e2e

import (
	"testing"
	"time"

	"tec/backend/kir"
	"tec/backend/lower"
	"tec/backend/report"
	"tec/backend/sim"
	"tec/examples"
	"tec/internal/numeric"
	"tec/lang"
	"tec/te"
)

// feeds are the suites' common seeded feeds (numeric.SeededFeeds).
func feeds(p *te.Program, seed uint64) map[string]*te.Array { return numeric.SeededFeeds(p, seed) }

// Whole models chain dozens of kernels, each adding f32 rounding error to
// its inputs' (and layernorm and softmax amplify relative error where values
// are small), so the tolerance is ten times the single-kernel one.
var tolModel = numeric.Tolerance{Rtol: 1e-3, Atol: 1e-4}

// TestExamples is the key acceptance test of -O0: every example at its tiny
// configuration, lowered one kernel per tensor and simulated with race
// detection, equals the reference evaluator, and the static report's counts
// equal the simulator's.
func TestExamples(t *testing.T) {
	var total time.Duration
	for _, ex := range examples.All() {
		t.Run(ex.Name, func(t *testing.T) {
			p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: ex.Tiny, Model: ex.Model})
			if diags.HasErrors() {
				t.Fatalf("lang.Check:\n%v", diags.Error())
			}
			in := feeds(p, 1)
			want, err := te.Evaluate(p, in, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			m, err := lower.Unfused(p, lower.Options{})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res := simulate(t, m, in, sim.Options{Race: true})
			took := time.Since(start)
			total += took
			t.Logf("%d kernels simulated in %v", len(m.Kernels), took)
			if res.RaceCount > 0 {
				t.Errorf("%d races; first: %s", res.RaceCount, res.Races[0])
			}
			for _, o := range p.Outputs {
				mm, err := numeric.Compare(res.Outputs[o.Name], want[o.Name], tolModel)
				if err != nil {
					t.Fatalf("output %s: %v", o.Name, err)
				}
				if mm != nil {
					t.Errorf("output %s: %s", o.Name, mm)
				}
			}
			compareReport(t, ex.Name, m, res)
		})
	}
	t.Logf("all examples simulated in %v", total)
}

// compareReport checks that the static report of m counts what the
// simulator counted, kernel by kernel; of an example that masks work at run
// time (runtimeMasked), an inexact report need only bound it.
func compareReport(t *testing.T, example string, m *kir.Module, res *sim.Result) {
	t.Helper()
	rep := report.Module(m, report.Config{ResidentBlocks: sim.DefaultResidentBlocks})
	_, masked := runtimeMasked[example]
	bad := 0
	for i, k := range rep.Kernels {
		got := res.Kernels[i]
		if masked && !k.Exact && bounds(k.Counts, got.Counts) {
			continue
		}
		if !k.Exact || k.Counts != got.Counts {
			bad++
			if bad <= 3 {
				t.Errorf("kernel %s: report (exact %v) %v\nsimulator %v", k.Name, k.Exact, k.Counts, got.Counts)
			}
		}
	}
	if bad > 3 {
		t.Errorf("... and %d more kernels whose report differs", bad-3)
	}
}
