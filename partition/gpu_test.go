package partition

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinGPUs(t *testing.T) {
	for _, tt := range []struct {
		name string
		sms  int
		bw   float64
	}{
		{"a100", 108, 1555e9},
		{"H100", 132, 3.35e12},
		{"h200", 132, 4.8e12},
		{"small", 4, 100e9},
	} {
		g, ok := BuiltinGPU(tt.name)
		if !ok {
			t.Fatalf("BuiltinGPU(%q) not found", tt.name)
		}
		if err := g.Validate(); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if g.SMs != tt.sms || g.DRAMBandwidth != tt.bw {
			t.Errorf("%s: %d SMs, %g B/s; want %d, %g", tt.name, g.SMs, g.DRAMBandwidth, tt.sms, tt.bw)
		}
	}
	if got := strings.Join(GPUNames(), ","); got != "a100,h100,h200,small" {
		t.Errorf("GPUNames() = %s", got)
	}
}

func TestBlocksPerSM(t *testing.T) {
	a100, _ := BuiltinGPU("a100")
	small, _ := BuiltinGPU("small")
	for _, tt := range []struct {
		g    GPU
		r    Resources
		want int
	}{
		{a100, Resources{Threads: 256, RegsPerThread: 32}, 8},
		{a100, Resources{Threads: 256, RegsPerThread: 40}, 6},
		{a100, Resources{Threads: 128, SharedBytes: 48 << 10, RegsPerThread: 32}, 3},
		{a100, Resources{Threads: 1024, RegsPerThread: 64}, 1},
		{a100, Resources{Threads: 1024, RegsPerThread: 128}, 0},
		{a100, Resources{Threads: 64, SharedBytes: 200 << 10}, 0},
		{small, Resources{Threads: 256, RegsPerThread: 32}, 1},
	} {
		got, why := tt.g.BlocksPerSM(tt.r)
		if got != tt.want {
			t.Errorf("%s BlocksPerSM(%+v) = %d (%s), want %d", tt.g.Name, tt.r, got, why, tt.want)
		}
		if got == 0 && why == "" {
			t.Errorf("%s BlocksPerSM(%+v): no reason given", tt.g.Name, tt.r)
		}
	}
}

func TestLoadGPU(t *testing.T) {
	dir := t.TempDir()
	good := `{"name": "mine", "sms": 2, "shared_per_sm": 65536, "shared_per_block": 49152,
		"regs_per_sm": 65536, "max_regs_per_thread": 255, "max_threads_per_sm": 1024,
		"max_blocks_per_sm": 8, "max_threads_per_block": 1024, "dram_bandwidth": 1e11,
		"fp32_peak": 1e12, "launch_cost": 3e-6, "grid_sync_cost": 1e-6}`
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	g, err := LoadGPU(write("good.json", good))
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != "mine" || g.SMs != 2 || g.ResidentBlocks(Resources{Threads: 256}) != 8 {
		t.Errorf("loaded %+v", g)
	}
	for _, tt := range []struct{ spec, want string }{
		{"v100", "unknown GPU"},
		{write("typo.json", strings.Replace(good, `"sms"`, `"sm"`, 1)), "unknown field"},
		{write("zero.json", strings.Replace(good, `"sms": 2`, `"sms": 0`, 1)), "sms must be positive"},
		{filepath.Join(dir, "missing.json"), "reading GPU model"},
	} {
		if _, err := LoadGPU(tt.spec); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("LoadGPU(%s) = %v, want error containing %q", filepath.Base(tt.spec), err, tt.want)
		}
	}
}
