package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildCounters checks tec build's --counters on the tiny MMoE at -O3
// on the small GPU: off and everywhere reach the build (its report counts
// no counter waits, or some), and a mode it does not know is a usage
// error. What the modes do to the kernels is pipeline's
// TestCountersReplaceGridSyncs.
func TestBuildCounters(t *testing.T) {
	base := []string{"build", "../../examples/mmoe.te", "-D", "IN=6", "-D", "UNITS=4", "-D", "E=3", "-D", "TASKS=2", "-D", "TOWER=4", "-O3", "--gpu", "small", "--emit", "cu"}
	tests := []struct {
		mode   string
		code   int
		waits  bool   // whether the report counts counter waits
		stderr string // in the error output
	}{
		{"off", exitOK, false, ""},
		{"everywhere", exitOK, true, ""},
		{"always", exitUsage, false, "--counters always: want cost, off or everywhere"},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			dir := t.TempDir()
			rep := filepath.Join(dir, "r.json")
			args := append(append([]string{}, base...), "-o", dir, "--report", rep, "--counters", tt.mode)
			code, _, stderr := runTec(t, args...)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("tec %v: status %d, stderr %q; want %d and %q", args, code, stderr, tt.code, tt.stderr)
			}
			if code != exitOK {
				return
			}
			data, err := os.ReadFile(rep)
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Total struct {
					CounterWaits int64 `json:"counter_waits"`
				} `json:"total"`
			}
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatal(err)
			}
			if got := r.Total.CounterWaits > 0; got != tt.waits {
				t.Errorf("--counters %s: %d counter waits in the report", tt.mode, r.Total.CounterWaits)
			}
		})
	}
}
