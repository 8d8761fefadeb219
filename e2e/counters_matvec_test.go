package e2e

import (
	"fmt"
	"testing"

	"tec/backend/report"
	"tec/backend/sim"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/partition"
	"tec/pipeline"
	"tec/te"
)

// TestMatVecCountersDecode builds the tiny Llama decode step at B = 1 and
// 2, whose projections are matrix-vector stages of B rows, at -O3 and -O4 on
// the H100 model with counters wherever sound and by cost: RoPE's and
// SwiGLU's waits on the projections' column tiles replace grid syncs
// (fewer than with counters off), and the simulator, with race detection
// on several resident grids, gives the reference's outputs race-free with
// the static report's counts.
func TestMatVecCountersDecode(t *testing.T) {
	for _, b := range []int{1, 2} {
		_, p := llamaPair(t, b)
		t.Run(fmt.Sprintf("B%d", b), func(t *testing.T) { matVecCountersDecode(t, p) })
	}
}

func matVecCountersDecode(t *testing.T, p *te.Program) {
	in := feeds(p, 1)
	want, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin("h100")
	for level := 3; level <= pipeline.MaxLevel; level++ {
		off, err := pipeline.Build(p, pipeline.Options{Level: level, GPU: g, Counters: partition.CountersOff})
		if err != nil {
			t.Fatal(err)
		}
		s0, _ := syncCounts(report.Module(off.Module, report.Config{ResidentBlocks: resident}))
		for _, mode := range []partition.CounterMode{partition.CountersByCost, partition.CountersWherever} {
			t.Run(fmt.Sprintf("O%d/mode%d", level, mode), func(t *testing.T) {
				res, err := pipeline.Build(p, pipeline.Options{Level: level, GPU: g, Counters: mode})
				if err != nil {
					t.Fatal(err)
				}
				rep := report.Module(res.Module, report.Config{ResidentBlocks: resident})
				s1, w1 := syncCounts(rep)
				if s1 >= s0 || w1 == 0 {
					t.Errorf("grid syncs %d without counters, %d (%d counter waits) with them: want fewer", s0, s1, w1)
				}
				for _, blocks := range []int{resident, 3} {
					out := simulate(t, res.Module, in, sim.Options{Race: true, ResidentBlocks: blocks})
					if out.RaceCount > 0 {
						t.Errorf("%d resident blocks: %d races; first: %s", blocks, out.RaceCount, out.Races[0])
					}
					for _, o := range p.Outputs {
						if mm, err := numeric.Compare(out.Outputs[o.Name], want[o.Name], tolModel); err != nil || mm != nil {
							t.Errorf("output %s: %v %v", o.Name, err, mm)
						}
					}
					if blocks == resident {
						for i, k := range rep.Kernels {
							if got := out.Kernels[i].Counts; k.Exact && k.Counts != got {
								t.Errorf("kernel %s: report %v\nsimulator %v", k.Name, k.Counts, got)
							}
						}
					}
				}
			})
		}
	}
}
