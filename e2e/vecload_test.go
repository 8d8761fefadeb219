package e2e

import (
	"fmt"
	"maps"
	"testing"

	"tec/examples"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
)

// TestDecodeVectorLoads builds llama.te's decode step with a hidden size
// of 256 and an FFN of 512 for the small GPU, whose few SMs take wide
// tiles, so that each thread of a projection's tile loads several 16-byte
// vectors of each chunk, in rounds (schedule.MatVec.Vec and InFlight),
// and the concatenated q/k/v and gate/up projections read one tensor per
// tile (Parts); the tiny configuration has fewer vectors than threads,
// whose last round is partial. At -O3 and -O4, in f32, bf16 and f16, the
// simulator gives the reference's outputs.
func TestDecodeVectorLoads(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates a decode step six times")
	}
	ex, ok := examples.Lookup("llama/decode")
	if !ok {
		t.Fatal("no example llama/decode")
	}
	defines := maps.Clone(ex.Tiny)
	defines["B"], defines["L"], defines["D"], defines["FF"], defines["T"] = "1", "1", "256", "512", "16"
	p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: defines, Model: ex.Model})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	in := feeds(p, 1)
	g, _ := gpu.Builtin("small")
	for _, m := range []precision.Mode{precision.F32, precision.BF16, precision.F16} {
		q, qin, tol := p, in, tolModel
		if m != precision.F32 {
			q = precision.Apply(p, m)
			qin, tol = numeric.ConformFeeds(in, q), tolPrecision[m]
		}
		want, err := te.Evaluate(q, qin, te.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for level := 3; level <= pipeline.MaxLevel; level++ {
			t.Run(fmt.Sprintf("%s/O%d", m, level), func(t *testing.T) {
				res, _ := buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g, Precision: m}, qin, want, tol)
				vec, rounds, parts := 0, 0, 0
				for _, s := range res.Plan.Schedules {
					if mv := s.MatVec; mv != nil && mv.Vec > 0 {
						vec++
						if mv.InFlight > 1 {
							rounds++
						}
						if len(mv.Parts) > 1 {
							parts++
						}
					}
				}
				if vec == 0 || rounds == 0 || parts == 0 {
					t.Errorf("%d stages with 16-byte loads, %d with several in flight, %d of them in parts: want some of each", vec, rounds, parts)
				}
			})
		}
	}
}
