package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/te"
)

// jsonDiag is what a caller reads of a JSON diagnostic.
type jsonDiag struct {
	File  string `json:"file"`
	Range struct {
		Start struct {
			Line      int `json:"line"`
			Character int `json:"character"`
		} `json:"start"`
	} `json:"range"`
	Severity string `json:"severity"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	Hint     string `json:"hint"`
}

// parseDiagnostics decodes standard output as JSON Lines of diagnostics,
// failing the test on a line that is not one.
func parseDiagnostics(t *testing.T, stdout string) []jsonDiag {
	t.Helper()
	var ds []jsonDiag
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var d jsonDiag
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil && !strings.Contains(err.Error(), "unknown field") {
			t.Fatalf("standard output line %q is not a JSON diagnostic: %v\nstdout:\n%s", sc.Text(), err, stdout)
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("standard output line %q: %v", sc.Text(), err)
		}
		ds = append(ds, d)
	}
	return ds
}

// TestFailuresAsJSON runs every failure path of every command with
// --diagnostics json (and tec run's with --json): each must print JSON
// diagnostics on standard output, the last an error with the expected
// code and message, and nothing on standard error.
func TestFailuresAsJSON(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o666); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := filepath.Join(dir, "missing.te")
	badGPU := write("bad-gpu.json", "{\n  \"name\": \"g\",\n  \"sms\": \"many\"\n}\n")
	wrongShape := filepath.Join(dir, "shape.npz")
	writeNPZ(t, wrongShape, map[string]*te.Array{"x": f32([]int{4}, 1, 2, 3, 4)})
	wrongNPY := write("x.npy", string(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 10), }", make([]byte, 80))))
	int64X := filepath.Join(dir, "int64.npz")
	writeRawNPZ(t, int64X, map[string][]byte{"x": npyBytes("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", make([]byte, 24))})
	expectedMore := filepath.Join(dir, "more.npz")
	writeNPZ(t, expectedMore, map[string]*te.Array{"y": f32([]int{3}, 0, 0, 0), "z": f32([]int{3}, 1, 2, 3)})
	notZip := write("notzip.npz", "not a zip archive")
	twice := filepath.Join(dir, "twice.npz")
	writeNPZ(t, twice, map[string]*te.Array{"x": f32([]int{3}, 1, 2, 3)})
	twiceNPY := filepath.Join(dir, "x3.npy")
	if err := os.WriteFile(twiceNPY, npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", make([]byte, 12)), 0o666); err != nil {
		t.Fatal(err)
	}
	fileInTheWay := write("file", "")

	const scale = "testdata/scale.te"
	tests := []struct {
		name   string
		args   []string
		status int
		code   string
		msg    string // in the last diagnostic's message or hint
		file   string // the last diagnostic's file, when not empty
		line   int    // its 0-based line, when file is set
	}{
		{"unknown command", []string{"chek"}, exitUsage, codeUsage, "did you mean 'tec check'?", "", 0},
		{"help unknown command", []string{"help", "nope"}, exitUsage, codeUsage, `unknown command "nope"`, "", 0},
		{"check unknown flag", []string{"check", "--frobnicate", scale}, exitUsage, codeUsage, "flag provided but not defined: -frobnicate", "", 0},
		{"check bad -D", []string{"check", "-D", "N", scale}, exitUsage, codeUsage, "want NAME=VALUE", "", 0},
		{"check no file", []string{"check"}, exitUsage, codeUsage, "want one FILE, got 0 arguments", "", 0},
		{"check missing file", []string{"check", missing}, exitUser, codeIO, "missing.te", missing, 0},
		{"check errors", []string{"check", "testdata/bad.te"}, exitUser, "", "", "testdata/bad.te", 5},
		{"check unknown -D", []string{"check", "-D", "NN=2", scale}, exitUser, "", "declares no constant NN", "", 0},
		{"te missing file", []string{"te", missing}, exitUser, codeIO, "missing.te", missing, 0},
		{"fmt unknown flag", []string{"fmt", "-x", scale}, exitUsage, codeUsage, "flag provided but not defined", "", 0},
		{"fmt -w and -l", []string{"fmt", "-w", "-l", scale}, exitUsage, codeUsage, "cannot be used together", "", 0},
		{"fmt missing file", []string{"fmt", missing}, exitUser, codeIO, "missing.te", missing, 0},
		{"fmt syntax error", []string{"fmt", write("syntax.te", "model m {\n  y = = 1\n}\n")}, exitUser, "syntax", "", "", 0},
		{"build without -o", []string{"build", scale}, exitUsage, codeUsage, "-o DIR is required", "", 0},
		{"build bad target", []string{"build", scale, "-o", dir, "--target", "sm_70"}, exitUsage, codeUsage, "--target", "", 0},
		{"build bad emit", []string{"build", scale, "-o", dir, "--emit", "exe"}, exitUsage, codeUsage, `unknown kind "exe"`, "", 0},
		{"build bad level", []string{"build", scale, "-o", dir, "-O9"}, exitUsage, codeUsage, "-O9: want -O0 to -O4", "", 0},
		{"build unknown GPU", []string{"build", scale, "-o", dir, "--gpu", "v100"}, exitUsage, codeGPU, `unknown GPU "v100"`, "", 0},
		{"build GPU JSON error", []string{"build", scale, "-o", dir, "--gpu", badGPU}, exitUsage, codeGPU, "field sms", badGPU, 2},
		{"build missing GPU file", []string{"build", scale, "-o", dir, "--gpu", filepath.Join(dir, "none.json")}, exitUsage, codeGPU, "none.json", "", 0},
		{"build unwritable output", []string{"build", scale, "-o", filepath.Join(fileInTheWay, "out"), "--emit", "cu"}, exitUser, codeIO, "", filepath.Join(fileInTheWay, "out"), 0},
		{"build missing file", []string{"build", missing, "-o", dir}, exitUser, codeIO, "missing.te", missing, 0},
		{"build dump unknown pass", []string{"build", scale, "--emit", "", "--dump-after", "nope"}, exitUsage, codeUsage, `no pass "nope"`, "", 0},
		{"explain bad threshold", []string{"explain", scale, "--threshold", "0"}, exitUsage, codeUsage, "-threshold must be a positive", "", 0},
		{"explain missing file", []string{"explain", "--json", missing}, exitUser, codeIO, "missing.te", missing, 0},
		{"explain GPU JSON error", []string{"explain", "--plan", "--gpu", badGPU, scale}, exitUsage, codeGPU, "field sms", badGPU, 2},
		{"graph bad output", []string{"graph", scale, "-o", filepath.Join(dir, "g.jpg")}, exitUsage, codeUsage, "cannot write .jpg files", "", 0},
		{"graph bad collapse", []string{"graph", scale, "--collapse", "nope"}, exitUsage, codeUsage, "collapse", "", 0},
		{"graph without Graphviz", []string{"graph", scale, "-o", filepath.Join(dir, "g.svg")}, exitUser, codeGraphviz, "needs Graphviz's dot command", "", 0},
		{"graph unwritable output", []string{"graph", scale, "-o", filepath.Join(fileInTheWay, "g.dot")}, exitUser, codeIO, "writing", filepath.Join(fileInTheWay, "g.dot"), 0},
		{"run unknown flag", []string{"run", scale, "--frobnicate"}, exitUsage, codeUsage, "flag provided but not defined", "", 0},
		{"run unknown device", []string{"run", scale, "--device", "tpu"}, exitUsage, codeUsage, `unknown device "tpu"`, "", 0},
		{"run bad fill", []string{"run", scale, "--fill", "gaussian"}, exitUsage, codeUsage, `unknown fill "gaussian"`, "", 0},
		{"run bad input flag", []string{"run", scale, "--input", "x.npy"}, exitUsage, codeUsage, "want NAME=@FILE.npy", "", 0},
		{"run negative tolerance", []string{"run", scale, "--rtol", "-1"}, exitUsage, codeUsage, "must be non-negative", "", 0},
		{"run bad max-memory", []string{"run", scale, "--max-memory", "lots"}, exitUsage, codeUsage, "--max-memory: want a size", "", 0},
		{"run kernel flags without sim", []string{"run", scale, "-O3", "--fill", "zeros"}, exitUsage, codeUsage, "add --device sim", "", 0},
		{"run GPU JSON error", []string{"run", scale, "--device", "sim", "--gpu", badGPU, "--fill", "zeros"}, exitUsage, codeGPU, "field sms", badGPU, 2},
		{"run missing file", []string{"run", missing}, exitUser, codeIO, "missing.te", missing, 0},
		{"run missing data", []string{"run", scale}, exitUser, codeData, "no data for tensors x, scale", "", 0},
		{"run wrong shape in --inputs", []string{"run", scale, "--inputs", wrongShape, "--fill", "zeros"}, exitUser, codeData, "declares float32[4], want f32[3]", wrongShape, 0},
		{"run wrong shape in --input", []string{"run", scale, "--input", "x=@" + wrongNPY, "--fill", "zeros"}, exitUser, codeData, "declares float32[2, 10], want f32[3]", wrongNPY, 0},
		{"run int64 for f32", []string{"run", scale, "--inputs", int64X, "--fill", "zeros"}, exitUser, codeData, "declares int64[3], want f32[3]", int64X, 0},
		{"run missing archive", []string{"run", scale, "--params", filepath.Join(dir, "none.npz")}, exitUser, codeIO, "none.npz", filepath.Join(dir, "none.npz"), 0},
		{"run archive not a zip", []string{"run", scale, "--inputs", notZip, "--fill", "zeros"}, exitUser, codeData, "notzip.npz", notZip, 0},
		{"run input given twice", []string{"run", scale, "--inputs", twice, "--input", "x=@" + twiceNPY, "--fill", "zeros"}, exitUser, codeData, `input "x" is given twice`, twiceNPY, 0},
		{"run expected holds more", []string{"run", scale, "--fill", "zeros", "--expected", expectedMore}, exitUser, codeData, `"z" names no output`, expectedMore, 0},
		{"run expected missing", []string{"run", scale, "--fill", "zeros", "--expected", filepath.Join(dir, "none.npz")}, exitUser, codeIO, "none.npz", filepath.Join(dir, "none.npz"), 0},
		{"run out of memory", []string{"run", scale, "--fill", "zeros", "--max-memory", "10B"}, exitUser, codeMemory, "needs about 72 bytes of memory on ref", "", 0},
		{"run over time", []string{"run", "testdata/softmax.te", "-D", "N=30000", "-D", "D=30000", "--fill", "zeros", "--max-memory", "0"}, exitUser, codeTime, "refusing a run estimated over 1m0s", "", 0},
		{"run unwritable outputs", []string{"run", scale, "--fill", "zeros", "--outputs", filepath.Join(fileInTheWay, "o.npz")}, exitUser, codeIO, "", filepath.Join(fileInTheWay, "o.npz"), 0},
		{"run unwritable feeds", []string{"run", scale, "--fill", "zeros", "--save-feeds", filepath.Join(fileInTheWay, "feeds")}, exitUser, codeIO, "--save-feeds", filepath.Join(fileInTheWay, "feeds"), 0},
	}
	for _, tt := range tests {
		for _, flag := range []string{"--diagnostics=json", "--json"} {
			if flag == "--json" && tt.args[0] != "run" {
				continue
			}
			t.Run(tt.name+" "+flag, func(t *testing.T) {
				args := append(append([]string{}, tt.args...), flag)
				code, stdout, stderr := runTec(t, args...)
				if code != tt.status {
					t.Errorf("status %d, want %d", code, tt.status)
				}
				if stderr != "" {
					t.Errorf("standard error is not empty:\n%s", stderr)
				}
				ds := parseDiagnostics(t, stdout)
				if len(ds) == 0 {
					t.Fatalf("no JSON diagnostic on standard output; stderr:\n%s", stderr)
				}
				d := ds[len(ds)-1]
				if d.Severity != "error" {
					t.Errorf("last diagnostic has severity %q, want error", d.Severity)
				}
				if tt.code != "" && d.Code != tt.code {
					t.Errorf("code %q, want %q (%s)", d.Code, tt.code, d.Message)
				}
				if !strings.Contains(d.Message+"\n"+d.Hint, tt.msg) {
					t.Errorf("message %q, hint %q: want %q in them", d.Message, d.Hint, tt.msg)
				}
				if strings.Contains(d.Message, "\n  hint:") {
					t.Errorf("message %q carries its hint: want it in \"hint\"", d.Message)
				}
				if tt.file != "" && (d.File != tt.file || d.Range.Start.Line != tt.line) {
					t.Errorf("file %q line %d, want %q line %d", d.File, d.Range.Start.Line, tt.file, tt.line)
				}
			})
		}
	}
}

// TestRunJSONWarnings checks that a run with JSON output keeps its warnings
// in the summary's "warnings", so that standard output is one JSON object,
// and that "filled" is a list even when nothing was filled.
func TestRunJSONWarnings(t *testing.T) {
	dir := t.TempDir()
	extra := filepath.Join(dir, "extra.npz")
	writeNPZ(t, extra, map[string]*te.Array{"x": f32([]int{3}, 1, 2, 3), "scale": f32([]int{3}, 1, 1, 1), "scael": f32([]int{3}, 1, 2, 3)})
	for _, flag := range []string{"--json", "--diagnostics=json"} {
		code, stdout, stderr := runTec(t, "run", "testdata/scale.te", "--inputs", extra, flag)
		if code != exitOK || stderr != "" {
			t.Fatalf("%s: status %d, stderr:\n%s", flag, code, stderr)
		}
		var sum struct {
			Filled   []string   `json:"filled"`
			Warnings []jsonDiag `json:"warnings"`
		}
		if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
			t.Fatalf("%s: standard output is not one JSON object: %v\n%s", flag, err, stdout)
		}
		if sum.Filled == nil || len(sum.Filled) != 0 {
			t.Errorf("%s: filled = %#v, want []", flag, sum.Filled)
		}
		if !strings.Contains(stdout, `"filled": []`) {
			t.Errorf("%s: want \"filled\": [] in\n%s", flag, stdout)
		}
		if len(sum.Warnings) != 1 || sum.Warnings[0].Severity != "warning" || !strings.Contains(sum.Warnings[0].Message, `did you mean "scale"?`) {
			t.Errorf("%s: warnings %+v, want one about scael", flag, sum.Warnings)
		}
	}
}
