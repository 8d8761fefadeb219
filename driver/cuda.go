package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"tec/backend/cuda"
	"tec/backend/gpurun"
	"tec/backend/kir"
	"tec/backend/llvm"
	"tec/generate"
	"tec/gpu"
	"tec/te"
)

// The code a CUDA device runs (CUDA.Codegen).
const (
	CodegenPTX = "ptx" // the LLVM path's PTX, which the CUDA driver compiles
	CodegenCU  = "cu"  // the CUDA C++, compiled to a cubin by nvcc
)

// CUDA runs the kernels on an NVIDIA GPU through tec-cuda, the GPU runner:
// it compiles them for Target, writes a job (gpurun.WriteJob) to a
// temporary directory, has Call run tec-cuda on it and reads the result.
// The directory, which holds the weights among the feeds, is removed in
// every case.
type CUDA struct {
	// Runner is tec-cuda's path, for messages.
	Runner string
	// Codegen is CodegenPTX or CodegenCU.
	Codegen string
	Target  gpu.Arch
	// Bench is the number of timed runs after the first (0: none), Warmup
	// the untimed runs before them.
	Bench, Warmup int
	// Call runs tec-cuda on the job in jobDir and returns once it has
	// exited. Its error is the run's, as it is.
	Call func(ctx context.Context, jobDir string) error
	// TempDir is where the job's directory is made ("": os.TempDir).
	TempDir string
}

// GPURun is what a run on the GPU did, as tec-cuda reported it.
type GPURun struct {
	*gpurun.Result
	// Plan is the plan of the run: the buffers and the kernels, in
	// launch order.
	Plan *gpurun.Plan
}

// Name implements Device.
func (*CUDA) Name() string { return "cuda" }

// Kernels implements Device.
func (*CUDA) Kernels() bool { return true }

// Memory implements Device: the feeds and the outputs, each as an array
// and as the bytes the device stores.
func (*CUDA) Memory(prog *te.Program, _ *Compiled) Memory {
	var m Memory
	for _, t := range append(prog.Placeholders(), prog.Outputs...) {
		m.Add(tensorUse(t, arrayElemBytes+int64(t.DType.Size())))
	}
	return m
}

// Run implements Device. SIGINT and SIGTERM end ctx while it runs (see
// TecCUDA.Call), rather than the process, until the job's directory is
// removed.
func (d *CUDA) Run(ctx context.Context, prog *te.Program, c *Compiled, feeds map[string]*te.Array) (*Result, error) {
	ctx, stop := withInterrupt(ctx)
	defer stop() // after the removal below: a signal meanwhile waits for it
	dir, err := os.MkdirTemp(d.TempDir, "tec-cuda-")
	if err != nil {
		return nil, &Error{Kind: ErrIO, Err: err}
	}
	defer os.RemoveAll(dir)
	model, err := d.model(ctx, prog.Name, c, dir)
	if err != nil {
		return nil, err
	}
	plan := model.Plan
	job := &gpurun.Job{Plan: plan, Options: gpurun.Options{Bench: d.Bench, Warmup: d.Warmup}, Image: model.Image, Feeds: map[int][]byte{}}
	if d.Bench == 0 {
		job.Options.Warmup = 0
	}
	for i, b := range plan.Buffers {
		if !b.Fed() {
			continue
		}
		data, err := gpurun.Encode(feeds[b.Name], b)
		if err != nil {
			return nil, &Error{Kind: ErrInternal, Err: err}
		}
		job.Feeds[i] = data
	}
	jobDir, err := d.runJob(ctx, dir, func(jobDir string) error { return gpurun.WriteJob(jobDir, job) })
	if err != nil {
		return nil, err
	}
	res, err := gpurun.ReadResult(jobDir, plan)
	if err != nil {
		return nil, &Error{Kind: ErrDevice, Err: fmt.Errorf("reading what %s wrote: %w", d.Runner, err)}
	}
	outs := map[string]*te.Array{}
	for i, t := range prog.Outputs {
		a, err := gpurun.Decode(res.Outputs[i], plan.Buffers[plan.Outputs[i]])
		if err != nil {
			return nil, &Error{Kind: ErrInternal, Err: err}
		}
		outs[t.Name] = a
	}
	return &Result{Outputs: outs, GPU: &GPURun{Result: res, Plan: plan}}, nil
}

// Generate runs a generation on the GPU (gpurun.Generate, inside
// tec-cuda): the prefill plan.Prefill (compiled as prefill) over the
// prompts, feeds[generate.IDs], then o.Steps decode steps of plan.Decode
// (compiled as decode) at most, with the params and caches kept on the
// GPU, each token the model's next or drawn as o.Sampling says (the
// compiled models must then output their logits: Plan.OutputLogits), the
// sequences ending at o.EOS. feeds holds the prompts and the data of every
// input and param of the two models but the caches and the decode step's
// ids and pos, by name. The loop runs in tec-cuda, which can call no
// function of this process: o.Stop and o.Each must be nil, and the tokens
// come at the end.
func (d *CUDA) Generate(ctx context.Context, plan *generate.Plan, prefill, decode *Compiled, feeds map[string]*te.Array, o generate.Options) (*gpurun.GenerateResult, error) {
	if o.Stop != nil || o.Each != nil {
		return nil, &Error{Kind: ErrInternal, Err: errors.New("a generation on the GPU runs its loop in tec-cuda, which calls no Stop nor Each")}
	}
	if err := plan.CheckSampling(o.Sampling); err != nil {
		return nil, &Error{Kind: ErrInternal, Err: err}
	}
	dir, err := os.MkdirTemp(d.TempDir, "tec-cuda-")
	if err != nil {
		return nil, &Error{Kind: ErrIO, Err: err}
	}
	defer os.RemoveAll(dir)
	job := &gpurun.GenerateJob{Steps: o.Steps, Feeds: map[string][]byte{}, Sampling: o.Sampling, EOS: o.EOS}
	if !o.Sampling.Greedy() {
		job.Logits = [2]string{plan.Logits[plan.Prefill.Name].Name, plan.Logits[plan.Decode.Name].Name}
	}
	for _, m := range []struct {
		role string
		prog *te.Program
		c    *Compiled
		out  *gpurun.Model
	}{{"prefill", plan.Prefill, prefill, &job.Prefill}, {"decode", plan.Decode, decode, &job.Decode}} {
		// Each model's code in a directory of its own: the emitters name
		// their files after nothing that tells the two apart.
		sub := filepath.Join(dir, m.role)
		if err := os.Mkdir(sub, 0o755); err != nil {
			return nil, &Error{Kind: ErrIO, Err: err}
		}
		model, err := d.model(ctx, m.prog.Name, m.c, sub)
		if err != nil {
			return nil, err
		}
		*m.out = model
	}
	if err := encodeGenerationFeeds(job, feeds); err != nil {
		return nil, err
	}
	if err := job.Check(); err != nil {
		return nil, &Error{Kind: ErrDevice, Err: fmt.Errorf("models %s and %s: %w", plan.Prefill.Name, plan.Decode.Name, err)}
	}
	jobDir, err := d.runJob(ctx, dir, func(jobDir string) error { return gpurun.WriteGenerateJob(jobDir, job) })
	if err != nil {
		return nil, err
	}
	res, err := gpurun.ReadGenerateResult(jobDir, job)
	if err != nil {
		return nil, &Error{Kind: ErrDevice, Err: fmt.Errorf("reading what %s wrote: %w", d.Runner, err)}
	}
	return res, nil
}

// encodeGenerationFeeds encodes into job the prompts and every input and
// param the two models take by name: all that are fed but the caches
// (updated in place, zeroed on the device) and the decode step's ids and
// pos.
func encodeGenerationFeeds(job *gpurun.GenerateJob, feeds map[string]*te.Array) error {
	for _, p := range []*gpurun.Plan{job.Prefill.Plan, job.Decode.Plan} {
		for _, b := range p.Buffers {
			if !b.Fed() || b.InPlace || p == job.Decode.Plan && generate.PerStep(b.Name) {
				continue
			}
			if _, ok := job.Feeds[b.Name]; ok {
				continue
			}
			a, ok := feeds[b.Name]
			if !ok {
				return &Error{Kind: ErrInternal, Err: fmt.Errorf("no data for %s %s of model %s", b.Role, b.Name, p.Model)}
			}
			data, err := gpurun.Encode(a, b)
			if err != nil {
				return &Error{Kind: ErrInternal, Err: err}
			}
			job.Feeds[b.Name] = data
		}
	}
	return nil
}

// runJob makes the directory of tec-cuda's job in dir, writes the job
// there with write and has Call run tec-cuda on it; it returns the job's
// directory, which then holds the result.
func (d *CUDA) runJob(ctx context.Context, dir string, write func(jobDir string) error) (string, error) {
	jobDir := filepath.Join(dir, "job")
	if err := os.Mkdir(jobDir, 0o755); err != nil {
		return "", &Error{Kind: ErrIO, Err: err}
	}
	if err := write(jobDir); err != nil {
		return "", &Error{Kind: ErrIO, Err: fmt.Errorf("writing the job for tec-cuda: %w", err)}
	}
	if err := d.Call(ctx, jobDir); err != nil {
		return "", err
	}
	return jobDir, nil
}

// model compiles c, the kernels of the model named name, for the GPU as
// d.Codegen says (working in dir) and returns its plan and code.
func (d *CUDA) model(ctx context.Context, name string, c *Compiled, dir string) (gpurun.Model, error) {
	image, symbols, format, err := d.compile(ctx, c, dir)
	if err != nil {
		return gpurun.Model{}, &Error{Kind: ErrBuild, Err: fmt.Errorf("compiling model %s for the GPU: %w", name, err)}
	}
	plan, err := gpurun.NewPlan(c.Module, c.Layout(), symbols, format)
	if err != nil {
		return gpurun.Model{}, &Error{Kind: ErrInternal, Err: err}
	}
	plan.Target = d.Target.Name
	return gpurun.Model{Plan: plan, Image: image}, nil
}

// compile returns c's code for the GPU as d.Codegen asks (the LLVM path's
// PTX, or a cubin that nvcc compiles from the CUDA C++ in dir), the
// symbol of each kernel's function in it, and its format.
func (d *CUDA) compile(ctx context.Context, c *Compiled, dir string) ([]byte, map[*kir.Kernel]string, string, error) {
	tg := d.Target
	if d.Codegen == CodegenPTX {
		files, err := Emit(ctx, c, tg, Outputs{PTX: true})
		if err != nil {
			return nil, nil, "", err
		}
		return files[0].Data, llvm.KernelNames(c.Module), gpurun.PTX, nil
	}
	if _, err := exec.LookPath("nvcc"); err != nil {
		return nil, nil, "", errors.New("--codegen cu needs nvcc on PATH (the CUDA toolkit; Debian: nvidia-cuda-toolkit), or use --codegen ptx")
	}
	cubin, _, err := nvccCubin(ctx, c, tg, dir)
	if err != nil {
		return nil, nil, "", err
	}
	symbols, err := gpurun.CubinSymbols(cubin, cuda.KernelNames(c.Module))
	if err != nil {
		return nil, nil, "", err
	}
	return cubin, symbols, gpurun.Cubin, nil
}
