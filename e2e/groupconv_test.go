package e2e

import (
	"fmt"
	"testing"

	"tec/gpu"
	"tec/lang"
	"tec/pipeline"
	"tec/precision"
	"tec/schedule"
	"tec/te"
)

// groupedConvSource is a grouped 3×3 convolution (16 groups, each of 16
// output channels reading its group's 8 input channels, padded, of the
// image size and stride given: ResNeXt's third stage at half its width),
// its bias and ReLU, then a 1×1 convolution.
const groupedConvSource = `
model m {
  input x: f32[1, 128, %[1]d, %[1]d]
  param w: f32[256, 8, 3, 3]
  param b: f32[256]
  param v: f32[32, 256, 1, 1]
  z = conv2d(x, w, %[2]d, 1, 1, 16)
  y[n, o, i, j] = max(z[n, o, i, j] + b[o], 0)
  output out = conv2d(y, v, 1, 0, 1, 1)
}
`

// TestGroupedConvolutions builds a grouped convolution at -O3 and -O4 (the
// levels of the groups pass) and in f16 and bf16 at -O4, at strides 1 and
// 2 (of 14×14 pixels), and compares the simulator's output (race-free)
// with the reference's. The groups pass makes it a batched contraction,
// one a group, with its bias and ReLU as its epilogue: in f16 and bf16 on
// the A100 a tensor-core stage of 16 batches of 16 channels by the pixels
// over 72 inputs, where it was computed point by point; in f32 at stride
// 1 a batched contraction on the CUDA cores. (In f32 at stride 2 the cost
// model prices a thread an output, 9 of its points' loads in flight,
// about as fast, and may keep it.)
func TestGroupedConvolutions(t *testing.T) {
	g, _ := gpu.Builtin("a100")
	for _, stride := range []int{1, 2} {
		p, diags := lang.Check("conv.te", []byte(fmt.Sprintf(groupedConvSource, 14*stride, stride)), lang.Config{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		in := feeds(p, 7)
		want, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for level := 3; level <= pipeline.MaxLevel; level++ {
			t.Run(fmt.Sprintf("stride %d O%d", stride, level), func(t *testing.T) {
				res, _ := buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g}, in, want, tolModel)
				if s := convStage(t, res); stride == 1 && (s == nil || s.Batch != 16) {
					t.Errorf("the convolution's stage: %v; want a contraction of 16 batches", s)
				}
			})
		}
		for _, mode := range []precision.Mode{precision.F16, precision.BF16} {
			t.Run(fmt.Sprintf("stride %d %s", stride, mode), func(t *testing.T) {
				res, hin, hwant := buildHalf(t, p, in, mode, g)
				s := convStage(t, res)
				if s == nil || !s.TensorCores || s.Batch != 16 || s.N != 16 || s.K != 72 {
					t.Errorf("the convolution's stage: %v; want 16 batches of N = 16, K = 72 on tensor cores", s)
				}
				checkHalf(t, res, hin, hwant, "out")
			})
		}
	}
}

// convStage returns the schedule of the stage that computes the grouped
// convolution of groupedConvSource (with its epilogue, y, where the
// vertical pass inlined it), nil if it is no contraction.
func convStage(t *testing.T, res *pipeline.Result) *schedule.Schedule {
	t.Helper()
	for _, name := range []string{"y", "z"} {
		if k, at := stageOf(res.Plan, name); k != nil {
			if s := res.Plan.Schedules[k.Stages[at]]; s.Kind == schedule.Contraction {
				return s
			}
		}
	}
	return nil
}
