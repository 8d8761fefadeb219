package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tec/gpu"
)

// TestBuildReportNotFinite checks that a GPU description in range whose
// rates make the cost model's prediction infinite is refused, naming the
// rate, before tec build writes anything (it used to write the .cu files
// and then fail with "json: unsupported value: +Inf").
func TestBuildReportNotFinite(t *testing.T) {
	a100, err := gpu.Lookup("a100")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		set   func(g *gpu.Model)
		field string
	}{
		{"dram bandwidth", func(g *gpu.Model) { g.DRAMBandwidth = 1e-310 }, "dram_bandwidth 1e-310"},
		{"fp32 peak", func(g *gpu.Model) { g.FP32Peak = 1e-310 }, "fp32_peak 1e-310"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			g := a100
			tt.set(&g)
			data, err := json.Marshal(g)
			if err != nil {
				t.Fatal(err)
			}
			gpu := filepath.Join(dir, "slow.json")
			if err := os.WriteFile(gpu, data, 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			code, _, stderr := runTec(t, "build", "testdata/softmax.te", "--gpu", gpu, "-o", out, "--emit", "cu,host", "--report", filepath.Join(out, "report.json"))
			if code != exitUser {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, exitUser, stderr)
			}
			for _, want := range []string{"--gpu " + gpu + ": cannot write --report", "not finite", tt.field, "hint: give bandwidths in bytes per second"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr does not contain %q:\n%s", want, stderr)
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s exists after the failed build (%v): partial outputs", out, err)
			}
		})
	}
}
