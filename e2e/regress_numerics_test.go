package e2e

import (
	"fmt"
	"testing"

	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// numericsRegression is a program that a level once rejected or computed
// wrongly (issue 17), and the tolerance it must now meet at every level.
type numericsRegression struct {
	name, src string
	tol       numeric.Tolerance
}

// tolExact is for programs whose every rounding point is the same on the
// reference and in the kernels, fed f32-exact inputs: at most a few f32
// roundings of single operations (2^-24 each) separate them, and none of
// them cancels. It is tight enough to see an f16 (2^-11) or bf16 (2^-8)
// rounding lost.
var tolExact = numeric.Tolerance{Rtol: 1e-6, Atol: 0}

// tolSum is for f32 sums of a dozen products, whose terms may cancel.
var tolSum = numeric.Tolerance{Rtol: 1e-5, Atol: 1e-6}

var numericsRegressions = []numericsRegression{
	{"F1_dead_branch_out_of_bounds", `
model m {
  input x: f32[2]
  y[i] = select(i - 2 >= 0, x[i - 2], 0.0) where i in 0..1
  output y
}`, tolExact},
	{"F1_dead_branch_after_inlining", `
model m {
  input a: f32[3]
  input b: f32[2]
  c[i] = select(i < 3, a[i], b[i - 3]) where i in 0..4
  y = c[1] * 2.0
  output y
}`, tolExact},
	{"F2_reversed_contraction", `
model m {
  input a: f32[5]
  input b: f32[5]
  y = sum[k](a[4 - k] * b[k])
  output y
}`, tolSum},
	{"F2_reversed_matmul_operands", `
model m {
  input a: f32[3, 12]
  input b: f32[12, 12]
  y[i, j] = sum[k](a[i, 11 - k] * b[k, 11 - j]) where j in 0..11
  z[i, j] = sum[k](a[i, j - k + 5] * b[k, j]) where j in 0..6, k in 0..5
  output y, z
}`, tolSum},
	{"F7_full_f16_inlined", `
model m {
  input x: f32[13]
  c = full(f16[13], 0.3)
  t4[i] = x[i] * 0.5 + c[i]
  t6[i] = sum[k](t4[i + k]) where i in 0..6, k in 0..7
  w[i] = c[i] * 1.0
  output t6, w
}`, tolExact},
	{"F7_full_bf16_inlined", `
model m {
  input x: f32[13]
  c = full(bf16[13], 0.3)
  w[i] = x[i] * c[i]
  v[i] = c[i] * 1.0
  output w, v
}`, tolExact},
	{"F9_crossed_matmul_chains", `
model m {
  input x: f32[16, 16]
  param w8: f32[16, 24]
  param w10: f32[24, 16]
  param w21: f32[24, 16]
  param w23: f32[16, 24]
  a = matmul(x, w8)
  b = matmul(a, w10)
  t[i, j] = w10[j, i]
  c = matmul(t, w21)
  d = matmul(c, w23)
  output b, d
}`, tolModel},
}

// TestRegressNumerics runs each program of numericsRegressions through the
// front end, the pipeline at every level on the A100 model and the
// simulator, and compares the outputs with the reference evaluator.
func TestRegressNumerics(t *testing.T) {
	g, _ := gpu.Builtin("a100")
	for _, rc := range numericsRegressions {
		p, diags := lang.Check(rc.name+".te", []byte(rc.src), lang.Config{})
		if diags.HasErrors() {
			t.Errorf("%s: lang.Check:\n%v", rc.name, diags.Error())
			continue
		}
		in := f32ExactFeeds(p, 1)
		want, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Errorf("%s: reference: %v", rc.name, err)
			continue
		}
		for level := 0; level <= pipeline.MaxLevel; level++ {
			t.Run(fmt.Sprintf("%s/O%d", rc.name, level), func(t *testing.T) {
				buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g}, in, want, rc.tol)
			})
		}
	}
}

// f32ExactFeeds returns feeds(p, seed) with f32 values rounded to f32, so
// that the reference, which keeps f32 tensors in float64, and the kernels
// start from the same numbers.
func f32ExactFeeds(p *te.Program, seed uint64) map[string]*te.Array {
	in := feeds(p, seed)
	for _, a := range in {
		if a.DType == te.F32 {
			for i, v := range a.Data {
				a.Data[i] = float64(float32(v))
			}
		}
	}
	return in
}
