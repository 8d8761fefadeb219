package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"tec/backend/gpurun"
	"tec/driver"
	"tec/generate"
	"tec/gpu"
	"tec/te"
)

// registerGenerate registers the flags of tec generate --device cuda:
// those of tec run's but --bench and --warmup (every step is timed).
func (cf *cudaFlags) registerGenerate(fs *flag.FlagSet) {
	fs.StringVar(&cf.codegen, "codegen", "ptx", "with --device cuda, the code to run: ptx (the LLVM path's PTX, compiled by the driver) or cu (the CUDA C++, compiled by nvcc)")
	fs.StringVar(&cf.target, "target", gpu.DefaultArch(), "with --device cuda, the GPU architecture to compile for: "+strings.Join(gpu.ArchNames(), " or "))
	fs.DurationVar(&cf.timeout, "timeout", defaultCUDATimeout, "with --device cuda, stop tec-cuda if the whole generation has not finished after this long; 0 for no limit")
}

// generateOnGPU runs the generation of plan on the GPU (tec generate
// --device cuda): the kernels mods, the prompt and the shared feeds, the
// whole loop in tec-cuda. The times are the kernels', from CUDA events.
func (e *env) generateOnGPU(plan *generate.Plan, mods map[*te.Program]*driver.Compiled, prompt *te.Array, shared map[string]*te.Array, gf *generateFlags, o generate.Options) (*generate.Result, *cudaGeneration, error) {
	if err := plan.CheckPrompt(prompt); err != nil {
		return nil, nil, err
	}
	if err := plan.CheckSteps(o.Steps); err != nil {
		return nil, nil, err
	}
	feeds := maps.Clone(shared)
	feeds[generate.IDs] = prompt
	gen, err := e.generateCUDA(plan, mods[plan.Prefill], mods[plan.Decode], feeds, o, &gf.cuda)
	if err != nil {
		return nil, nil, err
	}
	res := &generate.Result{Tokens: make([][]int, len(gen.Tokens)), Finish: gen.Finish, Prefill: duration(gen.PrefillMS)}
	for b, toks := range gen.Tokens {
		for _, t := range toks {
			res.Tokens[b] = append(res.Tokens[b], int(t))
		}
	}
	for _, ms := range gen.StepMS {
		res.Steps = append(res.Steps, duration(ms))
	}
	return res, gen, nil
}

// duration converts milliseconds to a duration.
func duration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// printGenerateCUDA prints the GPU and the launches of both models.
func printGenerateCUDA(w io.Writer, g *cudaGeneration) {
	d := g.Device
	fmt.Fprintf(w, "gpu: %s (%s, %d SMs), %s code for %s, %d %s per prefill and %d per decode step (times of the kernels, CUDA events)\n",
		d.Name, d.Arch(), d.SMs, g.Codegen, g.Target, len(g.PrefillLaunches), plural(len(g.PrefillLaunches), "kernel launch", "kernel launches"), len(g.DecodeLaunches))
}

// cudaGeneration is what tec generate --device cuda did: the GPU, both
// models' launches, the tokens and the timings, as tec-cuda reported them.
type cudaGeneration struct {
	Runner          string              `json:"runner"` // the tec-cuda that ran it
	Codegen         string              `json:"codegen"`
	Target          string              `json:"target"`
	Device          gpurun.Device       `json:"device"`
	PrefillLaunches []gpurun.LaunchInfo `json:"prefill_launches"`
	DecodeLaunches  []gpurun.LaunchInfo `json:"decode_launches"`
	// Tokens are each sequence's tokens, Finish why it ended; PrefillMS
	// and StepMS the times of the prefill's and each step's kernels (CUDA
	// events).
	Tokens    [][]int32         `json:"-"`
	Finish    []generate.Finish `json:"-"`
	PrefillMS float64           `json:"-"`
	StepMS    []float64         `json:"-"`
}

// generateCUDA runs a generation of plan on the GPU through tec-cuda
// (driver.CUDA.Generate): the prefill, compiled as prefill, over the
// prompts (feeds["ids"]), then o.Steps decode steps at most, compiled as
// decode, the whole loop inside tec-cuda with the params and caches kept
// on the GPU, sampling and ending as o says. feeds holds the prompts and
// the data of every input and param of the two models but the caches and
// decode's ids and pos, by name.
func (e *env) generateCUDA(plan *generate.Plan, prefill, decode *driver.Compiled, feeds map[string]*te.Array, o generate.Options, cf *cudaFlags) (*cudaGeneration, error) {
	dev, err := e.cudaDevice(plan.Prefill.Name+" and "+plan.Decode.Name, cf)
	if err != nil {
		return nil, err
	}
	res, err := dev.Generate(context.Background(), plan, prefill, decode, feeds, o)
	if err != nil {
		return nil, runFailure(err)
	}
	return &cudaGeneration{Runner: dev.Runner, Codegen: cf.codegen, Target: dev.Target.Name,
		Device: res.Device, PrefillLaunches: res.PrefillLaunches, DecodeLaunches: res.DecodeLaunches,
		Tokens: res.Tokens, Finish: res.Finish, PrefillMS: res.PrefillMS, StepMS: res.StepMS}, nil
}
