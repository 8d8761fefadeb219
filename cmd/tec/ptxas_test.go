package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/internal/testkit/tooltest"
)

// TestPTXAS builds and explains the softmax, whose kernel counts on 2
// blocks per SM of an A100, with an nvcc that claims 200 registers and a
// spill for every kernel under any bound: --ptxas auto plans again with
// them and, since the kernel still spills, drops its blocks-per-SM bound
// and warns; --ptxas off keeps the estimate.
func TestPTXAS(t *testing.T) {
	fake := tooltest.FakeNVCC(t, 200, 8)
	t.Setenv("PATH", fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string {
			if k == "PATH" {
				return fake
			}
			return ""
		}}
		return e.main(args), out.String(), errb.String()
	}
	for _, tt := range []struct {
		mode, stdout, stderr, source string
		blocks                       int
	}{
		{"auto", "ptxas did not meet the launch bounds of k0_m (200 registers, 8 B spilled at 2 blocks per SM; 200 unbounded), so the build planned again", "warning: kernel k0_m: planned again, ptxas still spills 8 B", "ptxas", 108},
		{"off", "", "", "estimate", 128},
	} {
		dir := t.TempDir()
		report := filepath.Join(dir, "r.json")
		code, stdout, stderr := run("build", "../../examples/softmax.te", "--emit", "cu", "-o", dir, "--report", report, "--ptxas", tt.mode)
		if code != exitOK || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
			t.Fatalf("--ptxas %s: exit %d\n%s%s\nwant %q and %q", tt.mode, code, stdout, stderr, tt.stdout, tt.stderr)
		}
		data, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Kernels []struct {
				Blocks    int
				Registers struct {
					PerThread int `json:"per_thread"`
					Source    string
				}
			}
		}
		if err := json.Unmarshal(data, &r); err != nil || len(r.Kernels) != 1 {
			t.Fatalf("--ptxas %s: report %s: %v", tt.mode, data, err)
		}
		if k := r.Kernels[0]; k.Registers.Source != tt.source || k.Blocks != tt.blocks {
			t.Errorf("--ptxas %s: kernel of %d blocks, registers %+v; want %d blocks, source %s", tt.mode, k.Blocks, k.Registers, tt.blocks, tt.source)
		}
		code, stdout, stderr = run("explain", "../../examples/softmax.te", "--plan", "--summary", "--ptxas", tt.mode)
		want := "kernel 0 (k0_m): 32, the planned estimate"
		if tt.mode == "auto" {
			want = "kernel 0 (k0_m): 200, ptxas (the planned estimate was 32); ptxas spilled under its bound of 1 block per SM"
		}
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("explain --ptxas %s: exit %d\n%s%s\nwant %q", tt.mode, code, stdout, stderr, want)
		}
	}
	if code, _, stderr := run("build", "../../examples/softmax.te", "--emit", "", "--ptxas", "always"); code != exitUsage || !strings.Contains(stderr, "--ptxas always") {
		t.Errorf("--ptxas always: exit %d, %s", code, stderr)
	}
}
