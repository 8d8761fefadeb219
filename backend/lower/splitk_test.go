package lower

import (
	"fmt"
	"math"
	"testing"

	"tec/analysis"
	"tec/backend/sim"
	"tec/examples"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/partition"
	"tec/precision"
	"tec/schedule"
	"tec/te"
	"tec/transform"
)

// TestSplitKExamples splits the K of every tensor-core contraction of the
// examples at their tiny configurations, at f16, bf16 and tf32 and -O4 on
// the A100 model, over two blocks where K allows it (the cost model does
// not at these sizes: their tiles are few but so are their k steps), and
// checks in the simulator, with race detection, that they equal the
// reference: convolutions (several reduction axes, padded operands staged
// element by element), attention and the MLPs, whose epilogues the
// finishing pass applies once to the partials' sum. The tolerance, 2^-6 of
// an output's magnitude, allows a half rounding of an intermediate that
// the partials' order tips the other way.
func TestSplitKExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates every example three times")
	}
	g, _ := gpu.Builtin("a100")
	forced := 0
	for _, ex := range examples.All() {
		src, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: ex.Tiny, Model: ex.Model})
		if diags.HasErrors() {
			t.Fatalf("%s: %v", ex.Name, diags.Error())
		}
		in := numeric.SeededFeeds(src, 1)
		for _, m := range []precision.Mode{precision.F16, precision.BF16, precision.TF32} {
			p := precision.Apply(src, m)
			p, err := transform.Horizontal(p)
			if err == nil {
				p, err = transform.Vertical(p)
			}
			if err != nil {
				t.Fatal(err)
			}
			a, err := analysis.Analyze(p, analysis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			pl, err := partition.Partition(a, g, partition.Options{Strategy: partition.CostModel, Split: true, Reuse: true, TempsInWorkspace: true})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, s := range pl.Schedules {
				if s.TensorCores && s.KSplit <= 1 && s.Mask == nil && s.KMask == nil && s.K%(2*schedule.TensorCoreTileK) == 0 {
					s.KSplit, s.KChunk, s.Tiles = 2, s.K/2, s.Tiles*2
					n++
				}
			}
			if n == 0 {
				continue
			}
			forced += n
			t.Run(fmt.Sprintf("%s/%s", ex.Name, m), func(t *testing.T) {
				mod, err := Fused(p, pl, FusedOptions{})
				if err != nil {
					t.Fatal(err)
				}
				mod.TempsInWorkspace = true
				qin := numeric.ConformFeeds(in, p)
				want, err := te.Evaluate(p, qin, te.EvalOptions{})
				if err != nil {
					t.Fatal(err)
				}
				res, err := sim.Run(mod, qin, sim.Options{Race: true, ResidentBlocks: 1 << 20})
				if err != nil {
					t.Fatal(err)
				}
				if res.RaceCount > 0 {
					t.Fatalf("%d races; first: %s", res.RaceCount, res.Races[0])
				}
				for _, o := range p.Outputs {
					got, ref := res.Outputs[o.Name].Data, want[o.Name].Data
					scale := 0.0
					for _, v := range ref {
						scale = max(scale, math.Abs(v))
					}
					if math.IsInf(scale, 0) || math.IsNaN(scale) {
						continue // past the half range (EfficientNet at these feeds)
					}
					for i := range ref {
						if !(math.Abs(got[i]-ref[i]) <= scale*0x1p-6) {
							t.Fatalf("%s[%d] = %v, want %v (%d contractions split)", o.Name, i, got[i], ref[i], n)
						}
					}
				}
			})
		}
	}
	if forced == 0 {
		t.Fatal("no example has a tensor-core contraction whose K splits")
	}
}
