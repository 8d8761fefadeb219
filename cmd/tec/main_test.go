package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"tec/internal/tensorio"
	"tec/te"
)

// runTec runs tec in-process with args and returns its status and outputs.
func runTec(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code = e.main(args)
	return code, out.String(), errb.String()
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no arguments", nil, "Usage:"},
		{"unknown command", []string{"chek"}, "did you mean 'tec check'?"},
		{"check without file", []string{"check"}, "want one FILE, got 0 arguments"},
		{"check two files", []string{"check", "a.te", "b.te"}, "want one FILE, got 2 arguments"},
		{"bad -D", []string{"check", "-D", "N", "testdata/softmax.te"}, "want NAME=VALUE"},
		{"unknown flag", []string{"check", "--frobnicate", "testdata/softmax.te"}, "flag provided but not defined: -frobnicate"},
		{"bad diagnostics", []string{"check", "--diagnostics=xml", "testdata/softmax.te"}, "-diagnostics must be text or json"},
		{"unknown device", []string{"run", "testdata/softmax.te", "--device", "tpu"}, `unknown device "tpu"`},
		{"bad fill", []string{"run", "testdata/softmax.te", "--fill", "gaussian"}, `unknown fill "gaussian"`},
		{"bad input flag", []string{"run", "testdata/softmax.te", "--input", "x.npy"}, "want NAME=@FILE.npy"},
		{"negative tolerance", []string{"run", "testdata/softmax.te", "--rtol", "-1"}, "must be non-negative"},
		{"fmt -w and -l", []string{"fmt", "-w", "-l", "testdata/softmax.te"}, "cannot be used together"},
		{"help unknown", []string{"help", "nope"}, `unknown command "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runTec(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit status %d, want %d", code, exitUsage)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q does not contain %q", stderr, tt.want)
			}
		})
	}
}

// TestHelpDocumentsEveryFlag checks that "tec help" lists every command, that
// "tec CMD -h" prints a usage line and that docs/cli.md documents every flag
// that -h shows.
func TestHelpDocumentsEveryFlag(t *testing.T) {
	code, out, _ := runTec(t, "help")
	if code != exitOK {
		t.Fatalf("tec help: status %d", code)
	}
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	flagLine := regexp.MustCompile(`^  -(\w+)`)
	for _, c := range commands() {
		if !strings.Contains(out, c.name) {
			t.Errorf("tec help does not list %q", c.name)
		}
		code, help, _ := runTec(t, c.name, "-h")
		if code != exitOK || !strings.Contains(help, "usage: tec "+c.name) {
			t.Errorf("tec %s -h: status %d, output:\n%s", c.name, code, help)
		}
		section := docSection(string(doc), "## tec "+c.name)
		if section == "" {
			t.Errorf("docs/cli.md has no section %q", "## tec "+c.name)
			continue
		}
		for _, line := range strings.Split(help, "\n") {
			if m := flagLine.FindStringSubmatch(line); m != nil && !strings.Contains(section, "-"+m[1]) {
				t.Errorf("docs/cli.md, section tec %s, does not document flag -%s", c.name, m[1])
			}
		}
	}
}

// docSection returns the text of the markdown section that starts with the
// heading line head, up to the next heading of the same level.
func docSection(doc, head string) string {
	i := strings.Index(doc, head+"\n")
	if i < 0 {
		return ""
	}
	rest := doc[i+len(head)+1:]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func TestCheck(t *testing.T) {
	code, out, stderr := runTec(t, "check", "testdata/softmax.te")
	if code != exitOK {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	if want := "model softmax: 1 inputs, 0 params, 4 computed tensors, 1 outputs"; !strings.Contains(out, want) {
		t.Errorf("stdout %q lacks %q", out, want)
	}
	if code, out, _ := runTec(t, "check", "-q", "testdata/softmax.te"); code != exitOK || out != "" {
		t.Errorf("check -q: status %d, stdout %q", code, out)
	}
	if code, _, stderr := runTec(t, "check", "testdata/nonexistent.te"); code != exitUser || !strings.Contains(stderr, "nonexistent.te") {
		t.Errorf("missing file: status %d, stderr %q", code, stderr)
	}
}

func TestCheckReportsEveryError(t *testing.T) {
	code, _, stderr := runTec(t, "check", "testdata/bad.te")
	if code != exitUser {
		t.Fatalf("status %d, want %d", code, exitUser)
	}
	for _, want := range []string{"testdata/bad.te:5:10", "exq", "did you mean 'exp'?", "testdata/bad.te:6:", "x[i + 1]", "^"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "panic") {
		t.Errorf("stderr shows a panic:\n%s", stderr)
	}
}

func TestCheckJSONDiagnostics(t *testing.T) {
	code, out, _ := runTec(t, "check", "--diagnostics=json", "testdata/bad.te")
	if code != exitUser {
		t.Fatalf("status %d, want %d", code, exitUser)
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	n := 0
	for sc.Scan() {
		var d struct {
			File  string `json:"file"`
			Range struct {
				Start struct{ Line, Character int }
			} `json:"range"`
			Severity string `json:"severity"`
			Code     string `json:"code"`
			Message  string `json:"message"`
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		if d.File != "testdata/bad.te" || d.Severity != "error" || d.Code == "" || d.Message == "" {
			t.Errorf("diagnostic %+v", d)
		}
		if n == 0 && (d.Range.Start.Line != 4 || d.Range.Start.Character != 9) {
			t.Errorf("first diagnostic at %d:%d, want 0-based 4:9", d.Range.Start.Line, d.Range.Start.Character)
		}
		n++
	}
	if n < 2 {
		t.Errorf("%d JSON diagnostics, want at least 2", n)
	}
}

func TestFmt(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/unformatted.te")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "m.te")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runTec(t, "fmt", "-l", file)
	if code != exitOK || strings.TrimSpace(out) != file {
		t.Fatalf("fmt -l: status %d, stdout %q", code, out)
	}
	code, formatted, _ := runTec(t, "fmt", file)
	if code != exitOK || !strings.Contains(formatted, "  y[i] = x[i] * 2 # double\n") {
		t.Fatalf("fmt: status %d, output:\n%s", code, formatted)
	}
	if code, _, _ := runTec(t, "fmt", "-w", file); code != exitOK {
		t.Fatalf("fmt -w: status %d", code)
	}
	got, _ := os.ReadFile(file)
	if string(got) != formatted {
		t.Errorf("fmt -w wrote\n%s\nwant\n%s", got, formatted)
	}
	if _, out, _ := runTec(t, "fmt", "-l", file); out != "" {
		t.Errorf("fmt -l after -w lists %q", out)
	}
	bad := filepath.Join(dir, "bad.te")
	os.WriteFile(bad, []byte("model m {\n  y = \n"), 0o644)
	if code, _, stderr := runTec(t, "fmt", bad); code != exitUser || !strings.Contains(stderr, "bad.te:") {
		t.Errorf("fmt of a syntax error: status %d, stderr %q", code, stderr)
	}
}

func TestTe(t *testing.T) {
	code, out, stderr := runTec(t, "te", "testdata/softmax.te")
	if code != exitOK {
		t.Fatalf("status %d: %s", code, stderr)
	}
	for _, want := range []string{"x", "m", "e", "s", "y", "softmax.te:"} {
		if !strings.Contains(out, want) {
			t.Errorf("tec te output lacks %q:\n%s", want, out)
		}
	}
}

func writeNPZ(t *testing.T, path string, arrays map[string]*te.Array) {
	t.Helper()
	if err := tensorio.WriteNPZ(path, arrays); err != nil {
		t.Fatal(err)
	}
}

func f32(shape []int, data ...float64) *te.Array {
	return &te.Array{DType: te.F32, Shape: shape, Data: data}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.npz")
	params := filepath.Join(dir, "params.npz")
	out := filepath.Join(dir, "out.npz")
	writeNPZ(t, in, map[string]*te.Array{"x": f32([]int{3}, 1, 2, 3)})
	writeNPZ(t, params, map[string]*te.Array{"scale": f32([]int{3}, 2, 2, 0.5)})

	code, stdout, stderr := runTec(t, "run", "testdata/scale.te", "--inputs", in, "--params", params, "--outputs", out)
	if code != exitOK {
		t.Fatalf("status %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "y f32[3]") || !strings.Contains(stdout, "[2, 4, 1.5]") {
		t.Errorf("stdout:\n%s", stdout)
	}
	got, err := tensorio.ReadNPZ(out)
	if err != nil {
		t.Fatal(err)
	}
	if y := got["y"]; y == nil || y.Data[0] != 2 || y.Data[1] != 4 || y.Data[2] != 1.5 {
		t.Errorf("outputs written: %v", got)
	}

	// The outputs compare equal to themselves and differ from altered ones.
	if code, stdout, _ := runTec(t, "run", "testdata/scale.te", "--inputs", in, "--params", params, "--expected", out); code != exitOK ||
		!strings.Contains(stdout, "match the expected values") {
		t.Errorf("--expected of its own outputs: status %d\n%s", code, stdout)
	}
	wrong := filepath.Join(dir, "wrong.npz")
	writeNPZ(t, wrong, map[string]*te.Array{"y": f32([]int{3}, 2, 4.1, 1.5)})
	code, stdout, _ = runTec(t, "run", "testdata/scale.te", "--inputs", in, "--params", params, "--expected", wrong)
	if code != exitUser || !strings.Contains(stdout, "MISMATCH y[1]: got 4, want 4.0999999") {
		t.Errorf("--expected of wrong outputs: status %d\n%s", code, stdout)
	}

	// A single input from an .npy file, the param filled.
	xnpy := filepath.Join(dir, "x.npy")
	if err := tensorio.WriteNPYFile(xnpy, f32([]int{3}, 1, 1, 1)); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runTec(t, "run", "testdata/scale.te", "--input", "x=@"+xnpy, "--fill", "ones")
	if code != exitOK || !strings.Contains(stdout, "[1, 1, 1]") || !strings.Contains(stdout, "filled with ones (seed 0): scale") {
		t.Errorf("--input with --fill ones: status %d\n%s%s", code, stdout, stderr)
	}

	// --save-feeds writes what was bound, filled or not, one .npy each: run
	// again from those files, the outputs are the same.
	feeds := filepath.Join(dir, "feeds")
	code, _, stderr = runTec(t, "run", "testdata/scale.te", "--input", "x=@"+xnpy, "--fill", "random", "--seed", "7",
		"--save-feeds", feeds, "--outputs", out)
	if code != exitOK {
		t.Fatalf("--save-feeds: status %d\n%s", code, stderr)
	}
	x, err := tensorio.ReadNPYFile(filepath.Join(feeds, "x.npy"), nil)
	if err != nil || x.Data[0] != 1 {
		t.Errorf("saved x: %v, %v", x, err)
	}
	code, stdout, stderr = runTec(t, "run", "testdata/scale.te", "--input", "x=@"+filepath.Join(feeds, "x.npy"),
		"--input", "scale=@"+filepath.Join(feeds, "scale.npy"), "--expected", out, "--rtol", "0", "--atol", "0")
	if code != exitOK || !strings.Contains(stdout, "match the expected values") {
		t.Errorf("run from the saved feeds: status %d\n%s%s", code, stdout, stderr)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	wrongShape := filepath.Join(dir, "shape.npz")
	writeNPZ(t, wrongShape, map[string]*te.Array{"x": f32([]int{4}, 1, 2, 3, 4)})
	extra := filepath.Join(dir, "extra.npz")
	writeNPZ(t, extra, map[string]*te.Array{"x": f32([]int{3}, 1, 2, 3), "scael": f32([]int{3}, 1, 2, 3)})
	intX := filepath.Join(dir, "int.npz")
	writeNPZ(t, intX, map[string]*te.Array{"x": {DType: te.I32, Shape: []int{3}, Data: []float64{1, 2, 3}}})
	expectedMore := filepath.Join(dir, "more.npz")
	writeNPZ(t, expectedMore, map[string]*te.Array{"y": f32([]int{3}, 0, 0, 0), "scael": f32([]int{3}, 1, 2, 3)})
	misspelt := filepath.Join(dir, "misspelt.npz")
	writeNPZ(t, misspelt, map[string]*te.Array{"Y": f32([]int{3}, 0, 0, 0)})
	int64X := filepath.Join(dir, "int64.npz")
	writeRawNPZ(t, int64X, map[string][]byte{"x": npyBytes("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", make([]byte, 24))})

	tests := []struct {
		name       string
		args       []string
		code       int
		wantStderr string
	}{
		{"missing data", []string{"run", "testdata/scale.te"}, exitUser, "no data for tensors x, scale of model scale"},
		{"missing data hint", []string{"run", "testdata/scale.te"}, exitUser, "--fill zeros|ones|random"},
		{"wrong shape", []string{"run", "testdata/scale.te", "--inputs", wrongShape, "--fill", "zeros"}, exitUser, "x.npy: the header declares float32[4], want f32[3]"},
		{"wrong dtype", []string{"run", "testdata/scale.te", "--inputs", intX, "--fill", "zeros"}, exitUser, "x.npy: the header declares int32[3], want f32[3]"},
		{"extra array warns", []string{"run", "testdata/scale.te", "--inputs", extra, "--fill", "zeros"}, exitOK, `holds "scael", which is no input or param of model scale (did you mean "scale"?)`},
		{"missing archive", []string{"run", "testdata/scale.te", "--params", filepath.Join(dir, "none.npz")}, exitUser, "none.npz"},
		{"expected lacks output", []string{"run", "testdata/scale.te", "--fill", "zeros", "--expected", extra}, exitUser, `has no array for output "y" of model scale; it holds "scael", "x"`},
		{"expected holds more", []string{"run", "testdata/scale.te", "--fill", "zeros", "--expected", expectedMore}, exitUser, `holds "scael", "y", of which "scael" names no output of model scale (its outputs: "y")`},
		{"expected misspelt", []string{"run", "testdata/scale.te", "--fill", "zeros", "--expected", misspelt}, exitUser, `hint: rename "Y" to "y": --expected must hold`},
		{"int64 for f32", []string{"run", "testdata/scale.te", "--inputs", int64X, "--fill", "zeros"}, exitUser, "x.npy: the header declares int64[3], want f32[3]"},
		{"kernel flags without sim", []string{"run", "testdata/scale.te", "--fill", "zeros", "-O2"}, exitUsage, "-O2 configures the kernels, which only --device sim runs"},
		{"kernel flags with ref", []string{"run", "testdata/scale.te", "--fill", "zeros", "--device", "ref", "--gpu", "h100", "--deterministic", "--race=false"}, exitUsage,
			"--gpu h100, --deterministic and --race=false configure the kernels, which only --device sim runs; --device ref evaluates the model itself and would ignore them\n  hint: add --device sim"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runTec(t, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("status %d (want %d), stderr:\n%s\nwant it to contain %q", code, tt.code, stderr, tt.wantStderr)
			}
		})
	}
}

func TestRunJSON(t *testing.T) {
	code, stdout, stderr := runTec(t, "run", "testdata/softmax.te", "--fill", "random", "--seed", "3", "--json")
	if code != exitOK {
		t.Fatalf("status %d: %s", code, stderr)
	}
	var s struct {
		Model   string   `json:"model"`
		Device  string   `json:"device"`
		Filled  []string `json:"filled"`
		Outputs []struct {
			Name  string  `json:"name"`
			DType string  `json:"dtype"`
			Shape []int   `json:"shape"`
			Min   float64 `json:"min"`
			Max   float64 `json:"max"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if s.Model != "softmax" || s.Device != "ref" || len(s.Filled) != 1 || len(s.Outputs) != 1 {
		t.Fatalf("summary %+v", s)
	}
	o := s.Outputs[0]
	if o.Name != "y" || o.DType != "f32" || len(o.Shape) != 2 || o.Min <= 0 || o.Max >= 1 {
		t.Errorf("output summary %+v (softmax values lie in (0, 1))", o)
	}
}

func TestJSONFloat(t *testing.T) {
	b, err := json.Marshal([]jsonFloat{1.5, jsonFloat(math.NaN()), jsonFloat(math.Inf(1)), jsonFloat(math.Inf(-1))})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `[1.5,"NaN","Infinity","-Infinity"]`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
