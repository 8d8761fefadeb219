package e2e

import (
	"fmt"
	"slices"
	"testing"

	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// valueSkipSource is the value side of a decode step's attention: the
// scores sc are an input (so that only the value side can skip), masked by
// the run-time positions; p is exactly 0 past pos[b], and o's sum over t
// is a matrix-vector product that skips those t.
const valueSkipSource = `
const B = 4
const T = 1024
const D = 16

model decode {
  input pos: i32[B]
  input sc: f32[B, T]
  input vc: f32[B, T, D]
  s[b, t] = select(t <= pos[b], sc[b, t], -inf)
  m[b] = max[t](s[b, t])
  p[b, t] = exp(s[b, t] - m[b])
  den[b] = sum[t](p[b, t])
  o[b, e] = sum[t](p[b, t] * vc[b, t, e]) / den[b]
  output o
}
`

// TestDecodeSkipsValues runs the value side of attention at every level
// in the simulator (race-free, against the reference) for positions at
// the first, a middle and the last slot and mixed per sequence: against
// every position at the last slot, the step loads none of the terms of
// o's and den's sums past pos[b], counted point by point (at -O3 and
// -O4 o is a matrix-vector stage with a k mask, contraction.KMaskOf; at
// -O0 to -O2 a row reduction whose terms are guarded).
func TestDecodeSkipsValues(t *testing.T) {
	p, diags := lang.Check("values.te", []byte(valueSkipSource), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	g, _ := gpu.Builtin("a100")
	last := []float64{1023, 1023, 1023, 1023}
	full := map[int]int64{}
	for _, pos := range [][]float64{last, {0, 0, 0, 0}, {511, 512, 513, 256}, {1023, 0, 300, 700}} {
		in := numeric.SeededFeeds(p, 7)
		copy(in["pos"].Data, pos)
		want, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for level := 0; level <= pipeline.MaxLevel; level++ {
			t.Run(fmt.Sprintf("pos%v/O%d", pos, level), func(t *testing.T) {
				// Unsplit (FlashChunks 1): the load-aware cost model would
				// split the softmax in chunks at -O3 and up (flash
				// decoding), and o would be their combination.
				res, out := buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g, FlashChunks: 1}, in, want, tolModel)
				loads := out.Total().LoadBytes
				if slices.Equal(pos, last) {
					full[level] = loads
					return
				}
				// Each t past pos[b] leaves out den's term p[b, t] and o's
				// products. At -O0 to -O2, p is a buffer and o's 16 outputs
				// each sum p[b, t] · vc[b, t, e] (8 bytes apiece); den
				// reads p (4 bytes). At -O3 and -O4, o is a matrix-vector
				// stage: vc's row (4·D bytes) and, in each of its NT
				// tiles, the staging of p[b, t] (its loads of sc, pos and
				// m: 12 bytes); den's term inlines p the same way (12).
				perT := int64(16*8 + 4)
				if level >= 3 {
					s := res.Plan.Schedules[res.Plan.Program.Lookup("o")]
					if s.MatVec == nil || s.KMask == nil || len(s.KMask.Scalars) != 1 {
						t.Fatalf("o: %s; want a matrix-vector stage with a k mask on the run-time pos", s)
					}
					perT = int64(4*16 + s.MatVec.NT*12 + 12)
				}
				dead := livePoints(last, 1024) - livePoints(pos, 1024)
				got := full[level] - loads
				if level == 2 && got%dead == 0 && got/dead >= perT {
					// -O2 inlines p's element-wise stages into the sums'
					// terms: more bytes per t, the same for every t.
					perT = got / dead
				}
				if got != dead*perT {
					t.Errorf("%d bytes fewer loaded than at the last slot; the %d t past pos at %d bytes each: %d", got, dead, perT, dead*perT)
				}
			})
		}
	}
}
