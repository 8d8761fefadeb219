package e2e

import (
	"strings"
	"testing"

	"tec/contraction"
	"tec/gpu"
	"tec/lang"
	"tec/partition"
	"tec/precision"
)

// concatenatedConvs are two independent 1×1 convolutions of one shape,
// which the horizontal pass concatenates along their batch axis (of one
// image each): hcat[n, o, i, j] reads x[n, ...] and w where n < 1 and
// y[n - 1, ...] and v elsewhere, so that the other branch's load is out
// of bounds at every point.
const concatenatedConvs = `
model m {
  input x: f32[1, 64, 8, 8]
  input y: f32[1, 64, 8, 8]
  param w: f32[128, 64, 1, 1]
  param v: f32[128, 64, 1, 1]
  output a = conv2d(x, w, 1, 0, 1, 1)
  output b = conv2d(y, v, 1, 0, 1, 1)
}
`

// TestConcatenatedTensorCores builds two horizontally concatenated
// convolutions in f16 and bf16 at -O4 on the A100: one tensor-core stage
// whose operands, a choice by the batch between two tensors, are staged
// in 16-byte vectors (contraction.StagingOf: the select's condition is the
// same over a vector), each chunk fetching its own batch's tensor alone;
// the simulator (race-free, every load in bounds) computes the
// reference's outputs.
func TestConcatenatedTensorCores(t *testing.T) {
	p, diags := lang.Check("hcat.te", []byte(concatenatedConvs), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	g, _ := gpu.Builtin("a100")
	in := feeds(p, 11)
	for _, mode := range []precision.Mode{precision.F16, precision.BF16} {
		t.Run(mode.String(), func(t *testing.T) {
			res, hin, want := buildHalf(t, p, in, mode, g)
			st, ok := concatenatedStaging(res.Plan)
			if !ok {
				t.Fatalf("no concatenated tensor-core stage in\n%s", res.Plan)
			}
			if st.X.Mode != contraction.StageVector || st.Y.Mode != contraction.StageVector || st.X.Width != 16 || st.Y.Width != 16 {
				t.Errorf("operands staged as %s and %s; want 16-byte vectors through registers", st.X, st.Y)
			}
			checkHalf(t, res, hin, want, "a", "b")
		})
	}
}

// concatenatedStaging returns the staging of the plan's horizontally
// concatenated tensor-core stage.
func concatenatedStaging(pl *partition.Plan) (contraction.Staging, bool) {
	for _, k := range pl.Kernels {
		for _, t := range k.Stages {
			s := pl.Schedules[t]
			if !strings.HasPrefix(t.Name, "hcat") || s == nil || !s.TensorCores {
				continue
			}
			if d, ok := contraction.Of(t); ok {
				return contraction.StagingOf(d.X, d.Y, s.TensorIn, d.MAxes, d.NAxes, d.Reduce, d.M, d.N, d.K, false), true
			}
		}
	}
	return contraction.Staging{}, false
}
