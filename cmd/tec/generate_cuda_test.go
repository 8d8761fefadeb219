package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"tec/backend/gpurun"
	"tec/backend/gpurun/fakegpu"
	"tec/backend/kir"
	"tec/backend/llvm"
	"tec/driver"
	"tec/generate"
	"tec/internal/testkit/tooltest"
	"tec/te"
)

// fakeTecCUDAGenerate does what tec-cuda does with a generation job, on a
// fake GPU that runs both modules (checking every driver call against
// them) and computes with the simulator.
// tweak, when not nil, changes the fake GPU first.
func fakeTecCUDAGenerate(t *testing.T, prefill, decode *kir.Module, tweak func(*fakegpu.GPU)) func(ctx context.Context, runner, dir string) ([]byte, error) {
	return func(_ context.Context, _, dir string) ([]byte, error) {
		job, err := gpurun.ReadGenerateJob(dir)
		if err != nil {
			t.Fatal(err)
		}
		var codes []fakegpu.Code
		for _, m := range []struct {
			mod   *kir.Module
			model gpurun.Model
		}{{prefill, job.Prefill}, {decode, job.Decode}} {
			symbols := llvm.KernelNames(m.mod)
			if m.model.Plan.Format == gpurun.Cubin {
				if !bytes.HasPrefix(m.model.Image, []byte("\x7fELF")) {
					t.Fatalf("the cubin of %s is not ELF", m.mod.Name)
				}
				for i, k := range m.mod.Kernels {
					symbols[k] = m.model.Plan.Kernels[i].Symbol
				}
			} else if !bytes.Contains(m.model.Image, []byte(".entry "+symbols[m.mod.Kernels[0]])) {
				t.Fatalf("the PTX of %s has no entry %s", m.mod.Name, symbols[m.mod.Kernels[0]])
			}
			codes = append(codes, fakegpu.Code{Module: m.mod, Image: m.model.Image, Symbols: symbols})
		}
		gpu := fakegpu.NewModules(codes...)
		if tweak != nil {
			tweak(gpu)
		}
		res, err := gpurun.Generate(gpu, job)
		if cerr := gpu.Close(); err == nil && cerr != nil {
			t.Fatal(cerr)
		}
		if err != nil {
			return []byte("tec-cuda: " + err.Error() + "\n"), exitError(t)
		}
		return nil, gpurun.WriteGenerateResult(dir, res)
	}
}

// compileModel compiles the model name of file as tec does.
func compileModel(t *testing.T, file, name string) *te.Program {
	t.Helper()
	e := &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }}
	var cf compileFlags
	fs := flag.NewFlagSet("build", flag.ContinueOnError)
	cf.register(fs)
	if err := fs.Parse([]string{"--model", name}); err != nil {
		t.Fatal(err)
	}
	prog, code := e.compile(&cf, file)
	if prog == nil {
		t.Fatalf("compiling model %s of %s: status %d", name, file, code)
	}
	return prog
}

// refGenerate generates steps tokens per sequence with the reference
// evaluator, the cache carried from step to step on the host.
func refGenerate(t *testing.T, prefill, decode *te.Program, feeds map[string]*te.Array, steps int) [][]int32 {
	t.Helper()
	in := map[string]*te.Array{}
	for name, a := range feeds {
		in[name] = a
	}
	kc := prefill.Placeholders()[1]
	in[kc.Name] = te.NewArray(kc.DType, kc.Shape)
	var tokens [][]int32
	run := func(p *te.Program) {
		outs, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		in[kc.Name], in["ids"] = outs[kc.Name], outs["next"]
		if tokens == nil {
			tokens = make([][]int32, len(outs["next"].Data))
		}
		for b, v := range outs["next"].Data {
			tokens[b] = append(tokens[b], int32(v))
		}
	}
	run(prefill)
	P := prefill.Placeholders()[0].Shape[1]
	for i := range steps {
		pos := te.NewArray(te.I32, []int{len(tokens)})
		for b := range pos.Data {
			pos.Data[b] = float64(P + i)
		}
		in["pos"] = pos
		run(decode)
	}
	return tokens
}

// TestGenerateCUDA runs the toy LM of testdata/toylm.te through
// generateCUDA with tec-cuda's work done on a fake GPU: both models
// compiled to PTX, the job written and read back, the whole loop run by
// gpurun.Generate with every driver call checked. The tokens must be the
// reference evaluator's.
func TestGenerateCUDA(t *testing.T) {
	tooltest.Require(t, "LLVM (Debian: llvm)", "llc", "llc-16")
	const steps = 8
	pre, dec := compileModel(t, "testdata/toylm.te", "prefill"), compileModel(t, "testdata/toylm.te", "decode")
	rng := rand.New(rand.NewPCG(5, 6))
	feeds := map[string]*te.Array{}
	for _, ph := range pre.Placeholders() {
		if ph.Name == "kc" {
			continue
		}
		a := te.NewArray(ph.DType, ph.Shape)
		for i := range a.Data {
			if ph.DType == te.I32 {
				a.Data[i] = float64(rng.IntN(16))
			} else {
				a.Data[i] = te.Round(te.F32, 2*rng.Float64()-1)
			}
		}
		feeds[ph.Name] = a
	}
	want := refGenerate(t, pre, dec, feeds, steps)
	plan := &generate.Plan{Prefill: pre, Decode: dec}
	for _, level := range []int{0, 4} {
		models := [2]*driver.Compiled{}
		for i, name := range []string{"prefill", "decode"} {
			models[i] = buildCompiled(t, "testdata/toylm.te", []string{"--model", name}, level, "f32")
		}
		e := &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(k string) string { return map[string]string{"TEC_CUDA": "/bin/true"}[k] },
			execTecCUDA: fakeTecCUDAGenerate(t, models[0].Module, models[1].Module, nil)}
		gen, err := e.generateCUDA(plan, models[0], models[1], feeds, generate.Options{Steps: steps}, &cudaFlags{codegen: "ptx", target: "sm_80"})
		if err != nil {
			t.Fatalf("-O%d: %v", level, err)
		}
		if !reflect.DeepEqual(gen.Tokens, want) {
			t.Errorf("-O%d: tokens %v, want the reference's %v", level, gen.Tokens, want)
		}
		if len(gen.StepMS) != steps || gen.Device.Name != "fake GPU" || len(gen.DecodeLaunches) != len(models[1].Module.Kernels) {
			t.Errorf("-O%d: %+v", level, gen)
		}
	}
}

// TestGenerateCUDAErrors: a failure of tec-cuda is reported as tec run
// --device cuda reports it, naming both models; feeds missing for the
// models are an internal error before tec-cuda runs.
func TestGenerateCUDAErrors(t *testing.T) {
	tooltest.Require(t, "LLVM (Debian: llvm)", "llc", "llc-16")
	pre, dec := compileModel(t, "testdata/toylm.te", "prefill"), compileModel(t, "testdata/toylm.te", "decode")
	plan := &generate.Plan{Prefill: pre, Decode: dec}
	models := [2]*driver.Compiled{
		buildCompiled(t, "testdata/toylm.te", []string{"--model", "prefill"}, 4, "f32"),
		buildCompiled(t, "testdata/toylm.te", []string{"--model", "decode"}, 4, "f32"),
	}
	feeds := map[string]*te.Array{}
	for _, ph := range pre.Placeholders() {
		feeds[ph.Name] = te.NewArray(ph.DType, ph.Shape)
	}
	ran := false
	e := &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(k string) string { return map[string]string{"TEC_CUDA": "/bin/true"}[k] },
		execTecCUDA: func(ctx context.Context, runner, dir string) ([]byte, error) {
			ran = true
			return fakeTecCUDAGenerate(t, models[0].Module, models[1].Module, nil)(ctx, runner, dir)
		}}
	// Past the cache: positions 3..16 of a 16-position cache.
	_, err := e.generateCUDA(plan, models[0], models[1], feeds, generate.Options{Steps: 14}, &cudaFlags{codegen: "ptx", target: "sm_80"})
	const want = "running model prefill and decode on the GPU: decode step 13 (position 16): update index pos[0] = 16 is outside kc's dimension 1 [0, 16)"
	var f *failure
	if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &f) || f.code != codeCUDA {
		t.Errorf("past the cache: %v, want a %s failure %q", err, codeCUDA, want)
	}
	ran = false
	delete(feeds, "age")
	_, err = e.generateCUDA(plan, models[0], models[1], feeds, generate.Options{Steps: 2}, &cudaFlags{codegen: "ptx", target: "sm_80"})
	if err == nil || !strings.Contains(err.Error(), "no data for param age of model prefill") || ran {
		t.Errorf("a missing feed: %v (tec-cuda ran: %t)", err, ran)
	}
}

// TestGenerateCUDACommand runs tec generate --device cuda with tec-cuda's
// work done on a fake GPU: the tokens must be those of --device ref, and
// the text and JSON must describe the GPU run.
func TestGenerateCUDACommand(t *testing.T) {
	tooltest.Require(t, "LLVM (Debian: llvm)", "llc", "llc-16")
	const file = "testdata/toylm.te"
	common := []string{"--fill", "random", "--seed", "4", "--steps", "6", "--json", file}
	code, stdout, stderr := runTec(t, append([]string{"generate"}, common...)...)
	if code != exitOK {
		t.Fatalf("ref: status %d\n%s", code, stderr)
	}
	var want generateSummary
	if err := json.Unmarshal([]byte(stdout), &want); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"TEC_CUDA": os.Args[0]}
	for _, tc := range []struct {
		level   int
		codegen string
	}{{4, "ptx"}, {0, "ptx"}, {2, "cu"}} {
		t.Run(fmt.Sprintf("O%d-%s", tc.level, tc.codegen), func(t *testing.T) {
			if tc.codegen == "cu" {
				tooltest.NVCC(t)
			}
			opt := fmt.Sprintf("-O%d", tc.level)
			fake := fakeTecCUDAGenerate(t, buildModule(t, file, []string{"--model", "prefill"}, tc.level, "f32"),
				buildModule(t, file, []string{"--model", "decode"}, tc.level, "f32"), nil)
			args := append([]string{"generate", "--device", "cuda", opt, "--codegen", tc.codegen}, common...)
			code, stdout, stderr := runTecCUDA(t, vars, fake, args...)
			if code != exitOK {
				t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			var got generateSummary
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("%v\n%s", err, stdout)
			}
			if !reflect.DeepEqual(got.Tokens, want.Tokens) || got.Device != "cuda" {
				t.Errorf("tokens %v on %s, want the reference's %v", got.Tokens, got.Device, want.Tokens)
			}
			c := got.CUDA
			if c == nil || c.Device.Name != "fake GPU" || c.Codegen != tc.codegen || c.Target != "sm_80" || len(c.DecodeLaunches) == 0 ||
				len(got.StepMS) != 6 || float64(got.StepMS[0]) != float64(len(c.DecodeLaunches)) || float64(got.PrefillMS) != float64(len(c.PrefillLaunches)) {
				t.Errorf("summary %+v, cuda %+v: want the fake's 1 ms per kernel", got, c)
			}
			if tc.codegen != "ptx" {
				return
			}
			code, stdout, stderr = runTecCUDA(t, vars, fake, append(args[:len(args)-2], file)...)
			if code != exitOK {
				t.Fatalf("text: status %d\n%s", code, stderr)
			}
			for _, w := range []string{"models prefill and decode on cuda -O" + fmt.Sprint(tc.level) + ": 2 sequences, 6 decode steps", "gpu: fake GPU (sm_80, 2 SMs), ptx code for sm_80, ",
				"per decode step (times of the kernels, CUDA events)", "sequence 0: ", "decode steps: median "} {
				if !strings.Contains(stdout, w) {
					t.Errorf("no %q in\n%s", w, stdout)
				}
			}
		})
	}
}

// TestGenerateCUDACommandErrors: a failure on the GPU is said as tec run
// --device cuda says it (JSON code cuda), and the flags of --device cuda
// misused are usage errors.
func TestGenerateCUDACommandErrors(t *testing.T) {
	const file = "testdata/toylm.te"
	gen := []string{"generate", "--device", "cuda", "-O4", "--fill", "random", "--steps", "2", file}
	vars := map[string]string{"TEC_CUDA": os.Args[0]}
	var noBlock func(context.Context, string, string) ([]byte, error)
	if tooltest.Find("llc", "llc-16") != "" {
		noBlock = fakeTecCUDAGenerate(t, buildModule(t, file, []string{"--model", "prefill"}, 4, "f32"),
			buildModule(t, file, []string{"--model", "decode"}, 4, "f32"), func(g *fakegpu.GPU) { g.PerSM = 0 })
	}
	for _, tc := range []struct {
		name   string
		fake   func(context.Context, string, string) ([]byte, error)
		args   []string
		status int
		want   string
	}{
		{"not cooperative", noBlock, gen, exitUser,
			"tec generate: running model prefill and decode on the GPU: kernel "},
		{"json code", noBlock, append([]string{"generate", "--json"}, gen[1:]...), exitUser, `"code":"cuda"`},
		{"codegen without cuda", nil, []string{"generate", "--codegen", "cu", "--fill", "zeros", file}, exitUsage,
			"--codegen applies only with --device cuda; --device ref would ignore it"},
		{"bench", nil, append([]string{"generate", "--bench", "3"}, gen[1:]...), exitUsage, "flag provided but not defined: -bench"},
		{"race with cuda", nil, append([]string{"generate", "--race"}, gen[1:]...), exitUsage,
			"--race checks the kernels in the simulator, which only --device sim runs"},
		{"bad target", nil, append([]string{"generate", "--target", "sm_71"}, gen[1:]...), exitUsage, `--target: unknown target "sm_71"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.status == exitUser && tc.fake == nil {
				t.Skip("needs llc to compile the models")
			}
			code, stdout, stderr := runTecCUDA(t, vars, tc.fake, tc.args...)
			if out := stdout + stderr; code != tc.status || !strings.Contains(out, tc.want) {
				t.Errorf("status %d, output:\n%s\nwant status %d and %q", code, out, tc.status, tc.want)
			}
		})
	}
}

// TestTecCUDABinaryGenerate builds the real tec-cuda and runs the toy LM's
// generation through it: without a GPU, tec must say so in one line;
// with one, the tokens must be the reference's.
func TestTecCUDABinaryGenerate(t *testing.T) {
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
	bin := filepath.Join(t.TempDir(), "tec-cuda")
	build := exec.Command("go", "build", "-tags", "cuda", "-o", bin, "../tec-cuda")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags cuda ./cmd/tec-cuda: %v\n%s", err, out)
	}
	args := []string{"--fill", "random", "--seed", "9", "--steps", "10", "--json", "testdata/toylm.te"}
	code, want, stderr := runTec(t, append([]string{"generate"}, args...)...)
	if code != exitOK {
		t.Fatalf("ref: status %d\n%s", code, stderr)
	}
	code, stdout, stderr := runTecCUDA(t, map[string]string{"TEC_CUDA": bin}, nil, append([]string{"generate", "--device", "cuda"}, args...)...)
	switch {
	case code == exitOK:
		var got, ref generateSummary
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(want), &ref); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Tokens, ref.Tokens) {
			t.Errorf("tokens on the GPU %v, want the reference's %v", got.Tokens, ref.Tokens)
		}
	case strings.Contains(stdout, `no usable CUDA GPU: the CUDA driver failed to initialise (cuInit: `),
		strings.Contains(stdout, `no CUDA driver: `):
		// --json: the failure is a JSON diagnostic on standard output.
		if !strings.Contains(stdout, `"code":"cuda"`) {
			t.Errorf("no code cuda in\n%s", stdout)
		}
	default:
		t.Errorf("status %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestGenerateCUDALlama runs the tiny Llama's generation through tec
// generate --device cuda on the fake GPU at -O4 (every layer's K/V slot
// written in place into the 5-dimensional caches, which stay on the
// device): the tokens must be those of the same kernels run step by step
// in the simulator by --device sim.
func TestGenerateCUDALlama(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates the tiny Llama's steps")
	}
	tooltest.Require(t, "LLVM (Debian: llvm)", "llc", "llc-16")
	tiny := llamaTiny(t)
	args := append([]string{llamaFile, "-O4", "--fill", "random", "--seed", "3", "--steps", "4"}, tiny...)
	want := runGenerateJSON(t, append([]string{"--device", "sim", "--race=false"}, args...)...)
	mods := [2]*kir.Module{}
	for i, name := range []string{"prefill", "decode"} {
		mods[i] = buildModule(t, llamaFile, append(append([]string{}, tiny...), "--model", name), 4, "f32")
	}
	code, stdout, stderr := runTecCUDA(t, map[string]string{"TEC_CUDA": os.Args[0]}, fakeTecCUDAGenerate(t, mods[0], mods[1], nil),
		append([]string{"generate", "--json", "--device", "cuda"}, args...)...)
	if code != exitOK {
		t.Fatalf("status %d\n%s%s", code, stdout, stderr)
	}
	var got generateSummary
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Tokens, want.Tokens) {
		t.Errorf("tokens %v, want --device sim's %v", got.Tokens, want.Tokens)
	}
}

// TestGenerateCUDATimeout: tec generate --device cuda stops a tec-cuda
// that has not finished the generation after --timeout, as tec run does,
// says why, and removes the job's directory; a negative --timeout is a
// usage error.
func TestGenerateCUDATimeout(t *testing.T) {
	const file = "testdata/toylm.te"
	var jobDir string
	hang := func(ctx context.Context, _, dir string) ([]byte, error) {
		jobDir = dir
		<-ctx.Done() // a kernel that never ends, until its process does
		return nil, errors.New("killed")
	}
	vars := map[string]string{"TEC_CUDA": os.Args[0]}
	args := []string{"generate", "--device", "cuda", "--fill", "random", "--steps", "2", file}
	code, stdout, stderr := runTecCUDA(t, vars, hang, append(args, "--timeout", "200ms")...)
	const want = "had not finished after 200ms (--timeout), and was stopped"
	if code != exitUser || !strings.Contains(stderr, want) {
		t.Fatalf("status %d, want %d with %q\nstdout:\n%s\nstderr:\n%s", code, exitUser, want, stdout, stderr)
	}
	if jobDir == "" {
		t.Fatal("tec-cuda was not run")
	}
	if _, err := os.Stat(filepath.Dir(jobDir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the job's directory %s is still there (%v)", filepath.Dir(jobDir), err)
	}
	code, _, stderr = runTecCUDA(t, vars, hang, append(args, "--timeout", "-1s")...)
	if code != exitUsage || !strings.Contains(stderr, "--timeout -1s: must not be negative") {
		t.Errorf("--timeout -1s: status %d\n%s", code, stderr)
	}
}
