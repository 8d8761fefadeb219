package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tec/backend/gpurun"
	"tec/backend/kir"
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
func (e *env) generateOnGPU(plan *generate.Plan, mods map[*te.Program]*kir.Module, prompt *te.Array, shared map[string]*te.Array, gf *generateFlags) (*generate.Result, *cudaGeneration, error) {
	if err := plan.CheckPrompt(prompt); err != nil {
		return nil, nil, err
	}
	if err := plan.CheckSteps(gf.steps); err != nil {
		return nil, nil, err
	}
	feeds := maps.Clone(shared)
	feeds[generate.IDs] = prompt
	gen, err := e.generateCUDA(genModel{plan.Prefill, mods[plan.Prefill]}, genModel{plan.Decode, mods[plan.Decode]}, feeds, gf.steps, &gf.cuda)
	if err != nil {
		return nil, nil, err
	}
	res := &generate.Result{Tokens: make([][]int, len(gen.Tokens)), Prefill: duration(gen.PrefillMS)}
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

// genModel is one model of a generation: its program and its kernels.
type genModel struct {
	prog *te.Program
	mod  *kir.Module
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
	// Tokens are each sequence's steps+1 tokens; PrefillMS and StepMS the
	// times of the prefill's and each step's kernels (CUDA events).
	Tokens    [][]int32 `json:"-"`
	PrefillMS float64   `json:"-"`
	StepMS    []float64 `json:"-"`
}

// generateCUDA runs a greedy generation on the GPU through tec-cuda: the
// prefill model over the prompts (feeds["ids"]), then steps decode steps,
// the whole loop inside tec-cuda with the params and caches kept on the
// GPU (gpurun.Generate). feeds holds the prompts and the data of every
// input and param of the two models but the caches and decode's ids and
// pos, by name.
func (e *env) generateCUDA(prefill, decode genModel, feeds map[string]*te.Array, steps int, cf *cudaFlags) (*cudaGeneration, error) {
	runner, err := e.findTecCUDA()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tec-cuda-")
	if err != nil {
		return nil, fail(codeIO, err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	job := &gpurun.GenerateJob{Steps: steps, Feeds: map[string][]byte{}}
	gen := &cudaGeneration{Runner: runner, Codegen: cf.codegen}
	for _, m := range []struct {
		name  string
		model genModel
		out   *gpurun.Model
	}{{"prefill", prefill, &job.Prefill}, {"decode", decode, &job.Decode}} {
		// Each model's code in a directory of its own: the emitters name
		// their files after nothing that tells the two apart.
		sub := filepath.Join(dir, m.name)
		if err := os.Mkdir(sub, 0o755); err != nil {
			return nil, fail(codeIO, err)
		}
		model, tg, err := gpuModel(ctx, m.model.prog, m.model.mod, cf, sub)
		if err != nil {
			return nil, err
		}
		*m.out, gen.Target = model, tg.Name
	}
	if err := encodeGenerationFeeds(job, feeds); err != nil {
		return nil, err
	}
	if err := job.Check(); err != nil {
		return nil, &failure{code: codeCUDA, err: fmt.Errorf("models %s and %s: %w", prefill.prog.Name, decode.prog.Name, err)}
	}
	jobDir, err := jobDir(dir)
	if err != nil {
		return nil, err
	}
	if err := gpurun.WriteGenerateJob(jobDir, job); err != nil {
		return nil, fail(codeIO, fmt.Errorf("writing the job for tec-cuda: %w", err))
	}
	if err := e.callTecCUDA(ctx, runner, prefill.prog.Name+" and "+decode.prog.Name, jobDir, cf.timeout); err != nil {
		return nil, err
	}
	res, err := gpurun.ReadGenerateResult(jobDir, job)
	if err != nil {
		return nil, &failure{code: codeCUDA, err: fmt.Errorf("reading what %s wrote: %w", runner, err)}
	}
	gen.Device, gen.PrefillLaunches, gen.DecodeLaunches = res.Device, res.PrefillLaunches, res.DecodeLaunches
	gen.Tokens, gen.PrefillMS, gen.StepMS = res.Tokens, res.PrefillMS, res.StepMS
	return gen, nil
}

// encodeGenerationFeeds encodes into job the prompts and every input and
// param the two models take by name: all that are fed but the caches
// (updated in place, zeroed on the device) and decode's ids and pos.
func encodeGenerationFeeds(job *gpurun.GenerateJob, feeds map[string]*te.Array) error {
	for _, p := range []*gpurun.Plan{job.Prefill.Plan, job.Decode.Plan} {
		for _, b := range p.Buffers {
			if !b.Fed() || b.InPlace || p == job.Decode.Plan && (b.Name == "ids" || b.Name == "pos") {
				continue
			}
			if _, ok := job.Feeds[b.Name]; ok {
				continue
			}
			a, ok := feeds[b.Name]
			if !ok {
				return fail(codeInternal, fmt.Errorf("no data for %s %s of model %s", b.Role, b.Name, p.Model))
			}
			data, err := gpurun.Encode(a, b)
			if err != nil {
				return fail(codeInternal, err)
			}
			job.Feeds[b.Name] = data
		}
	}
	return nil
}
