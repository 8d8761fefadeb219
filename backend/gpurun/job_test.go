package gpurun_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tec/backend/cuda"
	"tec/backend/gpurun"
	"tec/backend/kir"
	"tec/gpu"
	"tec/internal/testkit/tooltest"
)

// TestJobRoundTrip: what tec writes for tec-cuda, tec-cuda reads back
// unchanged, and what tec-cuda writes, tec reads back.
func TestJobRoundTrip(t *testing.T) {
	_, ms := modules(t)
	m := ms["features_ws"]
	p, _, feeds, _ := setup(t, m)
	dir := t.TempDir()
	job := &gpurun.Job{Plan: p, Options: gpurun.Options{Bench: 5, Warmup: 2}, Image: []byte("ptx"), Feeds: feeds}
	if err := gpurun.WriteJob(dir, job); err != nil {
		t.Fatal(err)
	}
	back, err := gpurun.ReadJob(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, job) {
		t.Errorf("read back %+v\nwant %+v", back, job)
	}

	res := &gpurun.Result{Device: gpurun.Device{Name: "A100", SMs: 108}, Launches: []gpurun.LaunchInfo{{Kernel: "k", Grid: 216}}}
	for _, o := range p.Outputs {
		res.Outputs = append(res.Outputs, make([]byte, p.Buffers[o].Bytes))
	}
	res.Bench = &gpurun.Bench{Runs: 5, Kernels: make([]gpurun.Stats, len(p.Kernels))}
	if err := gpurun.WriteResult(dir, res); err != nil {
		t.Fatal(err)
	}
	got, err := gpurun.ReadResult(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, res) {
		t.Errorf("result read back %+v\nwant %+v", got, res)
	}
	// An output of the wrong size is an error.
	if err := os.WriteFile(filepath.Join(dir, "output-0.bin"), []byte{1}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := gpurun.ReadResult(dir, p); err == nil || !strings.Contains(err.Error(), "1 bytes for output") {
		t.Errorf("short output: %v", err)
	}
}

// TestReadJobRejects: a job whose plan does not hold together, or whose
// files lie outside its directory, is refused before anything runs.
func TestReadJobRejects(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{}`, "no plan"},
		{`{"plan": {"format": "sass"}}`, `unknown code format "sass"`},
		{`{"plan": {"format": "ptx", "buffers": [{"name": "x", "role": "input", "dtype": "f32", "shape": [2], "bytes": 4}]}}`, "has 4 bytes, want 8"},
		{`{"plan": {"format": "ptx", "workspace": 256, "buffers": [{"name": "t", "role": "temp", "dtype": "f32", "shape": [2], "bytes": 8, "offset": 100}]}}`, "not 256-aligned"},
		{`{"plan": {"format": "ptx", "kernels": [{"name": "k", "symbol": "k", "blocks": 1, "block": 32, "args": [3]}]}}`, "argument index 3 out of range"},
		{`{"plan": {"format": "ptx", "outputs": [0]}}`, "output index 0"},
		{`{"plan": {"format": "ptx"}, "code": "../module.ptx"}`, `bad file name "../module.ptx"`},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "job.json"), []byte(tc.json), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := gpurun.ReadJob(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.json, err, tc.want)
		}
	}
}

func TestNewPlan(t *testing.T) {
	_, ms := modules(t)
	m := ms["features_ws"]
	if _, err := gpurun.NewPlan(m, m.Layout(), map[*kir.Kernel]string{}, gpurun.PTX); err == nil || !strings.Contains(err.Error(), "no symbol for kernel") {
		t.Errorf("no symbols: %v", err)
	}
	if _, err := gpurun.NewPlan(m, m.Layout(), nil, "sass"); err == nil {
		t.Error("format sass accepted")
	}
	p, _, _, _ := setup(t, m)
	// Every kernel that reaches temporaries takes the workspace last.
	for i, k := range m.Kernels {
		_, ws := m.KernelArgs(k)
		args := p.Kernels[i].Args
		if ws != (len(args) > 0 && args[len(args)-1] == gpurun.WorkspaceArg) {
			t.Errorf("kernel %s: args %v, workspace %t", k.Name, args, ws)
		}
	}
}

// TestCubinSymbols compiles a module's CUDA C++ with nvcc and finds each
// kernel's mangled symbol in the cubin.
func TestCubinSymbols(t *testing.T) {
	nvcc := tooltest.NVCC(t)
	_, ms := modules(t)
	m := ms["features"]
	files, err := cuda.Emit(m, gpu.Arch{Name: "sm_80"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, files.Source.Name)
	for _, f := range []cuda.File{files.Source, files.Header} {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "m.cubin")
	if msg, err := exec.CommandContext(context.Background(), nvcc, "-cubin", "-arch=sm_80", "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("nvcc: %v\n%s", err, msg)
	}
	cubin, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	names := cuda.KernelNames(m)
	syms, err := gpurun.CubinSymbols(cubin, names)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range m.Kernels {
		if s := syms[k]; !strings.HasPrefix(s, fmt.Sprintf("_Z%d%s", len(names[k]), names[k])) {
			t.Errorf("kernel %s: symbol %q for function %s", k.Name, s, names[k])
		}
	}
	if _, err := gpurun.CubinSymbols(cubin, map[*kir.Kernel]string{m.Kernels[0]: "k_missing"}); err == nil || !strings.Contains(err.Error(), "no function k_missing") {
		t.Errorf("missing function: %v", err)
	}
	if _, err := gpurun.CubinSymbols([]byte("not elf"), names); err == nil {
		t.Error("a cubin that is not ELF was read")
	}
}
