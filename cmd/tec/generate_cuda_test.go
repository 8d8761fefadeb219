package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"tec/backend/gpurun"
	"tec/backend/gpurun/fakegpu"
	"tec/backend/kir"
	"tec/backend/llvm"
	"tec/internal/tooltest"
	"tec/te"
)

// fakeTecCUDAGenerate does what tec-cuda does with a generation job, on a
// fake GPU that runs both modules (checking every driver call against
// them) and computes with the simulator.
func fakeTecCUDAGenerate(t *testing.T, prefill, decode *kir.Module) func(ctx context.Context, runner, dir string) ([]byte, error) {
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
			if !bytes.Contains(m.model.Image, []byte(".entry "+symbols[m.mod.Kernels[0]])) {
				t.Fatalf("the PTX of %s has no entry %s", m.mod.Name, symbols[m.mod.Kernels[0]])
			}
			codes = append(codes, fakegpu.Code{Module: m.mod, Image: m.model.Image, Symbols: symbols})
		}
		gpu := fakegpu.NewModules(codes...)
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
	for _, level := range []int{0, 4} {
		models := [2]genModel{}
		for i, name := range []string{"prefill", "decode"} {
			models[i] = genModel{prog: []*te.Program{pre, dec}[i], mod: buildModule(t, "testdata/toylm.te", []string{"--model", name}, level, "f32")}
		}
		e := &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(k string) string { return map[string]string{"TEC_CUDA": "/bin/true"}[k] },
			execTecCUDA: fakeTecCUDAGenerate(t, models[0].mod, models[1].mod)}
		gen, err := e.generateCUDA(models[0], models[1], feeds, steps, &cudaFlags{codegen: "ptx", target: "sm_80"})
		if err != nil {
			t.Fatalf("-O%d: %v", level, err)
		}
		if !reflect.DeepEqual(gen.Tokens, want) {
			t.Errorf("-O%d: tokens %v, want the reference's %v", level, gen.Tokens, want)
		}
		if len(gen.StepMS) != steps || gen.Device.Name != "fake GPU" || len(gen.DecodeLaunches) != len(models[1].mod.Kernels) {
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
	models := [2]genModel{
		{prog: pre, mod: buildModule(t, "testdata/toylm.te", []string{"--model", "prefill"}, 4, "f32")},
		{prog: dec, mod: buildModule(t, "testdata/toylm.te", []string{"--model", "decode"}, 4, "f32")},
	}
	feeds := map[string]*te.Array{}
	for _, ph := range pre.Placeholders() {
		feeds[ph.Name] = te.NewArray(ph.DType, ph.Shape)
	}
	ran := false
	e := &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(k string) string { return map[string]string{"TEC_CUDA": "/bin/true"}[k] },
		execTecCUDA: func(ctx context.Context, runner, dir string) ([]byte, error) {
			ran = true
			return fakeTecCUDAGenerate(t, models[0].mod, models[1].mod)(ctx, runner, dir)
		}}
	// Past the cache: positions 3..16 of a 16-position cache.
	_, err := e.generateCUDA(models[0], models[1], feeds, 14, &cudaFlags{codegen: "ptx", target: "sm_80"})
	const want = "running model prefill and decode on the GPU: decode step 13 (position 16): update index pos[0] = 16 is outside kc's dimension 1 [0, 16)"
	var f *failure
	if err == nil || !strings.Contains(err.Error(), want) || !errors.As(err, &f) || f.code != codeCUDA {
		t.Errorf("past the cache: %v, want a %s failure %q", err, codeCUDA, want)
	}
	ran = false
	delete(feeds, "age")
	_, err = e.generateCUDA(models[0], models[1], feeds, 2, &cudaFlags{codegen: "ptx", target: "sm_80"})
	if err == nil || !strings.Contains(err.Error(), "no data for param age of model prefill") || ran {
		t.Errorf("a missing feed: %v (tec-cuda ran: %t)", err, ran)
	}
}
