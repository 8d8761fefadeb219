package e2e

import (
	"fmt"
	"testing"

	"tec/cost"
	"tec/gpu"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// mergeSource rescales partial results by their maxima against the max
// over all of them, as a flash-decoding merge does: the max is nested in
// the sum and uses none of its axes.
const mergeSource = `
model merge {
  input m: f32[64, 8]
  input o: f32[64, 8]
  y[i] = sum[c](o[i, c] * exp(m[i, c] - max[d](m[i, d])))
  output y
}
`

// TestInvariantReductionOnce checks, at every level in the simulator,
// that a reduction nested in a sum that uses none of its axes is computed
// once an element, before the sum's loop (te.InvariantReductions), not
// once a term: 8 + 8 + 8 loads an element, not 8 + 8 + 64; that the cost
// model counts the loads the code makes (cost.RequestBytes); and that the
// result is the reference's.
func TestInvariantReductionOnce(t *testing.T) {
	p, diags := lang.Check("merge.te", []byte(mergeSource), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	in := feeds(p, 3)
	want, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := gpu.Builtin("a100")
	for level := 0; level <= pipeline.MaxLevel; level++ {
		t.Run(fmt.Sprintf("O%d", level), func(t *testing.T) {
			res, out := buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g}, in, want, tolModel)
			y := res.Program.Lookup("y")
			if got, want := out.Total().LoadBytes, int64(64*(8+8+8)*4); got != want {
				t.Errorf("%d bytes loaded; want %d (the max computed once an element)", got, want)
			}
			if got, want := cost.RequestBytes(y)-y.Bytes(), out.Total().LoadBytes; got != want {
				t.Errorf("the cost model counts %d bytes of loads; the code makes %d", got, want)
			}
		})
	}
}
