package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tec/driver"
)

// TestSourceNames checks that the tensors a statement binds keep the
// statement's name, and the tensors made inside its calls are named
// call/inner, in every view of the program: tec te, explain, explain --plan,
// graph, the kernel IR, the generated CUDA and the report. The C interface
// keeps the names of the inputs, params and outputs.
func TestSourceNames(t *testing.T) {
	const file = "testdata/names.te"
	tensors := []string{"f/linear", "f/gelu", "f", "a/scores", "a/p/mx", "a/p/e", "a/p/s", "a/p", "a", "out"}

	code, stdout, stderr := runTec(t, "te", file)
	if code != exitOK {
		t.Fatalf("tec te: status %d\n%s", code, stderr)
	}
	var got []string
	for _, line := range strings.Split(stdout, "\n") {
		if name, _, ok := strings.Cut(line, " = compute("); ok {
			got = append(got, name)
		}
	}
	if !slices.Equal(got, tensors) {
		t.Errorf("tec te: compute tensors %q, want %q\n%s", got, tensors, stdout)
	}

	code, stdout, stderr = runTec(t, "explain", file)
	if code != exitOK {
		t.Fatalf("tec explain: status %d\n%s", code, stderr)
	}
	for _, want := range []string{"\nf: f32[4, 8] at stdlib/linalg.te:6:3 in linear\n", "\na: f32[4, 8] at stdlib/linalg.te:", "\na/scores: f32[4, 4] at testdata/names.te:4:3 in causal_attn\n", "read by a/scores, out"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("tec explain lacks %q:\n%s", want, stdout)
		}
	}

	for _, level := range []string{"-O0", "-O4"} {
		code, stdout, stderr = runTec(t, "explain", file, "--plan", "--summary", "--json", level)
		var r struct {
			Plan *planReport `json:"plan"`
		}
		if err := json.Unmarshal([]byte(stdout), &r); code != exitOK || err != nil || r.Plan == nil {
			t.Fatalf("explain --plan %s: status %d, %v\n%s", level, code, err, stderr)
		}
		var stages []string
		for _, k := range r.Plan.Kernels {
			stages = append(stages, k.Stages...)
		}
		if !slices.Contains(stages, "f") || !slices.Contains(stages, "a/scores") {
			t.Errorf("explain --plan %s: stages %q, want f and a/scores among them", level, stages)
		}
		if level == "-O0" && !slices.Equal(stages, tensors) {
			t.Errorf("explain --plan -O0: stages %q, want one per tensor %q", stages, tensors)
		}
	}

	code, stdout, stderr = runTec(t, "graph", file)
	if code != exitOK {
		t.Fatalf("tec graph: status %d\n%s", code, stderr)
	}
	for _, want := range []string{"\n  f [\n    label=\"f\\nf32[4, 8]\"", "\n  \"a/scores\" [\n    label=\"a/scores\\nf32[4, 4]\"", "\n  \"f/gelu\" -> f"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("tec graph lacks %q:\n%s", want, stdout)
		}
	}

	code, stdout, stderr = runTec(t, "build", file, "-O0", "--emit=", "--dump-after", "kir")
	if code != exitOK {
		t.Fatalf("--dump-after kir: status %d\n%s", code, stderr)
	}
	for _, want := range []string{"buffer f: temp f32[4, 8]\n", "buffer a/scores: temp f32[4, 4]\n", "\nkernel f grid(", "  stage a/p/mx @ stdlib/norm.te:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the kernel IR lacks %q:\n%s", want, stdout)
		}
	}

	dir := t.TempDir()
	rep := filepath.Join(dir, "report.json")
	if code, _, stderr := runTec(t, "build", file, "-O0", "-o", dir, "--emit", "cu", "--report", rep); code != exitOK {
		t.Fatalf("tec build: status %d\n%s", code, stderr)
	}
	cu, err := os.ReadFile(filepath.Join(dir, "m.cu"))
	if err != nil {
		t.Fatal(err)
	}
	// The CUDA identifiers are the names with every other character made
	// '_': f/gelu is f_gelu.
	for _, want := range []string{"\nk_f(", "// Stage f, defined at stdlib/linalg.te:", "\nk_a_scores(", "// Stage a/p/mx, defined at", "float* __restrict__ f_gelu"} {
		if !strings.Contains(string(cu), want) {
			t.Errorf("m.cu lacks %q", want)
		}
	}
	h, err := os.ReadFile(filepath.Join(dir, "m.h"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"M_INPUT_X = 0", "M_PARAM_W1 = 0", "M_OUTPUT_OUT = 0"} {
		if !strings.Contains(string(h), want) {
			t.Errorf("m.h lacks %q", want)
		}
	}
	data, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	var r driver.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	var kernels []string
	for _, k := range r.Kernels {
		kernels = append(kernels, k.Name)
	}
	if !slices.Equal(kernels, tensors) {
		t.Errorf("report: kernels %q, want one per tensor %q", kernels, tensors)
	}
}
