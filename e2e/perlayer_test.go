package e2e

import (
	"fmt"
	"strings"
	"testing"

	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// stagesSource is a small EfficientNet-style network whose stages widen:
// each stage declares its own weights in the loop (w.0, b.0, w.1, ...), of
// that stage's shape, so nothing is packed. DT is the dtype of the model.
const stagesSource = `
const H = 8
const STAGES = 3

fn width(s) = 4 * (s + 1)

model stages {
  input x: DT[1, 3, H, H]
  h = x
  c = 3
  for s in 0..STAGES {
    param w: DT[width(s), c, 3, 3]
    param b: DT[width(s)]
    h = DT(relu(conv2d_bias(h, w, b, 1, 1, 1, 1)))
    c = width(s)
  }
  param fc: DT[c, 10]
  param fb: DT[10]
  output y = linear(global_avg_pool2d(h), fc, fb)
}
`

// TestPerLayerParams checks a model whose params are declared in a loop, one
// per iteration with its own shape, at every level against the reference,
// in f32 and (through the standard library's generic functions) in f16.
func TestPerLayerParams(t *testing.T) {
	wantParams := "w.0 [4 3 3 3], b.0 [4], w.1 [8 4 3 3], b.1 [8], w.2 [12 8 3 3], b.2 [12], fc [12 10], fb [10]"
	for _, dt := range []struct {
		name string
		tol  numeric.Tolerance
	}{{"f32", tolModel}, {"f16", numeric.Tolerance{Rtol: 4e-3, Atol: 1e-3}}} {
		t.Run(dt.name, func(t *testing.T) {
			src := strings.ReplaceAll(stagesSource, "DT", dt.name)
			p, diags := lang.Check("stages.te", []byte(src), lang.Config{})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			var params []string
			for _, ph := range p.Placeholders() {
				if ph.Kind == te.Param {
					params = append(params, fmt.Sprintf("%s %v", ph.Name, ph.Shape))
				}
			}
			if got := strings.Join(params, ", "); got != wantParams {
				t.Fatalf("params:\n got %s\nwant %s", got, wantParams)
			}
			in := numeric.SeededFeeds(p, 5)
			want, err := te.Evaluate(p, in, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := want["y"].DType.String(); got != dt.name {
				t.Errorf("y is %s, want %s", got, dt.name)
			}
			g, _ := gpu.Builtin("a100")
			for level := 0; level <= pipeline.MaxLevel; level++ {
				t.Run(fmt.Sprintf("O%d", level), func(t *testing.T) {
					buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g}, in, want, dt.tol)
				})
			}
		})
	}
}

// halfSource calls the generic normalisations and layout functions of the
// standard library on bf16 and f16 tensors: their statistics stay f32, their
// results are stored in the input's dtype.
const halfSource = `
model half {
  input x: f16[4, 8]
  input z: bf16[2, 4, 3, 3]
  param g: f16[8]
  param b: f16[8]
  param m: bf16[4]
  param v: bf16[4]
  param gz: bf16[4]
  param bz: bf16[4]
  n = layernorm(x, g, b, 1e-5)
  p = softmax(transpose(n))
  q = max_pool2d(batchnorm2d(z, m, v, gz, bz, 1e-5), 2, 1, 0)
  output p, r = flatten(concat4(q, q, 1))
}
`

// TestGenericStdlibHalfLevels checks halfSource at every level against the
// reference.
func TestGenericStdlibHalfLevels(t *testing.T) {
	p, diags := lang.Check("half.te", []byte(halfSource), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	in := numeric.SeededFeeds(p, 9)
	want, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want["p"].DType != te.F16 || want["r"].DType != te.BF16 {
		t.Fatalf("p is %s, r is %s; want f16 and bf16", want["p"].DType, want["r"].DType)
	}
	g, _ := gpu.Builtin("a100")
	tol := numeric.Tolerance{Rtol: 1e-2, Atol: 1e-3}
	for level := 0; level <= pipeline.MaxLevel; level++ {
		t.Run(fmt.Sprintf("O%d", level), func(t *testing.T) {
			buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g}, in, want, tol)
		})
	}
}
