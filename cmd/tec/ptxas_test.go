package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/driver"
	"tec/internal/testkit/tooltest"
)

// TestPTXAS builds and explains the softmax, whose kernel counts on 2
// blocks per SM of an A100, with an nvcc that claims 200 registers and a
// spill for every kernel under any bound and unbounded: --ptxas auto
// plans again with them and warns of the spill; --ptxas off keeps the
// estimate.
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
		{"auto", "ptxas did not meet the launch bounds of k0_m (200 registers, 8 B spilled and 8 B reloaded at 2 blocks per SM; 200 unbounded), so the build planned again", "warning: kernel k0_m: ptxas spills 8 B", "ptxas", 108},
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
			want = "kernel 0 (k0_m): 200, ptxas (the planned estimate was 32)\n"
		}
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("explain --ptxas %s: exit %d\n%s%s\nwant %q", tt.mode, code, stdout, stderr, want)
		}
	}
	if code, _, stderr := run("build", "../../examples/softmax.te", "--emit", "", "--ptxas", "always"); code != exitUsage || !strings.Contains(stderr, "--ptxas always") {
		t.Errorf("--ptxas always: exit %d, %s", code, stderr)
	}
}

// TestRegisterSummary checks the build's register line and tec explain's
// register source of a check that met every bound (one kernel saving
// registers around its calls), and of one that planned again and dropped
// a kernel's blocks-per-SM bound.
func TestRegisterSummary(t *testing.T) {
	met := &driver.RegisterCheck{Tool: driver.NVCC, Kernels: []driver.KernelRegisters{
		{Kernel: "k0_a", Estimate: 64, Planned: 64, PTXAS: 128, Function: &driver.PTXASFunction{Registers: 128}},
		{Kernel: "k1_b", Estimate: 122, Planned: 122, PTXAS: 128,
			Function: &driver.PTXASFunction{Registers: 128, SpillStores: 188, SpillLoads: 2216, Calls: true}},
	}}
	replanned := &driver.RegisterCheck{Tool: driver.NVCC, Replanned: true,
		Probed: []driver.ProbedKernel{
			{Kernel: "k0_a", PTXASFunction: &driver.PTXASFunction{Registers: 32, SpillStores: 24, SpillLoads: 24}, Threads: 256, BlocksPerSM: 8, Unbounded: &driver.PTXASFunction{Registers: 38}, Short: true, Floor: 38},
			{Kernel: "k1_b", PTXASFunction: &driver.PTXASFunction{Registers: 100}, Threads: 256, BlocksPerSM: 2, Floor: 100},
			{Kernel: "k2_c", PTXASFunction: &driver.PTXASFunction{Registers: 48, SpillStores: 400, SpillLoads: 3036, Calls: true}, Threads: 256, BlocksPerSM: 5,
				Unbounded: &driver.PTXASFunction{Registers: 122}, Short: true, Tighter: &driver.PTXASFunction{Registers: 64}, TighterBound: 4, Floor: 64},
		},
		Kernels: []driver.KernelRegisters{
			{Kernel: "k0_a", Estimate: 30, Planned: 38, PTXAS: 38, Function: &driver.PTXASFunction{Registers: 38}, FromPTXAS: true, BoundDropped: 6},
			{Kernel: "k1_b", Estimate: 100, Planned: 100, PTXAS: 100, Function: &driver.PTXASFunction{Registers: 100}},
		}}
	tests := []struct {
		name    string
		check   *driver.RegisterCheck
		summary string
		sources []string
	}{
		{"off", &driver.RegisterCheck{Kernels: []driver.KernelRegisters{{Kernel: "k0_a", Estimate: 64, Planned: 64}}}, "", []string{"the planned estimate"}},
		{"met", met, "ptxas (nvcc), registers per thread as built: k0_a 128, k1_b 128", []string{
			"the planned estimate (ptxas: 128 under the kernel's launch bounds, without spilling)",
			"the planned estimate (ptxas: 128 under the kernel's launch bounds, 188 B spilled and 2216 B reloaded around its calls)"}},
		{"replanned", replanned,
			"ptxas (nvcc), registers per thread as built: k0_a 38, k1_b 100; ptxas did not meet the launch bounds of k0_a (32 registers, 24 B spilled and 24 B reloaded at 8 blocks per SM; 38 unbounded), k2_c (48 registers, 400 B spilled and 3036 B reloaded at 5 blocks per SM; 122 unbounded; 64, met, at 4 blocks per SM), so the build planned again with their registers at the largest bound ptxas met, or else unbounded, as the floor of their stages' registers (and the other kernels' as theirs); still spilling when planned again, so bounded by their threads alone: k0_a (was 6 blocks per SM)",
			[]string{"ptxas (the planned estimate was 30); ptxas spilled under its bound of 6 blocks per SM even when planned again, so the kernel is bounded by its threads alone (ptxas: 38)", "the planned estimate (ptxas: 100 under the kernel's launch bounds, without spilling)"}},
	}
	for _, tt := range tests {
		if got := registerSummary(tt.check); got != tt.summary {
			t.Errorf("%s: summary\n%q, want\n%q", tt.name, got, tt.summary)
		}
		for i, k := range tt.check.Kernels {
			if got := registerSource(k); got != tt.sources[i] {
				t.Errorf("%s: kernel %s's source\n%q, want\n%q", tt.name, k.Kernel, got, tt.sources[i])
			}
		}
	}
}
