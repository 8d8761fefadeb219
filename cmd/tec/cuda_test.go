package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"tec/backend/gpurun"
	"tec/backend/gpurun/fakegpu"
	"tec/backend/kir"
	"tec/backend/llvm"
	"tec/driver"
	"tec/internal/testkit/tooltest"
	"tec/precision"
)

// runTecCUDA runs tec in-process with the environment vars and, when
// fake is not nil, fake in place of executing tec-cuda.
func runTecCUDA(t *testing.T, vars map[string]string, fake func(ctx context.Context, runner, dir string) ([]byte, error), args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }, execTecCUDA: fake}
	code = e.main(args)
	return code, out.String(), errb.String()
}

// buildModule compiles file as tec run does at level and prec, with the
// defines (-D NAME=VALUE ...).
func buildModule(t *testing.T, file string, defines []string, level int, prec string) *kir.Module {
	t.Helper()
	return buildCompiled(t, file, defines, level, prec).Module
}

// buildCompiled is buildModule's compilation, the driver's.
func buildCompiled(t *testing.T, file string, defines []string, level int, prec string) *driver.Compiled {
	t.Helper()
	e := &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	var cf compileFlags
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	cf.register(fs)
	if err := fs.Parse(defines); err != nil {
		t.Fatal(err)
	}
	prog, code := e.compile(&cf, file)
	if prog == nil {
		t.Fatalf("compiling %s: status %d", file, code)
	}
	opts, err := (&optFlags{level: level, precision: prec}).options("")
	if err != nil {
		t.Fatal(err)
	}
	prog, opts.Precision = precision.Apply(prog, opts.Precision), precision.F32
	res, err := driver.Compile(prog, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// fakeTecCUDA does what tec-cuda does with a job, on a fake GPU that
// checks every driver call against mod (the module tec must have planned)
// and computes with the simulator.
func fakeTecCUDA(t *testing.T, mod *kir.Module) func(ctx context.Context, runner, dir string) ([]byte, error) {
	return func(_ context.Context, _, dir string) ([]byte, error) {
		job, err := gpurun.ReadJob(dir)
		if err != nil {
			t.Fatal(err)
		}
		symbols := llvm.KernelNames(mod)
		if job.Plan.Format == gpurun.Cubin {
			if !bytes.HasPrefix(job.Image, []byte("\x7fELF")) {
				t.Fatalf("the cubin is not ELF: %q", job.Image[:min(16, len(job.Image))])
			}
			for i, k := range mod.Kernels {
				symbols[k] = job.Plan.Kernels[i].Symbol
			}
		} else if !bytes.Contains(job.Image, []byte(".entry "+symbols[mod.Kernels[0]])) {
			t.Fatalf("the PTX has no entry %s", symbols[mod.Kernels[0]])
		}
		gpu := fakegpu.New(mod, job.Image, symbols)
		res, err := gpurun.Run(gpu, job.Plan, job.Image, job.Feeds, job.Options)
		if err != nil {
			return []byte("tec-cuda: " + err.Error() + "\n"), exitError(t)
		}
		if err := gpu.Close(); err != nil {
			t.Fatal(err)
		}
		return nil, gpurun.WriteResult(dir, res)
	}
}

// exitError returns the error of a process that exited with status 1.
func exitError(t *testing.T) error {
	err := exec.Command("false").Run()
	if err == nil {
		t.Fatal("false succeeded")
	}
	return err
}

// TestRunCUDA runs models through tec run --device cuda with tec-cuda's
// work done on a fake GPU (package fakegpu): every launch checked against
// the kernel IR, the kernels computed by the simulator. The outputs must
// match the reference evaluator's, and the JSON must describe the launches
// and the timings.
func TestRunCUDA(t *testing.T) {
	tooltest.Require(t, "LLVM (Debian: llvm)", "llc", "llc-16")
	for _, tc := range []struct {
		file, prec, codegen string
		defines             []string
		level               int
		tol                 string
	}{
		{"testdata/softmax.te", "f32", "ptx", nil, 4, "1e-4"},
		{"testdata/softmax.te", "f32", "ptx", nil, 0, "1e-4"},
		{"../../examples/mlp.te", "f32", "ptx", []string{"-D", "B=2", "-D", "IN=8", "-D", "H=16", "-D", "L=2", "-D", "OUT=4"}, 4, "1e-4"},
		{"../../examples/layernorm.te", "f16", "ptx", []string{"-D", "S=4", "-D", "D=8"}, 3, "2e-2"},
		{"testdata/softmax.te", "f32", "cu", nil, 4, "1e-4"},
	} {
		t.Run(fmt.Sprintf("%s-O%d-%s-%s", filepath.Base(tc.file), tc.level, tc.prec, tc.codegen), func(t *testing.T) {
			if tc.codegen == "cu" {
				tooltest.NVCC(t)
			}
			dir := t.TempDir()
			want := filepath.Join(dir, "want.npz")
			feeds := append([]string{"--fill", "random", "--seed", "7", "--precision", tc.prec}, tc.defines...)
			if code, _, stderr := runTec(t, append([]string{"run", "--outputs", want, tc.file}, feeds...)...); code != exitOK {
				t.Fatalf("ref: status %d\n%s", code, stderr)
			}
			mod := buildModule(t, tc.file, tc.defines, tc.level, tc.prec)
			vars := map[string]string{"TEC_CUDA": os.Args[0]}
			args := append([]string{"run", "--device", "cuda", fmt.Sprintf("-O%d", tc.level), "--codegen", tc.codegen,
				"--expected", want, "--rtol", tc.tol, "--atol", tc.tol, "--bench", "3", "--warmup", "1", tc.file}, feeds...)
			code, stdout, stderr := runTecCUDA(t, vars, fakeTecCUDA(t, mod), append(args, "--json")...)
			if code != exitOK {
				t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			var sum runSummary
			if err := json.Unmarshal([]byte(stdout), &struct {
				*runSummary
				Compare *compareSummary `json:"compare"`
			}{&sum, nil}); err != nil {
				t.Fatalf("%v\n%s", err, stdout)
			}
			if !strings.Contains(stdout, `"ok": true`) {
				t.Errorf("outputs differ from the reference:\n%s", stdout)
			}
			c := sum.CUDA
			if c == nil || c.Device.Name != "fake GPU" || c.Codegen != tc.codegen || len(c.Launches) != len(mod.Kernels) ||
				c.Bench == nil || c.Bench.Runs != 3 || len(c.Bench.Kernels) != len(mod.Kernels) || c.Bench.Total.Median != float64(len(mod.Kernels)) {
				t.Errorf("cuda summary %+v for %d kernels", c, len(mod.Kernels))
			}
			if tc.codegen != "ptx" {
				return // nvcc again would take seconds
			}
			// The text form has the GPU line and the bench table.
			code, stdout, stderr = runTecCUDA(t, vars, fakeTecCUDA(t, mod), args...)
			if code != exitOK {
				t.Fatalf("text: status %d\n%s", code, stderr)
			}
			for _, w := range []string{"model ", " on cuda: ", "gpu: fake GPU (sm_80, 2 SMs), " + tc.codegen + " code for sm_80",
				"bench: 3 runs after 1 warm-up: median ", "median ms", "all "} {
				if !strings.Contains(stdout, w) {
					t.Errorf("no %q in\n%s", w, stdout)
				}
			}
		})
	}
}

// TestRunCUDAErrors: what tec says when tec-cuda is missing, when it finds
// no GPU or driver, and when the run on the GPU fails, and the flags of
// --device cuda misused.
func TestRunCUDAErrors(t *testing.T) {
	empty := t.TempDir()
	run := []string{"run", "--device", "cuda", "--fill", "zeros", "testdata/softmax.te"}
	printing := func(out string) func(context.Context, string, string) ([]byte, error) {
		return func(context.Context, string, string) ([]byte, error) { return []byte(out), exitError(t) }
	}
	for _, tc := range []struct {
		name   string
		vars   map[string]string
		fake   func(context.Context, string, string) ([]byte, error)
		args   []string
		status int
		want   string
	}{
		{"missing", map[string]string{"PATH": empty}, nil, run, exitUser,
			"tec run: --device cuda needs tec-cuda, the GPU runner, which is not installed (looked in "},
		{"missing hint", map[string]string{"PATH": empty}, nil, run, exitUser, "hint: build it where the CUDA driver is installed: go install -tags cuda ./cmd/tec-cuda"},
		{"TEC_CUDA wrong", map[string]string{"TEC_CUDA": filepath.Join(empty, "nothing")}, nil, run, exitUser, "TEC_CUDA=" + filepath.Join(empty, "nothing")},
		{"no GPU", map[string]string{"TEC_CUDA": os.Args[0]},
			printing(`Error in initialization, please refer to "https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html" for details on: NoDevice` + "\n"),
			run, exitUser, "tec run: no usable CUDA GPU: the CUDA driver failed to initialise (cuInit: NoDevice)\n  hint: check that an NVIDIA GPU is present"},
		{"no driver", map[string]string{"TEC_CUDA": os.Args[0]},
			printing("tec-cuda: error while loading shared libraries: libcuda.so.1: cannot open shared object file: No such file or directory\n"),
			run, exitUser, "tec run: no CUDA driver: " + os.Args[0] + " cannot load libcuda.so.1"},
		{"run fails", map[string]string{"TEC_CUDA": os.Args[0]},
			printing("tec-cuda: launching kernel k0 (4 blocks of 256 threads, 0 B dynamic shared memory): CUDA_ERROR_LAUNCH_FAILED (unspecified launch failure)\n"),
			run, exitUser, "tec run: running model softmax on the GPU: launching kernel k0 (4 blocks"},
		{"run fails with a hint", map[string]string{"TEC_CUDA": os.Args[0]},
			printing("tec-cuda: kernel k synchronises its whole grid, but X does not support cooperative launches\n  hint: compile at -O2\n"),
			run, exitUser, "tec run: running model softmax on the GPU: kernel k synchronises its whole grid, but X does not support cooperative launches\n  hint: compile at -O2\n"},
		{"crash", map[string]string{"TEC_CUDA": os.Args[0]}, printing("SIGSEGV\n"), run, exitUser, "failed (exit status 1): SIGSEGV"},
		{"bench without cuda", nil, nil, []string{"run", "--bench", "3", "--codegen", "cu", "--fill", "zeros", "testdata/softmax.te"}, exitUsage,
			"--codegen and --bench apply only with --device cuda; --device ref would ignore them"},
		{"race with cuda", nil, nil, []string{"run", "--device", "cuda", "--race", "--fill", "zeros", "testdata/softmax.te"}, exitUsage,
			"--race checks the kernels in the simulator, which only --device sim runs"},
		{"bad codegen", nil, nil, []string{"run", "--device", "cuda", "--codegen", "sass", "--fill", "zeros", "testdata/softmax.te"}, exitUsage,
			"--codegen sass: want ptx or cu"},
		{"bad target", nil, nil, []string{"run", "--device", "cuda", "--target", "sm_71", "--fill", "zeros", "testdata/softmax.te"}, exitUsage,
			`--target: unknown target "sm_71"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.fake != nil {
				tooltest.Require(t, "LLVM (Debian: llvm)", "llc", "llc-16")
			}
			code, stdout, stderr := runTecCUDA(t, tc.vars, tc.fake, tc.args...)
			if code != tc.status || !strings.Contains(stderr, tc.want) {
				t.Errorf("status %d, stderr:\n%s\nwant status %d and %q", code, stderr, tc.status, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout: %s", stdout)
			}
		})
	}
}

// TestTecCUDABinary builds the real tec-cuda (cgo, build tag cuda, against
// the CUDA driver's cuda.h and libcuda) and runs a model through it: on a
// machine without a GPU, tec must say so in one line with the driver's
// error; with one, the outputs must match the reference.
func TestTecCUDABinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tec-cuda with cgo")
	}
	tooltest.Require(t, "LLVM (Debian: llvm)", "llc", "llc-16")
	if _, err := os.Stat("/usr/include/cuda.h"); err != nil || runtime.GOOS != "linux" {
		if tooltest.CI() {
			t.Fatalf("CI=true needs cuda.h (Debian's nvidia-cuda-toolkit) to build tec-cuda: %v", err)
		}
		t.Skip("no /usr/include/cuda.h: install Debian's nvidia-cuda-toolkit to build tec-cuda")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "tec-cuda")
	build := exec.Command("go", "build", "-tags", "cuda", "-o", bin, "../tec-cuda")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags cuda ./cmd/tec-cuda: %v\n%s", err, out)
	}
	want := filepath.Join(dir, "want.npz")
	feeds := []string{"--fill", "random", "--seed", "3", "testdata/softmax.te"}
	if code, _, stderr := runTec(t, append([]string{"run", "--outputs", want}, feeds...)...); code != exitOK {
		t.Fatalf("ref: status %d\n%s", code, stderr)
	}
	code, stdout, stderr := runTecCUDA(t, map[string]string{"TEC_CUDA": bin}, nil, append([]string{"run", "--device", "cuda", "--expected", want}, feeds...)...)
	switch {
	case code == exitOK:
		if !strings.Contains(stdout, "all 1 outputs match") {
			t.Errorf("on the GPU:\n%s", stdout)
		}
	case strings.HasPrefix(stderr, "tec run: no usable CUDA GPU: the CUDA driver failed to initialise (cuInit: "),
		strings.HasPrefix(stderr, "tec run: no CUDA driver: "):
		if n := strings.Count(stderr, "\n"); n != 2 {
			t.Errorf("want a line and a hint, got %d lines:\n%s", n, stderr)
		}
	default:
		t.Errorf("status %d, stderr:\n%s", code, stderr)
	}
}
