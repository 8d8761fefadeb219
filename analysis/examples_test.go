package analysis_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tec/analysis"
	"tec/examples"
	"tec/internal/testkit/golden"
	"tec/lang"
	"tec/te"
)

// sixModels are the models of the Souffle evaluation among the examples.
var sixModels = []string{"bert", "resnext", "lstm", "efficientnet", "swin", "mmoe"}

// analyseExample lowers an example at its tiny configuration and analyses it.
func analyseExample(t *testing.T, name string) *analysis.Analysis {
	t.Helper()
	i := slices.IndexFunc(examples.All(), func(e examples.Example) bool { return e.Name == name })
	if i < 0 {
		t.Fatalf("no example %q", name)
	}
	ex := examples.All()[i]
	p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: ex.Tiny, Model: ex.Model})
	if p == nil {
		t.Fatalf("%s: %v", name, diags)
	}
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestExamplesGolden records, for each of the six models at its tiny
// configuration, every TE's dependence, intensity class and ratio, every
// reused tensor's readers with their spatial and temporal reuse, and the
// summary. go test -update rewrites the files.
func TestExamplesGolden(t *testing.T) {
	for _, name := range sixModels {
		t.Run(name, func(t *testing.T) {
			a := analyseExample(t, name)
			var b bytes.Buffer
			fmt.Fprintf(&b, "# %s at its tiny configuration\n\nTEs:\n", name)
			for _, x := range a.TEs {
				fmt.Fprintf(&b, "  %-12s %s %s %.4g\n", x.Tensor.Name, x.Dependence.Short(), x.Intensity.Class.Short(), x.Intensity.Ratio)
			}
			fmt.Fprintf(&b, "\nreuse:\n")
			for _, r := range a.Reuse {
				fmt.Fprintf(&b, "  %s: read by %s\n", r.Tensor.Name, join(r.Readers))
				for _, g := range r.Spatial {
					fmt.Fprintf(&b, "    spatial {%s}\n", join(g))
				}
				if len(r.Temporal) > 0 {
					fmt.Fprintf(&b, "    temporal %s\n", join(r.Temporal))
				}
			}
			s := a.Summary()
			fmt.Fprintf(&b, "\nsummary: %d OR, %d MR, %d opaque; %d CI, %d MI; %d FLOPs; %d compulsory bytes\n",
				s.OneToOne, s.OneToMany, s.Opaque, s.ComputeIntensive, s.MemoryIntensive, s.FLOPs, s.CompulsoryBytes)
			golden.Check(t, filepath.Join("testdata", "examples", name+".golden"), b.Bytes())
		})
	}
}

func join(ts []*te.Tensor) string {
	var ns []string
	for _, t := range ts {
		ns = append(ns, t.Name)
	}
	return strings.Join(ns, ", ")
}

// TestLSTMExampleWeightReuse: every cell of a layer reads that layer's
// weights from the stacked W, U and b, one step after another, so all the
// reads of each are temporal reuse; the cells of one diagonal wavefront
// (same t + l) are independent, which is spatial reuse.
func TestLSTMExampleWeightReuse(t *testing.T) {
	a := analyseExample(t, "lstm") // T=3, L=2
	const T, L = 3, 2
	for _, w := range []string{"W", "U", "b"} {
		r := a.ReuseOf(a.Program.Lookup(w))
		if r == nil {
			t.Fatalf("%s is not reused", w)
		}
		if len(r.Readers) != T*L || !slices.Equal(r.Temporal, r.Readers) {
			t.Errorf("%s: readers %s, temporal %s; want %d cells, all temporal", w, join(r.Readers), join(r.Temporal), T*L)
		}
		for _, g := range r.Readers {
			if !strings.HasPrefix(g.Name, "lstm_cell/g") || g.Scope[len(g.Scope)-1] != "lstm_cell" {
				t.Errorf("%s is read by %s in %v, not by a cell's gates", w, g.Name, g.Scope)
			}
		}
		if len(r.Spatial) != T+L-3 {
			t.Errorf("%s: spatial groups %d, want %d wavefronts of two or more cells", w, len(r.Spatial), T+L-3)
		}
	}
}

// TestBERTExampleQKVReuse: the fused QKV projection is read by q, k and v,
// which are independent of each other: spatial reuse, in every layer.
func TestBERTExampleQKVReuse(t *testing.T) {
	a := analyseExample(t, "bert") // L=2
	var groups int
	for _, x := range a.TEs {
		if x.Tensor.Name != "a/q" && !strings.HasPrefix(x.Tensor.Name, "a/q.") {
			continue
		}
		qkv := a.Graph.Producers(x.Tensor)[0]
		r := a.ReuseOf(qkv)
		if r == nil || len(r.Spatial) != 1 {
			t.Fatalf("the QKV projection %s read by %s has no spatial reuse: %+v", qkv.Name, x.Tensor.Name, r)
		}
		var got []string
		for _, g := range r.Spatial[0] {
			got = append(got, strings.SplitN(g.Name, ".", 2)[0])
		}
		if !slices.Equal(got, []string{"a/q", "a/k", "a/v"}) {
			t.Errorf("spatial reuse of %s: {%s}, want {a/q, a/k, a/v}", qkv.Name, join(r.Spatial[0]))
		}
		for _, g := range r.Spatial[0] {
			if d := a.TE(g).Dependence; d != analysis.OneToOne {
				t.Errorf("%s is %v, want one-relies-on-one", g.Name, d)
			}
		}
		groups++
	}
	if groups != 2 {
		t.Errorf("found %d QKV groups, want one per layer (2)", groups)
	}
}

// BenchmarkExamples analyses the examples at their full (published) sizes,
// lowered by the front end; lstm-1000 runs ten times as many steps.
func BenchmarkExamples(b *testing.B) {
	cases := []struct {
		name, example string
		defines       map[string]string
	}{
		{"lstm-100", "lstm", nil},
		{"lstm-1000", "lstm", map[string]string{"T": "1000"}},
		{"bert-base", "bert", nil},
		{"swin-b", "swin", nil},
		{"resnext-101", "resnext", nil},
		{"efficientnet-b0", "efficientnet", nil},
		{"mmoe", "mmoe", nil},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			ex, ok := examples.Lookup(c.example)
			if !ok {
				b.Fatalf("no example %q", c.example)
			}
			p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: c.defines})
			if p == nil {
				b.Fatalf("%s: %v", c.name, diags)
			}
			for b.Loop() {
				if _, err := analysis.Analyze(p, analysis.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(p.Tensors)), "tensors")
		})
	}
}
