package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrecisionFlag checks --precision on build, run and explain: bad
// names and a precision dump without the pass are usage errors, the dump
// shows half storage, the header states the params' half dtype, and
// tec run binds f32 params to half ones and its two devices agree.
func TestPrecisionFlag(t *testing.T) {
	ln := "../../examples/layernorm.te"
	tiny := []string{"-D", "S=4", "-D", "D=8"}
	args := func(a ...string) []string { return append(append(a, ln), tiny...) }
	for _, tt := range []struct {
		args []string
		want string
	}{
		{args("build", "--emit=", "--precision", "fp16"), `--precision: unknown precision "fp16" (want f32, tf32, bf16, f16)`},
		{args("run", "--precision", "half"), `unknown precision "half"`},
		{args("build", "--emit=", "--dump-after", "precision"), "the precision pass runs only with --precision tf32, bf16, f16"},
	} {
		if code, _, stderr := runTec(t, tt.args...); code != exitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("tec %s: status %d, stderr %q, want usage error %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
	}
	code, stdout, stderr := runTec(t, args("build", "--emit=", "--precision", "f16", "--dump-after", "precision")...)
	if code != exitOK || !strings.Contains(stdout, `g = placeholder((8,), "f16"`) || !strings.Contains(stdout, `mu = compute((4,), lambda s: sum(a[s, d], axis=[d:8]) / 8.0, name="mu")`) {
		t.Errorf("dump after precision: status %d, stderr %s, stdout:\n%s", code, stderr, stdout)
	}
	dir := t.TempDir()
	if code, _, stderr := runTec(t, args("build", "--emit=cu", "--precision", "bf16", "-o", dir)...); code != exitOK {
		t.Fatalf("build: %s", stderr)
	}
	h, err := os.ReadFile(filepath.Join(dir, "layernorm.h"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h), "[0] g bf16[8]") || !strings.Contains(string(h), "y f32[4, 8]") {
		t.Errorf("the header does not state g as bf16 and y as f32:\n%s", h)
	}
	ref := filepath.Join(dir, "ref.npz")
	if code, _, stderr := runTec(t, args("run", "--precision", "f16", "--fill", "random", "--outputs", ref)...); code != exitOK {
		t.Fatalf("run ref: %s", stderr)
	}
	code, stdout, stderr = runTec(t, args("run", "--device", "sim", "--precision", "f16", "--fill", "random", "--expected", ref, "--rtol", "1e-3", "--atol", "1e-3")...)
	if code != exitOK || !strings.Contains(stdout, "match") {
		t.Errorf("sim at f16 against ref at f16: status %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = runTec(t, args("run", "--device", "sim", "--fill", "random", "--expected", ref)...)
	if code == exitOK {
		t.Errorf("sim at f32 equals ref at f16 within 1e-4: the precision changed nothing\n%s", stdout)
	}
}
