package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/driver"
)

func TestBuild(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "report.json")
	code, out, stderr := runTec(t, "build", "testdata/softmax.te", "-O0", "-o", dir, "--emit", "cu,ll,host", "--report", rep)
	if code != exitOK {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(out, "model softmax at -O0 for sm_80: 4 kernels") {
		t.Errorf("output:\n%s", out)
	}
	for _, f := range []string{"softmax.cu", "softmax.h", "main.cu", "softmax.ll"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "softmax.ptx")); err == nil {
		t.Error("softmax.ptx was written without ptx in --emit")
	}
	data, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	var r driver.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Model != "softmax" || len(r.Kernels) != 4 || r.Total.LoadBytes == 0 || r.Total.FLOPs == 0 || !r.Exact {
		t.Errorf("report: %+v", r)
	}
	if p := r.Predicted; p.MS <= 0 || p.DRAMBytes <= 0 || p.GridSyncs != 0 {
		t.Errorf("predicted: %+v", p)
	}
}

// TestBuildContext checks --context: attention over a cache of 4096
// positions masked by run-time positions is predicted cheaper priced at
// a context of 128 than over the whole cache, and a negative context is
// a usage error.
func TestBuildContext(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "attend.te")
	const prog = `
model attend {
  input pos: i32[8]
  input q: f32[8, 64]
  input k: f32[8, 4096, 64]
  s[b, t] = select(t <= pos[b], sum[e](q[b, e] * k[b, t, e]), -inf)
  output s
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	predicted := func(args ...string) driver.Prediction {
		t.Helper()
		rep := filepath.Join(dir, "report.json")
		code, _, stderr := runTec(t, append([]string{"build", src, "-o", dir, "--emit", "cu", "--report", rep}, args...)...)
		if code != exitOK {
			t.Fatalf("%v: status %d\n%s", args, code, stderr)
		}
		data, err := os.ReadFile(rep)
		if err != nil {
			t.Fatal(err)
		}
		var r driver.Report
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		return r.Predicted
	}
	whole, short := predicted(), predicted("--context", "128")
	if short.DRAMBytes*4 > whole.DRAMBytes || short.MS >= whole.MS {
		t.Errorf("at context 128 %+v; over the whole cache %+v: want a quarter of the bytes or less, and less time", short, whole)
	}
	if code, _, stderr := runTec(t, "build", src, "-o", dir, "--emit", "cu", "--context", "-1"); code == exitOK || !strings.Contains(stderr, "--context -1") {
		t.Errorf("--context -1: status %d\n%s", code, stderr)
	}
}

// TestBuildReportsShuffles checks that the report counts the warp shuffles
// of rows long enough for a block of threads each.
func TestBuildReportsShuffles(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "report.json")
	code, _, stderr := runTec(t, "build", "testdata/softmax.te", "-D", "D=300", "-O0", "-o", dir, "--emit", "cu", "--report", rep)
	if code != exitOK {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	data, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	var r driver.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Total.Shuffles == 0 || !strings.Contains(string(data), `"shuffles"`) {
		t.Errorf("no shuffles in the report:\n%s", data)
	}
}

func TestBuildDump(t *testing.T) {
	for _, tc := range []struct {
		pass string
		want []string
	}{
		{"kir", []string{"// ---- after kir ----", "kernel m grid("}},
		{"te", []string{"// ---- after te ----", "m = compute("}},
		{"cu", []string{"// ---- after cu ----", "static __global__"}},
		{"ll", []string{"// ---- after ll ----", "define ptx_kernel"}},
		{"all", []string{"after te", "after plan", "after kir", "after cu", "after ll"}},
	} {
		code, out, stderr := runTec(t, "build", "testdata/softmax.te", "-O0", "--emit=", "--dump-after", tc.pass)
		if code != exitOK {
			t.Fatalf("%s: status %d, stderr:\n%s", tc.pass, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("--dump-after %s: output lacks %q", tc.pass, w)
			}
		}
	}
}

func TestBuildUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"testdata/softmax.te"}, "-o DIR is required"},
		{[]string{"testdata/softmax.te", "-o", dir, "--emit", "cu,exe"}, `unknown kind "exe"`},
		{[]string{"testdata/softmax.te", "-o", dir, "--target", "sm_71"}, `unknown target "sm_71"`},
		{[]string{"testdata/softmax.te", "-o", dir, "-O9"}, "-O9: want -O0 to -O4"},
		{[]string{"testdata/softmax.te", "-o", dir, "--gpu", "v100"}, `unknown GPU "v100"`},
		{[]string{"testdata/softmax.te", "-o", dir, "-O0", "--dump-after", "vertical"}, `no pass "vertical" at -O0`},
		{[]string{"-o", dir}, "want one FILE"},
	} {
		code, _, stderr := runTec(t, append([]string{"build"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("tec build %v: status %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}

// TestRunSim checks that the simulator agrees with the reference evaluator
// through the CLI, at the lowest and highest levels.
func TestRunSim(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.npz")
	if code, _, stderr := runTec(t, "run", "testdata/softmax.te", "--fill", "random", "--outputs", ref); code != exitOK {
		t.Fatalf("ref: status %d:\n%s", code, stderr)
	}
	for _, level := range []string{"-O0", "-O4"} {
		code, out, stderr := runTec(t, "run", "testdata/softmax.te", "--device", "sim", level, "--fill", "random", "--expected", ref, "--json")
		if code != exitOK {
			t.Errorf("sim %s: status %d:\n%s%s", level, code, out, stderr)
			continue
		}
		var s runSummary
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		if s.Device != "sim" || s.Compare == nil || !s.Compare.OK {
			t.Errorf("sim %s: %s", level, out)
		}
	}
}

// TestBuildCPUProfile checks that --cpuprofile writes a profile that
// go tool pprof reads: a gzip-compressed protocol buffer.
func TestBuildCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	code, _, stderr := runTec(t, "build", "testdata/softmax.te", "-O4", "-o", dir, "--emit", "cu", "--cpuprofile", prof)
	if code != exitOK {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	data, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Errorf("%s is not gzip-compressed (%d bytes)", prof, len(data))
	}
	code, _, stderr = runTec(t, "build", "testdata/softmax.te", "-o", dir, "--emit", "cu", "--cpuprofile", filepath.Join(dir, "no", "such", "dir", "cpu.prof"))
	if code != exitUser || !strings.Contains(stderr, "--cpuprofile") {
		t.Errorf("unwritable profile: status %d, stderr:\n%s", code, stderr)
	}
}
