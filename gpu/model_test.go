package gpu

import (
	"math"
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
		{"h100-pcie", 114, 2.0e12},
		{"a100-80gb", 108, 2039e9},
		{"a10", 72, 600e9},
		{"rtx3090", 82, 936e9},
		{"l4", 58, 300e9},
		{"l40s", 142, 864e9},
		{"RTX4090", 128, 1008e9},
		{"small", 4, 100e9},
	} {
		g, ok := Builtin(tt.name)
		if !ok {
			t.Fatalf("Builtin(%q) not found", tt.name)
		}
		if err := g.Validate(); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if g.SMs != tt.sms || g.DRAMBandwidth != tt.bw {
			t.Errorf("%s: %d SMs, %g B/s; want %d, %g", tt.name, g.SMs, g.DRAMBandwidth, tt.sms, tt.bw)
		}
	}
	if got := strings.Join(Names(), ","); got != "a10,a100,a100-80gb,h100,h100-nvl,h100-pcie,h200,l4,l40s,rtx3090,rtx4090,small,t4" {
		t.Errorf("Names() = %s", got)
	}
}

func TestBlocksPerSM(t *testing.T) {
	a100, _ := Builtin("a100")
	small, _ := Builtin("small")
	ptxas := a100
	ptxas.MinRegsPerThread = 100
	for _, tt := range []struct {
		g    Model
		r    Block
		want int
	}{
		{a100, Block{Threads: 256, RegsPerThread: 32}, 8},
		{a100, Block{Threads: 256, RegsPerThread: 40}, 6},
		{a100, Block{Threads: 128, SharedBytes: 48 << 10, RegsPerThread: 32}, 3},
		{a100, Block{Threads: 1024, RegsPerThread: 64}, 1},
		{a100, Block{Threads: 1024, RegsPerThread: 128}, 0},
		{a100, Block{Threads: 64, SharedBytes: 200 << 10}, 0},
		{small, Block{Threads: 256, RegsPerThread: 32}, 1},
		{ptxas, Block{Threads: 256, RegsPerThread: 32}, 2},
		{ptxas, Block{Threads: 256}, 2},
		{ptxas, Block{Threads: 256, RegsPerThread: 128}, 2},
		{ptxas, Block{Threads: 256, RegsPerThread: 168}, 1},
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
	good := `{"name": "mine", "cc": "8.0", "sms": 2, "shared_per_sm": 65536, "shared_per_block": 49152,
		"regs_per_sm": 65536, "max_regs_per_thread": 255, "max_threads_per_sm": 1024,
		"max_blocks_per_sm": 8, "max_threads_per_block": 1024, "l2_bytes": 1048576, "dram_bandwidth": 1e11,
		"fp32_peak": 1e12, "fp16_peak": 0, "launch_cost": 3e-6, "grid_sync_cost": 1e-6}`
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	g, err := Lookup(write("good.json", good))
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != "mine" || g.SMs != 2 || g.ResidentBlocks(Block{Threads: 256}) != 8 {
		t.Errorf("loaded %+v", g)
	}
	for _, tt := range []struct{ spec, want string }{
		{"v100", "unknown GPU"},
		{write("typo.json", strings.Replace(good, `"sms"`, `"sm"`, 1)), "unknown field"},
		{write("zero.json", strings.Replace(good, `"sms": 2`, `"sms": 0`, 1)), "field sms: want an integer from 1 to 4096, got 0"},
		{filepath.Join(dir, "missing.json"), "reading GPU model"},
		{write("case.json", strings.Replace(good, `"sms": 2`, `"Sms": 2`, 1)), "case.json: 1:31: unknown field \"Sms\""},
	} {
		if _, err := Lookup(tt.spec); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Lookup(%s) = %v, want error containing %q", filepath.Base(tt.spec), err, tt.want)
		}
	}
}

// TestParseGPUErrors is R9 of issue 17: every field is checked against its
// range, and JSON errors are reported in the file's terms (field, line and
// column), never in Go's ("into Go value of type gpu.Model").
func TestParseGPUErrors(t *testing.T) {
	good := `{"name": "mine", "cc": "8.0", "sms": 2, "shared_per_sm": 65536, "shared_per_block": 49152,
		"regs_per_sm": 65536, "max_regs_per_thread": 255, "max_threads_per_sm": 1024,
		"max_blocks_per_sm": 8, "max_threads_per_block": 1024, "l2_bytes": 1048576, "dram_bandwidth": 1e11,
		"fp32_peak": 1e12, "fp16_peak": 312e12, "launch_cost": 3e-6, "grid_sync_cost": 1e-6}`
	if _, err := Parse([]byte(good)); err != nil {
		t.Fatal(err)
	}
	huge := `{"name": "huge", "cc": "8.0"`
	for _, f := range jsonFields()[2:] {
		huge += `, "` + f + `": 4611686018427387904`
	}
	huge += "}"
	tests := []struct {
		name, from, to string // the change to good
		want           []string
	}{
		{"cc not a number", `"cc": "8.0"`, `"cc": "abc"`, []string{`field cc: want a compute capability MAJOR.MINOR such as "8.0", got "abc"`}},
		{"cc leading zero", `"cc": "8.0"`, `"cc": "08.0"`, []string{"field cc"}},
		{"too little shared memory", `"shared_per_block": 49152`, `"shared_per_block": 2048`, []string{"field shared_per_block: want an integer from 16384 to 65536, got 2048"}},
		{"negative l2", `"l2_bytes": 1048576`, `"l2_bytes": -1`, []string{"field l2_bytes: want an integer from 0 to 1099511627776, got -1"}},
		{"string for a number", `"sms": 2`, `"sms": "2"`, []string{"1:40: field sms: want an integer, got string"}},
		{"fraction for an integer", `"sms": 2`, `"sms": 2.5`, []string{"field sms: want an integer, got the number 2.5"}},
		{"number for a string", `"cc": "8.0"`, `"cc": 8.0`, []string{"field cc: want a string, got number"}},
		{"beyond int64", `"sms": 2`, `"sms": 1e30`, []string{"field sms: want an integer, got the number 1e30"}},
		{"unknown field", `"sms": 2`, `"sms": 2, "tensor_cores": 4`, []string{`unknown field "tensor_cores" (the fields are name, cc, sms,`}},
		{"syntax", `"sms": 2,`, `"sms": 2,,`, []string{"1:40: invalid character ',' looking for beginning of object key string"}},
		{"data after", good, good + " {}", []string{"data after the GPU's object"}},
		{"array", good, "[1]", []string{"1:1: want a JSON object describing a GPU, got array"}},
		{"empty", good, "", []string{"empty file"}},
		{"truncated", good, `{"name": "x"`, []string{"unexpected end of file"}},
		{"block over SM", `"max_threads_per_sm": 1024`, `"max_threads_per_sm": 512`, []string{"field max_threads_per_block: want an integer from 1 to 512, got 1024"}},
		{"zero bandwidth", `"dram_bandwidth": 1e11`, `"dram_bandwidth": 0`, []string{"field dram_bandwidth: want a number above 0 and at most 1e+18, got 0"}},
		{"negative cost", `"launch_cost": 3e-6`, `"launch_cost": -1`, []string{"field launch_cost: want a number from 0 to 1, got -1"}},
		{"negative latency", `"grid_sync_cost": 1e-6`, `"grid_sync_cost": 1e-6, "dram_latency": -6e-7`, []string{"field dram_latency: want a number from 0 to 1, got -6e-07"}},
		{"latency of hours", `"grid_sync_cost": 1e-6`, `"grid_sync_cost": 1e-6, "l2_latency": 3600`, []string{"field l2_latency: want a number from 0 to 1, got 3600"}},
		{"control character in name", `"name": "mine"`, `"name": "a\u0007b"`, []string{`field name: want 1 to 100 printable characters, got "a\ab"`}},
		{"every field 2^62", good, huge, []string{"field sms: want an integer from 1 to 4096, got 4611686018427387904",
			"field shared_per_block", "field max_threads_per_block", "field l2_bytes", "field max_param_bytes", "field dram_bandwidth", "field grid_sync_cost",
			"field dram_latency", "field l2_latency"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Replace(good, tt.from, tt.to, 1)
			if text == good {
				t.Fatalf("%q is not in the good description", tt.from)
			}
			_, err := Parse([]byte(text))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\nwant it to contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "Go value") || strings.Contains(err.Error(), "gpu.Model") {
				t.Errorf("error in Go's terms: %v", err)
			}
		})
	}
}

// TestValidateNaN: a GPU built in Go, not decoded, may hold NaN.
func TestValidateNaN(t *testing.T) {
	g, _ := Builtin("a100")
	g.FP32Peak = math.NaN()
	if err := g.Validate(); err == nil || !strings.Contains(err.Error(), "field fp32_peak") {
		t.Errorf("Validate() = %v, want an error naming fp32_peak", err)
	}
}

// TestParseGPUStrict checks the strictness of the reader (issue 23): a
// key that differs from a field's name in case ("Sms" set sms), a field
// given twice (the last won) and a required field missing or null (read
// as 0) are errors that name the field, with the line and column of the
// key where it is in the file.
func TestParseGPUStrict(t *testing.T) {
	good := `{"name": "mine", "cc": "8.0", "sms": 108,
"shared_per_sm": 65536, "shared_per_block": 49152, "regs_per_sm": 65536, "max_regs_per_thread": 255,
"max_threads_per_sm": 1024, "max_blocks_per_sm": 8, "max_threads_per_block": 1024,
"l2_bytes": 1048576, "dram_bandwidth": 1e11, "fp32_peak": 1e12, "fp16_peak": 312e12,
"launch_cost": 3e-6, "grid_sync_cost": 1e-6}`
	g, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if g.SMs != 108 || g.L2Bytes != 1048576 || g.FP16Peak != 312e12 || g.LaunchCost != 3e-6 || g.GridSyncCost != 1e-6 {
		t.Fatalf("parsed %+v", g)
	}
	tests := []struct {
		name, from, to string // the change to good
		want           []string
	}{
		{"other case", `"sms": 108`, `"sms": 108, "Sms": 4`, []string{`1:43: unknown field "Sms": field names are lower case, as in "sms"`}},
		{"upper case only", `"sms": 108`, `"SMS": 4`, []string{`1:31: unknown field "SMS"`, "field sms is missing"}},
		{"twice", `"sms": 108`, `"sms": 108, "sms": 4`, []string{"1:43: field sms is given twice (first at 1:31)"}},
		{"optional twice", `"sms": 108`, `"sms": 108, "tf32_peak": 1e12, "tf32_peak": 2e12`, []string{"field tf32_peak is given twice"}},
		{"null", `"fp16_peak": 312e12`, `"fp16_peak": null`, []string{"4:65: field fp16_peak: want a number, got null"}},
		{"null integer", `"l2_bytes": 1048576`, `"l2_bytes": null`, []string{"4:1: field l2_bytes: want an integer, got null"}},
		{"null optional", `"sms": 108`, `"sms": 108, "max_param_bytes": null`, []string{"field max_param_bytes: want an integer, got null"}},
		{"l2_bytes missing", `"l2_bytes": 1048576, `, ``, []string{"field l2_bytes is missing"}},
		{"fp16_peak missing", `, "fp16_peak": 312e12`, ``, []string{"field fp16_peak is missing"}},
		{"launch_cost missing", `"launch_cost": 3e-6, `, ``, []string{"field launch_cost is missing"}},
		{"grid_sync_cost missing", `, "grid_sync_cost": 1e-6`, ``, []string{"field grid_sync_cost is missing"}},
		{"all four missing", `"l2_bytes": 1048576,`, `"launch_cost": 1, "grid_sync_cost": null, "l2_bytes": null,`, []string{
			"field launch_cost is given twice", "field grid_sync_cost is given twice", "field l2_bytes: want an integer, got null"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Replace(good, tt.from, tt.to, 1)
			if text == good {
				t.Fatalf("%q is not in the good description", tt.from)
			}
			_, err := Parse([]byte(text))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\nwant it to contain %q", err, w)
				}
			}
		})
	}
	// The optional fields may be left out.
	for _, f := range []string{`, "tf32_peak": 1e12`, `, "l2_bandwidth": 7e12`, `, "max_param_bytes": 4096`} {
		if _, err := Parse([]byte(strings.Replace(good, `}`, f+`}`, 1))); err != nil {
			t.Errorf("with %s: %v", f, err)
		}
	}
}

// TestLatency checks the load latencies a model gives the cost model: its
// own where a description gives them, the defaults where not, and the
// H200's measured DRAM latency.
func TestLatency(t *testing.T) {
	a100, _ := Builtin("a100")
	h200, _ := Builtin("h200")
	mine, err := Parse([]byte(`{"name": "mine", "cc": "8.0", "sms": 2, "shared_per_sm": 65536, "shared_per_block": 49152,
		"regs_per_sm": 65536, "max_regs_per_thread": 255, "max_threads_per_sm": 1024,
		"max_blocks_per_sm": 8, "max_threads_per_block": 1024, "l2_bytes": 1048576, "dram_bandwidth": 1e11,
		"fp32_peak": 1e12, "fp16_peak": 0, "launch_cost": 3e-6, "grid_sync_cost": 1e-6, "dram_latency": 8e-7, "l2_latency": 3e-7}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		g        Model
		dram, l2 float64
	}{
		{a100, DefaultDRAMLatency, DefaultL2Latency},
		{h200, 1e-6, DefaultL2Latency},
		{mine, 8e-7, 3e-7},
	} {
		if dram, l2 := tt.g.Latency(); dram != tt.dram || l2 != tt.l2 {
			t.Errorf("%s: Latency() = %g, %g; want %g, %g", tt.g.Name, dram, l2, tt.dram, tt.l2)
		}
	}
}
