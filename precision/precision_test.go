package precision_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/examples"
	"tec/internal/numeric"
	"tec/internal/testkit/golden"
	"tec/lang"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
)

// program returns the model of an example at its tiny configuration, or
// of a file of testdata.
func program(t *testing.T, name string) *te.Program {
	t.Helper()
	file, src, defines, model := name+".te", []byte(nil), map[string]string(nil), ""
	for _, ex := range examples.All() {
		if ex.Name == name {
			file, src, defines, model = ex.File(), ex.Source(), ex.Tiny, ex.Model
		}
	}
	if src == nil {
		var err error
		file = filepath.Join("testdata", name+".te")
		if src, err = os.ReadFile(file); err != nil {
			t.Fatal(err)
		}
	}
	p, diags := lang.Check(file, src, lang.Config{Defines: defines, Model: model})
	if diags.HasErrors() {
		t.Fatalf("%s: %v", name, diags.Error())
	}
	return p
}

// TestGolden checks the program after the precision pass, as
// tec build --dump-after precision prints it, for a few models and modes.
func TestGolden(t *testing.T) {
	tests := []struct {
		model string
		mode  precision.Mode
	}{
		{"rules", precision.F16},
		{"rules", precision.TF32},
		{"layernorm", precision.F16},
		{"attention", precision.BF16},
		{"attention", precision.TF32},
		{"conv_block", precision.F16},
		{"lstm", precision.F16},
	}
	for _, tt := range tests {
		name := tt.model + "_" + tt.mode.String()
		t.Run(name, func(t *testing.T) {
			var got string
			_, err := pipeline.Build(program(t, tt.model), pipeline.Options{Precision: tt.mode, Dump: func(pass, text string) {
				if pass == "precision" {
					got = text
				}
			}})
			if err != nil {
				t.Fatal(err)
			}
			golden.CheckString(t, filepath.Join("testdata", name+".golden"), got)
		})
	}
}

// TestApply checks the pass's contract: f32 is the identity, the input
// program is not modified, applying the pass twice changes nothing, and
// inputs and outputs keep their declared types but for the inputs updated
// in place (the caches), stored in the half type.
func TestApply(t *testing.T) {
	for _, ex := range examples.All() {
		p := program(t, ex.Name)
		before := p.String()
		if q := precision.Apply(p, precision.F32); q != p {
			t.Errorf("%s: Apply at f32 returned a new program", ex.Name)
		}
		for _, m := range []precision.Mode{precision.TF32, precision.BF16, precision.F16} {
			once := precision.Apply(p, m)
			if twice := precision.Apply(once, m).String(); twice != once.String() {
				t.Errorf("%s at %s: applying twice differs:\n%s\nonce:\n%s", ex.Name, m, twice, once)
			}
			// want is the type t of the pass's result should have.
			want := func(t *te.Tensor) te.DType {
				declared := p.Lookup(t.Name)
				if h, ok := m.Half(); ok && declared.Kind == te.Input && declared.DType == te.F32 && p.Updated(declared) {
					return h
				}
				return declared.DType
			}
			for _, o := range once.Outputs {
				if o.DType != want(o) {
					t.Errorf("%s at %s: output %s is %s, want %s", ex.Name, m, o.Name, o.DType, want(o))
				}
			}
			for _, in := range once.Placeholders() {
				if in.Kind == te.Input && in.DType != want(in) {
					t.Errorf("%s at %s: input %s is %s, want %s", ex.Name, m, in.Name, in.DType, want(in))
				}
			}
		}
		if after := p.String(); after != before {
			t.Errorf("%s: input program changed", ex.Name)
		}
	}
}

// TestParse checks the names --precision takes.
func TestParse(t *testing.T) {
	for _, n := range precision.Names() {
		m, err := precision.Parse(n)
		if err != nil || m.String() != n {
			t.Errorf("Parse(%q) = %v, %v", n, m, err)
		}
	}
	if _, err := precision.Parse("fp16"); err == nil || !strings.Contains(err.Error(), "f32, tf32, bf16, f16") {
		t.Errorf("Parse(fp16): error %v, want one listing the precisions", err)
	}
}

// TestSharedReduction checks that a reduction a body shares (gelu of a
// contraction: the inlined gelu reads its argument twice) stays shared:
// copied twice, it bound its axis twice and the reference could not
// evaluate the program (found by the program fuzzer, issue 11).
func TestSharedReduction(t *testing.T) {
	src := "model m {\n  input x: f32[2, 3]\n  param w: f32[3, 4]\n  y[i, j] = gelu(sum[k](x[i, k] * w[k, j]))\n  output y\n}\n"
	p, diags := lang.Check("gelu.te", []byte(src), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	in := map[string]*te.Array{"x": te.NewArray(te.F32, []int{2, 3}), "w": te.NewArray(te.F32, []int{3, 4})}
	for _, m := range []precision.Mode{precision.TF32, precision.BF16, precision.F16} {
		q := precision.Apply(p, m)
		if _, err := te.Evaluate(q, numeric.ConformFeeds(in, q), te.EvalOptions{}); err != nil {
			t.Errorf("at %s: %v", m, err)
		}
	}
}
