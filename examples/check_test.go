//go:build checker

package examples

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"tec/lang"
	"tec/te"
)

// randomFeeds fills every placeholder of p from a seeded generator: uniform
// in [-1, 1), except placeholders whose name ends in "var" (variances of batch
// normalisation), uniform in [0.5, 1.5).
func randomFeeds(p *te.Program, seed uint64) map[string]*te.Array {
	rng := rand.New(rand.NewPCG(seed, 7))
	feeds := map[string]*te.Array{}
	for _, t := range p.Placeholders() {
		a := te.NewArray(t.DType, t.Shape)
		for i := range a.Data {
			if strings.HasSuffix(t.Name, "var") {
				a.Data[i] = 0.5 + rng.Float64()
			} else {
				a.Data[i] = 2*rng.Float64() - 1
			}
		}
		feeds[t.Name] = a
	}
	return feeds
}

// check lowers the example with the given constants, failing the test on any
// diagnostic.
func check(t *testing.T, ex Example, defines map[string]string) *te.Program {
	t.Helper()
	p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: defines})
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
