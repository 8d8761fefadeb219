package e2e

import (
	"fmt"
	"strings"
	"testing"

	"tec/internal/numeric"
	"tec/lang"
	"tec/partition"
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
			g, _ := partition.BuiltinGPU("a100")
			for level := 0; level <= pipeline.MaxLevel; level++ {
				t.Run(fmt.Sprintf("O%d", level), func(t *testing.T) {
					buildAndCompare(t, p, pipeline.Options{Level: level, GPU: g}, in, want, dt.tol)
				})
			}
		})
	}
}
