package e2e

import (
	"fmt"
	"testing"

	"tec/analysis"
	"tec/lang"
	"tec/pipeline"
)

// TestLoopParamsReport checks what tec explain --plan does with params
// declared in a loop (issue 23: panic: analysis: tensor "w.1" is not in
// program "m" at -O2 and up): it analyses the program, builds it, whose
// transforms number the shared params anew in their copies, and then
// reports the analysis, which must still find every tensor and say the
// same as before the build.
func TestLoopParamsReport(t *testing.T) {
	const loop = `model m {
  input x: f32[4]
  h = x
  for s in 0..2 {
    param w: f32[4]
    h = h * w
  }
  y = h + 1.0
  output y
}
`
	// The stages example of docs/language.md ("Params declared in a loop").
	const stages = `const STAGES = 3

fn width(s) = 4 * (s + 1)

model stages {
  input x: f32[1, 3, 8, 8]
  h = x
  c = 3
  for s in 0..STAGES {
    param w: f32[width(s), c, 3, 3]
    param b: f32[width(s)]
    h = relu(conv2d_bias(h, w, b, 1, 1, 1, 1))
    c = width(s)
  }
  param fc: f32[c, 10]
  param fb: f32[10]
  output y = linear(global_avg_pool2d(h), fc, fb)
}
`
	for _, src := range []struct{ name, text string }{{"loop", loop}, {"stages", stages}} {
		for level := 0; level <= pipeline.MaxLevel; level++ {
			t.Run(fmt.Sprintf("%s/O%d", src.name, level), func(t *testing.T) {
				p, diags := lang.Check(src.name+".te", []byte(src.text), lang.Config{})
				if diags.HasErrors() {
					t.Fatalf("lang.Check:\n%v", diags.Error())
				}
				a, err := analysis.Analyze(p, analysis.Options{})
				if err != nil {
					t.Fatal(err)
				}
				before := a.Report()
				if _, err := pipeline.Build(a.Program, pipeline.Options{Level: level}); err != nil {
					t.Fatal(err)
				}
				after := a.Report()
				if len(after.Tensors) != len(before.Tensors) {
					t.Fatalf("%d tensors reported after the build, %d before", len(after.Tensors), len(before.Tensors))
				}
				for i, tr := range after.Tensors {
					if b := before.Tensors[i]; tr.Name != b.Name || tr.Live != b.Live || tr.Level != b.Level {
						t.Errorf("tensor %s live %+v level %d after the build, %s %+v %d before", tr.Name, tr.Live, tr.Level, b.Name, b.Live, b.Level)
					}
				}
			})
		}
	}
}
