package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"tec/backend/llvm"
	"tec/backend/target"
	"tec/examples"
	"tec/internal/tooltest"
	"tec/lang"
	"tec/pipeline"
)

func TestBuild(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "report.json")
	code, out, stderr := runTec(t, "build", "testdata/softmax.te", "-O0", "-o", dir, "--emit", "cu,ll,host", "--report", rep)
	if code != exitOK {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(out, "model softmax at -O0 for sm_80: 4 kernels") {
		t.Errorf("output:\n%s", out)
	}
	for _, f := range []string{"softmax.cu", "softmax.h", "main.cu", "softmax.ll"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "softmax.ptx")); err == nil {
		t.Error("softmax.ptx was written without ptx in --emit")
	}
	data, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	var r reportJSON
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Model != "softmax" || len(r.Kernels) != 4 || r.Total.LoadBytes == 0 || r.Total.FLOPs == 0 || !r.Exact {
		t.Errorf("report: %+v", r)
	}
	if p := r.Predicted; p.MS <= 0 || p.DRAMBytes <= 0 || p.GridSyncs != 0 {
		t.Errorf("predicted: %+v", p)
	}
}

// TestBuildContext checks --context: attention over a cache of 4096
// positions masked by run-time positions is predicted cheaper priced at
// a context of 128 than over the whole cache, and a negative context is
// a usage error.
func TestBuildContext(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "attend.te")
	const prog = `
model attend {
  input pos: i32[8]
  input q: f32[8, 64]
  input k: f32[8, 4096, 64]
  s[b, t] = select(t <= pos[b], sum[e](q[b, e] * k[b, t, e]), -inf)
  output s
}
`
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	predicted := func(args ...string) predictedJSON {
		t.Helper()
		rep := filepath.Join(dir, "report.json")
		code, _, stderr := runTec(t, append([]string{"build", src, "-o", dir, "--emit", "cu", "--report", rep}, args...)...)
		if code != exitOK {
			t.Fatalf("%v: status %d\n%s", args, code, stderr)
		}
		data, err := os.ReadFile(rep)
		if err != nil {
			t.Fatal(err)
		}
		var r reportJSON
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		return r.Predicted
	}
	whole, short := predicted(), predicted("--context", "128")
	if short.DRAMBytes*4 > whole.DRAMBytes || short.MS >= whole.MS {
		t.Errorf("at context 128 %+v; over the whole cache %+v: want a quarter of the bytes or less, and less time", short, whole)
	}
	if code, _, stderr := runTec(t, "build", src, "-o", dir, "--emit", "cu", "--context", "-1"); code == exitOK || !strings.Contains(stderr, "--context -1") {
		t.Errorf("--context -1: status %d\n%s", code, stderr)
	}
}

// TestBuildReportsShuffles checks that the report counts the warp shuffles
// of rows long enough for a block of threads each.
func TestBuildReportsShuffles(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "report.json")
	code, _, stderr := runTec(t, "build", "testdata/softmax.te", "-D", "D=300", "-O0", "-o", dir, "--emit", "cu", "--report", rep)
	if code != exitOK {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	data, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	var r reportJSON
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Total.Shuffles == 0 || !strings.Contains(string(data), `"shuffles"`) {
		t.Errorf("no shuffles in the report:\n%s", data)
	}
}

func TestBuildDump(t *testing.T) {
	for _, tc := range []struct {
		pass string
		want []string
	}{
		{"kir", []string{"// ---- after kir ----", "kernel m grid("}},
		{"te", []string{"// ---- after te ----", "m = compute("}},
		{"cu", []string{"// ---- after cu ----", "static __global__"}},
		{"ll", []string{"// ---- after ll ----", "define ptx_kernel"}},
		{"all", []string{"after te", "after plan", "after kir", "after cu", "after ll"}},
	} {
		code, out, stderr := runTec(t, "build", "testdata/softmax.te", "-O0", "--emit=", "--dump-after", tc.pass)
		if code != exitOK {
			t.Fatalf("%s: status %d, stderr:\n%s", tc.pass, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("--dump-after %s: output lacks %q", tc.pass, w)
			}
		}
	}
}

func TestBuildUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"testdata/softmax.te"}, "-o DIR is required"},
		{[]string{"testdata/softmax.te", "-o", dir, "--emit", "cu,exe"}, `unknown kind "exe"`},
		{[]string{"testdata/softmax.te", "-o", dir, "--target", "sm_70"}, `unknown target "sm_70"`},
		{[]string{"testdata/softmax.te", "-o", dir, "-O9"}, "-O9: want -O0 to -O4"},
		{[]string{"testdata/softmax.te", "-o", dir, "--gpu", "v100"}, `unknown GPU "v100"`},
		{[]string{"testdata/softmax.te", "-o", dir, "-O0", "--dump-after", "vertical"}, `no pass "vertical" at -O0`},
		{[]string{"-o", dir}, "want one FILE"},
	} {
		code, _, stderr := runTec(t, append([]string{"build"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("tec build %v: status %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}

// TestRunSim checks that the simulator agrees with the reference evaluator
// through the CLI, at the lowest and highest levels.
func TestRunSim(t *testing.T) {
	dir := t.TempDir()
	ref := filepath.Join(dir, "ref.npz")
	if code, _, stderr := runTec(t, "run", "testdata/softmax.te", "--fill", "random", "--outputs", ref); code != exitOK {
		t.Fatalf("ref: status %d:\n%s", code, stderr)
	}
	for _, level := range []string{"-O0", "-O4"} {
		code, out, stderr := runTec(t, "run", "testdata/softmax.te", "--device", "sim", level, "--fill", "random", "--expected", ref, "--json")
		if code != exitOK {
			t.Errorf("sim %s: status %d:\n%s%s", level, code, out, stderr)
			continue
		}
		var s runSummary
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		if s.Device != "sim" || s.Compare == nil || !s.Compare.OK {
			t.Errorf("sim %s: %s", level, out)
		}
	}
}

// TestBuildToolchain is the back end's check against real toolchains: every
// example at its tiny configuration and at full size, at -O0 and -O4, is
// built, its CUDA C++ compiled with nvcc for sm_80 and sm_90, and its
// LLVM IR compiled with llc and assembled with ptxas for both targets.
// At full size and -O4 it also builds each example at --precision f16,
// compiled by nvcc for both with ptxas -v, whose kernels with MMAs must
// have HMMA in their SASS and whose functions must not spill (halfJobs),
// and at --precision bf16 through llc and ptxas. It
// takes minutes, so it runs only in CI (CI=true) or with
// TEC_TOOLCHAIN=all; .ci/run runs it on its own and reports the time,
// passing TEC_TOOLCHAIN=later to its main "go test ./...".
func TestBuildToolchain(t *testing.T) {
	switch mode := os.Getenv("TEC_TOOLCHAIN"); {
	case mode == "later":
		t.Skip("TEC_TOOLCHAIN=later: .ci/run runs this test on its own")
	case !tooltest.CI() && mode != "all":
		t.Skip("compiles every example with nvcc, llc and ptxas: set CI=true or TEC_TOOLCHAIN=all to run")
	}
	nvcc := tooltest.NVCC(t)
	tooltest.PTXAS(t)
	cuobjdump := tooltest.Require(t, "Debian's nvidia-cuda-toolkit", "cuobjdump")
	var targets []target.Target
	for _, name := range target.Names() {
		tg, _ := target.Lookup(name)
		tooltest.Require(t, "LLVM ("+strings.Join(tg.LLC, " or ")+")", tg.LLC...)
		targets = append(targets, tg)
	}
	var jobs []toolJob
	root := t.TempDir()
	for _, ex := range examples.All() {
		for _, size := range []string{"tiny", "full"} {
			defines := ex.Tiny
			if size == "full" {
				defines = nil
			}
			levels := []int{0, pipeline.MaxLevel}
			for _, level := range levels {
				name := fmt.Sprintf("%s/%s/O%d", ex.Name, size, level)
				p, diags := lang.Check(ex.File(), ex.Source(), lang.Config{Defines: defines, Model: ex.Model})
				if diags.HasErrors() {
					t.Fatalf("%s: %v", name, diags)
				}
				res, err := pipeline.Build(p, pipeline.Options{Level: level})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				dir := filepath.Join(root, ex.Name, size, fmt.Sprint(level))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				files, err := buildFiles(context.Background(), res.Module, res.Module.Layout(), targets[0], map[string]bool{"cu": true, "host": true}, nil, func(string, string) {})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for _, f := range files {
					if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				cu := files[0].Name
				jobs = append(jobs, toolJob{name + " nvcc", func() (string, error) {
					return "", runTool(dir, nvcc, "-c", "-o", strings.TrimSuffix(cu, ".cu")+".o", cu,
						"-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90")
				}})
				for _, tg := range targets {
					mod, err := llvm.Emit(res.Module, tg)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					ll := []byte(mod.String())
					jobs = append(jobs, toolJob{name + " llc+ptxas " + tg.Name, func() (string, error) {
						ptx, err := llvm.PTX(context.Background(), ll, tg)
						if err == nil {
							_, err = llvm.Assemble(context.Background(), ptx, tg)
						}
						return "", err
					}})
				}
			}
		}
		half, err := halfJobs(ex, root, nvcc, cuobjdump, targets)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, half...)
	}
	// The runner links against one model.
	jobs = append(jobs, toolJob{"softmax runner", func() (string, error) {
		dir := filepath.Join(root, "softmax", "tiny", "0")
		return "", runTool(dir, nvcc, "-o", "run", "main.cu", "softmax.cu", "-arch=sm_80")
	}})

	start := time.Now()
	sem := make(chan struct{}, runtime.NumCPU())
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			t0 := time.Now()
			note, err := j.run()
			mu.Lock()
			defer mu.Unlock()
			if note != "" {
				t.Logf("%s: %s", j.name, note)
			}
			if err != nil {
				t.Errorf("%s: %v", j.name, err)
			} else if d := time.Since(t0); d > 10*time.Second {
				t.Logf("%s: %.1fs", j.name, d.Seconds())
			}
		}()
	}
	wg.Wait()
	t.Logf("%d compilations in %.1fs on %d CPUs", len(jobs), time.Since(start).Seconds(), runtime.NumCPU())
}

func runTool(dir, tool string, args ...string) error {
	cmd := exec.Command(tool, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", filepath.Base(tool), strings.Join(args, " "), err, out)
	}
	return nil
}

// TestBuildCPUProfile checks that --cpuprofile writes a profile that
// go tool pprof reads: a gzip-compressed protocol buffer.
func TestBuildCPUProfile(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	code, _, stderr := runTec(t, "build", "testdata/softmax.te", "-O4", "-o", dir, "--emit", "cu", "--cpuprofile", prof)
	if code != exitOK {
		t.Fatalf("status %d, stderr:\n%s", code, stderr)
	}
	data, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Errorf("%s is not gzip-compressed (%d bytes)", prof, len(data))
	}
	code, _, stderr = runTec(t, "build", "testdata/softmax.te", "-o", dir, "--emit", "cu", "--cpuprofile", filepath.Join(dir, "no", "such", "dir", "cpu.prof"))
	if code != exitUser || !strings.Contains(stderr, "--cpuprofile") {
		t.Errorf("unwritable profile: status %d, stderr:\n%s", code, stderr)
	}
}
