package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildCounters checks tec build's --counters on the tiny MMoE at -O3
// on the small GPU, some of whose stages read only some tiles of the
// stages before them: off keeps every grid sync, everywhere replaces some
// by per-tile counters and the report counts the waits; a mode it does
// not know is a usage error.
func TestBuildCounters(t *testing.T) {
	base := []string{"build", "../../examples/mmoe.te", "-D", "IN=6", "-D", "UNITS=4", "-D", "E=3", "-D", "TASKS=2", "-D", "TOWER=4", "-O3", "--gpu", "small", "--emit", "cu"}
	type totals struct {
		GridSyncs    int64 `json:"grid_syncs"`
		CounterWaits int64 `json:"counter_waits"`
	}
	got := map[string]totals{}
	for _, mode := range []string{"off", "everywhere"} {
		dir := t.TempDir()
		rep := filepath.Join(dir, "r.json")
		args := append(append([]string{}, base...), "-o", dir, "--report", rep, "--counters", mode)
		if code, _, stderr := runTec(t, args...); code != exitOK {
			t.Fatalf("tec %v: status %d\n%s", args, code, stderr)
		}
		data, err := os.ReadFile(rep)
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Total totals }
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		got[mode] = r.Total
	}
	if off, on := got["off"], got["everywhere"]; off.CounterWaits != 0 || on.CounterWaits == 0 || on.GridSyncs >= off.GridSyncs {
		t.Errorf("--counters off: %+v, everywhere: %+v; want fewer grid syncs and some counter waits", off, on)
	}
	code, _, stderr := runTec(t, append(base, "-o", t.TempDir(), "--counters", "always")...)
	if code != exitUsage || !strings.Contains(stderr, "--counters always: want cost, off or everywhere") {
		t.Errorf("--counters always: status %d, %q", code, stderr)
	}
}
