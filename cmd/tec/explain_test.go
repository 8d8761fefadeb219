package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/analysis"
	"tec/internal/testkit/tooltest"
)

// runTecEnv runs tec in-process with the environment variables in vars.
func runTecEnv(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
	code = e.main(args)
	return code, out.String(), errb.String()
}

func TestExplain(t *testing.T) {
	code, out, stderr := runTec(t, "explain", "testdata/softmax.te")
	if code != exitOK {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"model softmax:",
		"one-relies-on-many",
		"one-relies-on-one",
		" -> x[",
		"summary:",
		"compulsory bytes:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, sum, _ := runTec(t, "explain", "--summary", "testdata/softmax.te")
	if code != exitOK || strings.Contains(sum, " -> ") || !strings.Contains(sum, "FLOPs:") {
		t.Errorf("explain --summary: status %d, output:\n%s", code, sum)
	}
}

func TestExplainJSON(t *testing.T) {
	code, out, stderr := runTec(t, "explain", "--json", "--threshold", "0.5", "testdata/softmax.te")
	if code != exitOK {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	var r analysis.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("the output is not a report: %v\n%s", err, out)
	}
	if r.Program != "softmax" || r.Threshold != 0.5 || len(r.TEs) != r.Summary.TEs || len(r.Tensors) != r.Summary.Tensors {
		t.Errorf("report: %+v", r)
	}
	for _, x := range r.TEs {
		if x.Location == "" || len(x.Accesses) == 0 || x.Accesses[0].Relation == "" {
			t.Errorf("TE %+v lacks a location or accesses", x)
		}
	}
	// The keys are the documented ones.
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"program", "threshold", "summary", "tensors", "tes", "reuse"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no key %q", k)
		}
	}
}

func TestGraph(t *testing.T) {
	dir := t.TempDir()
	dotFile := filepath.Join(dir, "g.dot")
	if code, _, stderr := runTec(t, "graph", "testdata/softmax.te", "-o", dotFile); code != exitOK {
		t.Fatalf("graph -o g.dot: status %d, stderr:\n%s", code, stderr)
	}
	b, err := os.ReadFile(dotFile)
	if err != nil || !bytes.HasPrefix(b, []byte("strict digraph softmax {")) || !bytes.Contains(b, []byte("tooltip=")) {
		t.Errorf("g.dot: %v\n%s", err, b)
	}
	code, out, _ := runTec(t, "graph", "testdata/softmax.te", "--collapse", "call")
	if code != exitOK || !strings.HasPrefix(out, "strict digraph") {
		t.Errorf("graph to stdout: status %d, output:\n%s", code, out)
	}

	// Without Graphviz, SVG fails with the way to install it.
	svg := filepath.Join(dir, "g.svg")
	code, _, stderr := runTecEnv(t, map[string]string{"PATH": dir}, "graph", "testdata/softmax.te", "-o", svg)
	if code != exitUser || !strings.Contains(stderr, "apt-get install graphviz") || !strings.Contains(stderr, "-o "+filepath.Join(dir, "g.dot")) {
		t.Errorf("graph -o g.svg without dot: status %d, stderr:\n%s", code, stderr)
	}
	tooltest.Dot(t) // skips where dot is missing or does not run
	code, _, stderr = runTecEnv(t, map[string]string{"PATH": os.Getenv("PATH")}, "graph", "testdata/softmax.te", "-o", svg)
	if code != exitOK {
		t.Fatalf("graph -o g.svg: status %d, stderr:\n%s", code, stderr)
	}
	if b, err := os.ReadFile(svg); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("g.svg: %v\n%.200s", err, b)
	}
}

func TestAnalysisUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"explain without file", []string{"explain"}, "want one FILE, got 0 arguments"},
		{"bad threshold", []string{"explain", "--threshold", "0", "testdata/softmax.te"}, "-threshold must be a positive finite number"},
		{"bad collapse", []string{"graph", "--collapse", "sideways", "testdata/softmax.te"}, "-collapse must be none, call, loop or a depth"},
		{"bad extension", []string{"graph", "-o", "g.txt", "testdata/softmax.te"}, "cannot write .txt files"},
		{"no extension", []string{"graph", "-o", "g", "testdata/softmax.te"}, "want a .dot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runTec(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("status %d, stderr %q; want %d and %q", code, stderr, exitUsage, tt.want)
			}
		})
	}
}
