// Package driver compiles tensor-expression programs and runs them: the one
// place where a .te source or a lowered program becomes kernels (Compile),
// files (Emit), a static cost report (Compiled.Report) and outputs (a
// Device's Run). The command tec, the program fuzzer and the benchmarks
// all go through it, so that "compile and emit" is written once.
//
// A Device is where a program runs: the reference evaluator (Reference),
// the kernel-IR simulator (Simulator) or an NVIDIA GPU through tec-cuda,
// the GPU runner (CUDA, whose jobs TecCUDA runs). Each estimates, before
// the run, the memory the run needs and the time it takes.
package driver

import (
	"fmt"

	"tec/backend/kir"
	"tec/lang"
	"tec/pipeline"
	"tec/te"
)

// Compiled is a program built through the pipeline: the pipeline's result
// (the transformed program, its plan and its kernels) and the workspace
// layout that every emitter and report of it shares.
type Compiled struct {
	*pipeline.Result
	// Registers, when set, says which register figure each kernel's
	// occupancy counted, and what ptxas made of the kernels
	// (CompileChecked).
	Registers *RegisterCheck
	layout    *kir.Layout
}

// Compile builds prog through the pipeline with opts. The module it
// returns has passed kir.Verify.
func Compile(prog *te.Program, opts pipeline.Options) (*Compiled, error) {
	res, err := pipeline.Build(prog, opts)
	if err != nil {
		return nil, err
	}
	return &Compiled{Result: res}, nil
}

// Layout returns the workspace layout of c's module, computed on first use.
func (c *Compiled) Layout() *kir.Layout {
	if c.layout == nil {
		c.layout = c.Module.Layout()
	}
	return c.layout
}

// Check parses, checks and lowers the model of src (named file) that cfg
// selects. Its error is the diagnostics (a diag.List) when any is an
// error; warnings are dropped.
func Check(file string, src []byte, cfg lang.Config) (*te.Program, error) {
	p, diags := lang.Check(file, src, cfg)
	if diags.HasErrors() {
		return nil, fmt.Errorf("check: %w", diags)
	}
	return p, nil
}

// CompileSource checks src as Check does and compiles the program as
// Compile does.
func CompileSource(file string, src []byte, cfg lang.Config, opts pipeline.Options) (*Compiled, error) {
	p, err := Check(file, src, cfg)
	if err != nil {
		return nil, err
	}
	c, err := Compile(p, opts)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	return c, nil
}
