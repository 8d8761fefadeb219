package driver

import (
	"context"
	"fmt"

	"tec/backend/sim"
	"tec/te"
)

// Device is where a program runs.
type Device interface {
	// Name is the device's name on tec's command line: ref, sim or cuda.
	Name() string
	// Kernels reports whether the device runs the pipeline's kernels of a
	// program, which Memory and Run then need compiled, rather than the
	// program itself.
	Kernels() bool
	// Memory estimates the host memory of a run of prog (c, its
	// compilation, nil where Kernels is false), the feeds and the outputs
	// included.
	Memory(prog *te.Program, c *Compiled) Memory
	// Seconds estimates the seconds of one core's time that a run of prog
	// (c as for Memory) takes.
	Seconds(prog *te.Program, c *Compiled) float64
	// WorkSeconds estimates the seconds of one core's time that running
	// work w takes, from the work alone (a run of several programs, whose
	// kernels are not at hand).
	WorkSeconds(w te.Work) float64
	// Run runs prog (c, its compilation, nil where Kernels is false) on
	// feeds, one array for each of its placeholders by name.
	Run(ctx context.Context, prog *te.Program, c *Compiled, feeds map[string]*te.Array) (*Result, error)
}

// Result is what a run gave.
type Result struct {
	// Outputs are the program's outputs by name.
	Outputs map[string]*te.Array
	// GPU describes a run on the GPU (CUDA), and is nil elsewhere.
	GPU *GPURun
}

// Reference is the reference evaluator: the program itself, in float64
// arithmetic, the oracle that every other device is checked against.
type Reference struct {
	Options te.EvalOptions
}

// Name implements Device.
func (Reference) Name() string { return "ref" }

// Kernels implements Device.
func (Reference) Kernels() bool { return false }

// Memory implements Device.
func (Reference) Memory(prog *te.Program, _ *Compiled) Memory { return referenceMemory(prog) }

// Run implements Device.
func (r Reference) Run(_ context.Context, prog *te.Program, _ *Compiled, feeds map[string]*te.Array) (*Result, error) {
	outs, err := te.Evaluate(prog, feeds, r.Options)
	if err != nil {
		return nil, &Error{Kind: ErrEval, Err: fmt.Errorf("evaluating model %s on ref: %w", prog.Name, err)}
	}
	return &Result{Outputs: outs}, nil
}

// Simulator runs the kernels in the kernel-IR simulator, on the CPU with
// CUDA's semantics.
type Simulator struct {
	Options sim.Options
}

// Name implements Device.
func (Simulator) Name() string { return "sim" }

// Kernels implements Device.
func (Simulator) Kernels() bool { return true }

// Memory implements Device: the feeds, every buffer of the module (each
// has memory of its own, with access records under race detection), the
// blocks' shared and local memory, and the outputs copied out.
func (s Simulator) Memory(prog *te.Program, c *Compiled) Memory {
	var m Memory
	for _, t := range prog.Placeholders() {
		m.Total += ArrayBytes(t)
	}
	est := sim.EstimateMemory(c.Module, s.Options)
	for i, b := range c.Module.Buffers {
		m.Add(Use{Name: b.Name, Type: (&te.Tensor{DType: b.DType, Shape: b.Shape}).TypeString(), Bytes: est.Buffers[i]})
	}
	for _, b := range c.Module.Outputs {
		m.Total += int64(b.Len()) * arrayElemBytes
	}
	m.Total += est.Blocks
	return m
}

// Run implements Device. Data races and uninitialised reads, found under
// Options.Race, are a *RaceError.
func (s Simulator) Run(_ context.Context, prog *te.Program, c *Compiled, feeds map[string]*te.Array) (*Result, error) {
	r, err := sim.Run(c.Module, feeds, s.Options)
	if err != nil {
		return nil, &Error{Kind: ErrEval, Err: fmt.Errorf("evaluating model %s on sim: %w", prog.Name, err)}
	}
	if r.RaceCount > 0 {
		return nil, &RaceError{Model: prog.Name, Races: r.Races, Count: r.RaceCount}
	}
	outs := map[string]*te.Array{}
	for i, t := range prog.Outputs {
		outs[t.Name] = r.Outputs[c.Module.Outputs[i].Name]
	}
	return &Result{Outputs: outs}, nil
}

// ErrorKind says what part of a run failed.
type ErrorKind int

// The kinds of Error.
const (
	ErrEval     ErrorKind = iota + 1 // the device failed evaluating the program
	ErrIO                            // a file of the run could not be written
	ErrBuild                         // compiling the kernels for the device failed
	ErrDevice                        // the device's runner gave back what cannot be read
	ErrInternal                      // a bug: data that should fit does not
)

// Error is an error of a run, of a kind; its message is Err's.
type Error struct {
	Kind ErrorKind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// RaceError reports the data races and uninitialised reads that the
// simulator found: the first few (Races) of Count.
type RaceError struct {
	Model string
	Races []sim.Race
	Count int
}

func (e *RaceError) Error() string {
	more := ""
	if e.Count > len(e.Races) {
		more = fmt.Sprintf(" (the first %d shown)", len(e.Races))
	}
	return fmt.Sprintf("evaluating model %s on sim: %d data races or uninitialised reads%s", e.Model, e.Count, more)
}
