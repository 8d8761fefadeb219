package examples

import (
	"math"
	"sort"
	"testing"
	"time"

	"tec/internal/numeric"
	"tec/lang"
	"tec/te"
)

// randomFeeds fills every placeholder of p as the test suites do
// (numeric.SeededFeeds): uniform in [-1, 1), variances in [0.5, 1.5), and
// the index tensors of gathers with ids inside their tables.
func randomFeeds(p *te.Program, seed uint64) map[string]*te.Array {
	return numeric.SeededFeeds(p, seed)
}

// check lowers the example with the given constants, failing the test on any
// diagnostic.
func check(t *testing.T, ex Example, defines map[string]string) *te.Program {
	t.Helper()
	p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: defines, Model: ex.Model})
	if diags.HasErrors() {
		t.Fatalf("lang.Check:\n%v", diags.Error())
	}
	if p == nil {
		t.Fatal("lang.Check returned no program and no error")
	}
	return p
}

// TestCheckFull checks and lowers every example at its full size.
func TestCheckFull(t *testing.T) {
	for _, ex := range All() {
		t.Run(ex.Name, func(t *testing.T) {
			start := time.Now()
			p := check(t, ex, nil)
			t.Logf("%d tensors, %d outputs, checked in %v", len(p.Tensors), len(p.Outputs), time.Since(start))
		})
	}
}

// TestRunTiny checks every example at its tiny configuration and evaluates it
// on random inputs and params: every output must be finite, and the
// evaluation must take well under a second.
func TestRunTiny(t *testing.T) {
	for _, ex := range All() {
		t.Run(ex.Name, func(t *testing.T) {
			start := time.Now()
			p := check(t, ex, ex.Tiny)
			checked := time.Since(start)
			start = time.Now()
			out, err := te.Evaluate(p, randomFeeds(p, 1), te.EvalOptions{})
			if err != nil {
				t.Fatalf("te.Evaluate: %v", err)
			}
			ran := time.Since(start)
			t.Logf("%d tensors, checked in %v, evaluated in %v", len(p.Tensors), checked, ran)
			if ran > time.Second {
				t.Errorf("evaluation took %v; the tiny configuration should run in well under a second", ran)
			}
			for _, o := range p.Outputs {
				a := out[o.Name]
				if a == nil {
					t.Errorf("output %s missing", o.Name)
					continue
				}
				for i, v := range a.Data {
					if math.IsNaN(v) || math.IsInf(v, 0) {
						t.Errorf("output %s[%d] = %v", o.Name, i, v)
						break
					}
				}
			}
		})
	}
}

// TestTinyShrinks checks that the tiny configuration makes every example
// smaller: no tensor of the tiny program is larger than 1<<18 elements.
func TestTinyShrinks(t *testing.T) {
	for _, ex := range All() {
		t.Run(ex.Name, func(t *testing.T) {
			p := check(t, ex, ex.Tiny)
			for _, x := range p.Tensors {
				if x.NumElements() > 1<<18 {
					t.Errorf("tensor %s %s has %d elements at the tiny size", x.Name, x.TypeString(), x.NumElements())
				}
			}
		})
	}
}

// TestOutputShapes checks the outputs of every example at its full size.
func TestOutputShapes(t *testing.T) {
	want := map[string]map[string]string{
		"attention":     {"y": "f32[384, 768]"},
		"bert":          {"hidden": "f32[384, 768]", "logits": "f32[384, 2]", "start": "i32[]", "end": "i32[]"},
		"conv_block":    {"y": "f32[1, 64, 56, 56]"},
		"efficientnet":  {"logits": "f32[1, 1000]"},
		"layernorm":     {"y": "f32[384, 768]"},
		"llama/decode":  {"logits": "f32[1, 128256]", "next": "i32[1]", "k_cache": "f32[16, 1, 8, 1024, 64]", "v_cache": "f32[16, 1, 8, 1024, 64]"},
		"llama/prefill": {"logits": "f32[1, 128256]", "next": "i32[1]", "k_cache": "f32[16, 1, 8, 1024, 64]", "v_cache": "f32[16, 1, 8, 1024, 64]"},
		"lstm":          {"y": "f32[100, 1, 256]"},
		"mlp":           {"y": "f32[32, 10]"},
		"mmoe":          {"y": "f32[2, 1, 1]"},
		"resnext":       {"logits": "f32[1, 1000]"},
		"rope":          {"y": "f32[128, 64]"},
		"softmax":       {"y": "f32[128, 768]"},
		"swin":          {"logits": "f32[1, 1000]"},
	}
	for _, ex := range All() {
		t.Run(ex.Name, func(t *testing.T) {
			w, ok := want[ex.Name]
			if !ok {
				t.Fatalf("no expected output shapes for %s", ex.Name)
			}
			p := check(t, ex, nil)
			if len(p.Outputs) != len(w) {
				t.Errorf("%d outputs, want %d", len(p.Outputs), len(w))
			}
			for _, o := range p.Outputs {
				if got := o.TypeString(); got != w[o.Name] {
					t.Errorf("output %s: %s, want %s", o.Name, got, w[o.Name])
				}
			}
		})
	}
}

// TestPackedWeightsUsed checks the size computations of the examples that
// pack their weights into one vector (resnext, efficientnet, swin): every
// element of every 1-D param is read by some access, so the declared size
// leaves no unused tail (an access past the end is a bounds error already).
func TestPackedWeightsUsed(t *testing.T) {
	for _, ex := range All() {
		for _, size := range []string{"tiny", "full"} {
			defines := ex.Tiny
			if size == "full" {
				defines = nil
			}
			t.Run(ex.Name+"/"+size, func(t *testing.T) {
				p := check(t, ex, defines)
				type span struct{ lo, hi int }
				reads := map[*te.Tensor][]span{}
				for _, x := range p.Tensors {
					if x.Kind != te.Compute {
						continue
					}
					te.Walk(x.Body, func(e te.Expr) bool {
						if l, ok := e.(*te.Load); ok && l.Tensor.Kind == te.Param && len(l.Tensor.Shape) == 1 {
							lo, hi := l.Index[0].ExtentBounds()
							reads[l.Tensor] = append(reads[l.Tensor], span{lo, hi})
						}
						return true
					})
				}
				for param, spans := range reads {
					sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
					next := 0 // every element before next is read
					for _, s := range spans {
						if s.lo > next {
							t.Errorf("%s: elements %d..%d are never read", param.Name, next, s.lo-1)
						}
						next = max(next, s.hi+1)
					}
					if n := param.Shape[0]; next < n {
						t.Errorf("%s: elements %d..%d of %d are never read", param.Name, next, n-1, n)
					}
				}
			})
		}
	}
}
