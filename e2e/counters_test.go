package e2e

import (
	"fmt"
	"testing"

	"tec/backend/report"
	"tec/backend/sim"
	"tec/examples"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/partition"
	"tec/pipeline"
	"tec/te"
)

// syncCounts returns a module's grid syncs passed and counter waits, as
// the static report counts them.
func syncCounts(rep *report.Report) (syncs, waits int64) {
	return rep.Total.GridSyncs, rep.Total.CounterWaits
}

// TestCountersEverywhere builds every example at -O3 and -O4 with
// per-tile counters wherever they are sound (partition.CountersWherever),
// on the A100 and H100 models and the small GPU: simulated with race
// detection, each equals the reference, the static report's counts equal
// the simulator's, and every grid sync that counters replaced is gone.
func TestCountersEverywhere(t *testing.T) {
	for _, ex := range examples.All() {
		p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: ex.Tiny, Model: ex.Model})
		if diags.HasErrors() {
			t.Fatalf("%s: lang.Check:\n%v", ex.Name, diags.Error())
		}
		in := feeds(p, 1)
		want, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, gpuName := range []string{"a100", "h100", "small"} {
			g, _ := gpu.Builtin(gpuName)
			for level := 3; level <= pipeline.MaxLevel; level++ {
				t.Run(fmt.Sprintf("%s/%s/O%d", ex.Name, gpuName, level), func(t *testing.T) {
					t.Parallel()
					off, err := pipeline.Build(p, pipeline.Options{Level: level, GPU: g, Counters: partition.CountersOff})
					if err != nil {
						t.Fatal(err)
					}
					res, err := pipeline.Build(p, pipeline.Options{Level: level, GPU: g, Counters: partition.CountersWherever})
					if err != nil {
						t.Fatal(err)
					}
					out := simulate(t, res.Module, in, sim.Options{Race: true, ResidentBlocks: resident})
					if out.RaceCount > 0 {
						t.Errorf("%d races; first: %s", out.RaceCount, out.Races[0])
					}
					for _, o := range p.Outputs {
						mm, err := numeric.Compare(out.Outputs[o.Name], want[o.Name], tolModel)
						if err != nil {
							t.Fatalf("output %s: %v", o.Name, err)
						}
						if mm != nil {
							t.Errorf("output %s: %s", o.Name, mm)
						}
					}
					rep := report.Module(res.Module, report.Config{ResidentBlocks: resident})
					for i, k := range rep.Kernels {
						if got := out.Kernels[i].Counts; k.Exact && k.Counts != got {
							t.Errorf("kernel %s: report %v\nsimulator %v", k.Name, k.Counts, got)
						}
					}
					s0, w0 := syncCounts(report.Module(off.Module, report.Config{ResidentBlocks: resident}))
					s1, w1 := syncCounts(rep)
					if w0 != 0 || s1 > s0 || (w1 > 0) != (s1 < s0) {
						t.Errorf("grid syncs %d (%d counter waits) without counters, %d (%d) with them", s0, w0, s1, w1)
					}
				})
			}
		}
	}
}

// TestCounterSyncs counts the grid syncs of the tiny Llama prefill at -O4 on the
// H100 model with and without per-tile counters, where the cost model
// chooses them (the default): fewer grid syncs, some counter waits, a
// lower predicted time, and the same outputs, race-free, in the simulator.
func TestCounterSyncs(t *testing.T) {
	ex, ok := examples.Lookup("llama/prefill")
	if !ok {
		t.Fatal("no example llama/prefill")
	}
	p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: ex.Tiny, Model: ex.Model})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g, _ := gpu.Builtin("h100")
	in := feeds(p, 1)
	want, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type build struct {
		syncs, waits int64
		predicted    float64
	}
	var got [2]build
	for i, mode := range []partition.CounterMode{partition.CountersOff, partition.CountersByCost} {
		res, err := pipeline.Build(p, pipeline.Options{Level: 4, GPU: g, Counters: mode})
		if err != nil {
			t.Fatal(err)
		}
		out := simulate(t, res.Module, in, sim.Options{Race: true, ResidentBlocks: resident})
		if out.RaceCount > 0 {
			t.Errorf("mode %d: %d races; first: %s", mode, out.RaceCount, out.Races[0])
		}
		for _, o := range p.Outputs {
			if mm, err := numeric.Compare(out.Outputs[o.Name], want[o.Name], tolModel); err != nil || mm != nil {
				t.Errorf("mode %d: output %s: %v %v", mode, o.Name, err, mm)
			}
		}
		syncs, waits := syncCounts(report.Module(res.Module, report.Config{ResidentBlocks: resident}))
		if sim := out.Total(); sim.GridSyncs != syncs || sim.CounterWaits != waits {
			t.Errorf("mode %d: the simulator passed %d grid syncs and %d counter waits, the report counts %d and %d", mode, sim.GridSyncs, sim.CounterWaits, syncs, waits)
		}
		_, _, cost := res.Plan.Stats()
		got[i] = build{syncs, waits, cost.Total()}
	}
	off, on := got[0], got[1]
	t.Logf("grid syncs %d -> %d, counter waits %d, predicted %.2f -> %.2f µs", off.syncs, on.syncs, on.waits, off.predicted*1e6, on.predicted*1e6)
	if off.waits != 0 || on.syncs >= off.syncs || on.waits == 0 || on.predicted >= off.predicted {
		t.Errorf("without counters %+v, with them %+v: want fewer grid syncs, some waits and a lower prediction", off, on)
	}
}
