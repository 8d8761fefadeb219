package driver

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"tec/backend/sim"
	"tec/gpu"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// TestEstimatesMatchMeasuredRuns checks the devices' time estimates (tec
// run's) against the runs they were calibrated on (docs/cli.md "Work
// estimate": seconds of one core's time, /usr/bin/time -v on the 2-core
// development machine): each
// estimate must stay conservative and within about 1.5 times the run. Before
// the calibration the reference's estimates were up to 4 times the runs
// (BERT: 61 s for 19 s), the simulator's up to 5 times, and the LSTM's on the
// reference half the run.
func TestEstimatesMatchMeasuredRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and builds full-size examples")
	}
	tests := []struct {
		model    string
		defines  map[string]string
		device   string
		race     bool
		measured float64 // seconds of CPU time
		lo, hi   float64 // the bounds of estimate / measured
	}{
		{"attention", nil, "ref", false, 0.51, 1, 1.5},
		{"bert", nil, "ref", false, 18.8, 1, 1.5},
		{"efficientnet", nil, "ref", false, 19.5, 1, 1.5},
		{"lstm", nil, "ref", false, 2.26, 1, 1.5},
		{"swin", nil, "ref", false, 14.1, 1, 1.5},
		// Padded convolutions: the bound checks of every point count as
		// operations but cost the reference little.
		{"conv_block", nil, "ref", false, 20.4, 1, 2.5},
		{"attention", nil, "sim", true, 32.9, 1, 1.6},
		{"mlp", nil, "sim", true, 15.75, 1, 1.6},
		{"efficientnet", nil, "sim", true, 39.5, 1, 1.6},
		{"conv_block", nil, "sim", true, 9.77, 0.9, 1.6},
		{"lstm", map[string]string{"T": "10"}, "sim", true, 15.0, 0.9, 1.6},
		{"attention", nil, "sim", false, 10.35, 1, 1.7},
		{"mlp", nil, "sim", false, 4.65, 1, 1.7},
		{"efficientnet", nil, "sim", false, 15.27, 1, 1.7},
		{"conv_block", nil, "sim", false, 3.44, 0.9, 1.7},
		{"lstm", map[string]string{"T": "10"}, "sim", false, 8.43, 0.7, 1.7},
	}
	g, err := gpu.Lookup("a100") // tec run's GPU for its default target, sm_80
	if err != nil {
		t.Fatal(err)
	}
	opts := pipeline.Options{Level: pipeline.MaxLevel, GPU: g}
	type built struct {
		prog *te.Program
		comp *Compiled
	}
	cache := map[string]built{}
	for _, tt := range tests {
		key := tt.model + fmt.Sprint(tt.defines)
		b, ok := cache[key]
		if !ok {
			file := filepath.Join("..", "examples", tt.model+".te")
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if b.prog, err = Check(file, src, lang.Config{Defines: tt.defines}); err != nil {
				t.Fatal(err)
			}
		}
		var dev Device = Reference{}
		if tt.device == "sim" {
			dev = Simulator{Options: sim.Options{Race: tt.race}}
			if b.comp == nil {
				if b.comp, err = Compile(b.prog, opts); err != nil {
					t.Fatalf("%s: %v", tt.model, err)
				}
			}
		}
		cache[key] = b
		est := dev.Seconds(b.prog, b.comp)
		t.Logf("%s on %s (race %v): estimated %.3g s, measured %.3g s: %.2f times", tt.model, tt.device, tt.race, est, tt.measured, est/tt.measured)
		if r := est / tt.measured; r < tt.lo || r > tt.hi {
			t.Errorf("%s on %s (race %v): estimated %.3g s, measured %.3g s: %.2f times, want %.2f to %.2f", tt.model, tt.device, tt.race, est, tt.measured, r, tt.lo, tt.hi)
		}
	}
}
