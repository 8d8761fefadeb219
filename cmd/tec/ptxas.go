package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"tec/driver"
	"tec/gpu"
	"tec/pipeline"
	"tec/te"
)

// registerPTXAS registers --ptxas, whose value p receives.
func registerPTXAS(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "ptxas", "auto", "check the registers of -O3 and -O4 kernels with ptxas: auto (when nvcc, or llc and ptxas, are on PATH: compile the kernels under the plan's launch bounds and plan again where ptxas spills under them) or off (the planner's estimates)")
}

// toolchain returns the compiler that --ptxas mode has check the
// registers of kernels built for tg: off none; auto nvcc or llc and ptxas,
// whichever is on PATH, the LLVM path first where llvmFirst (the build
// emits LLVM IR or PTX and no CUDA C++), or none when neither is.
func (e *env) toolchain(mode string, tg gpu.Arch, llvmFirst bool) (driver.Toolchain, error) {
	switch mode {
	case "off":
		return driver.NoToolchain, nil
	case "auto":
	default:
		return driver.NoToolchain, fmt.Errorf("--ptxas %s: want auto or off", mode)
	}
	if tg.Name == "" {
		return driver.NoToolchain, nil
	}
	_, nvcc := e.lookPath("nvcc")
	_, ptxas := e.lookPath("ptxas")
	llc := false
	for _, name := range tg.LLC {
		if _, ok := e.lookPath(name); ok {
			llc = true
		}
	}
	order := []driver.Toolchain{driver.NVCC, driver.LLCPTXAS}
	if llvmFirst {
		order = []driver.Toolchain{driver.LLCPTXAS, driver.NVCC}
	}
	for _, t := range order {
		if t == driver.NVCC && nvcc || t == driver.LLCPTXAS && llc && ptxas {
			return t, nil
		}
	}
	return driver.NoToolchain, nil
}

// compileChecked compiles prog with opts for tg, checking its kernels'
// registers with tool (driver.CompileChecked), and warns of the kernels
// that ptxas spills.
func (e *env) compileChecked(c *command, prog *te.Program, opts pipeline.Options, tg gpu.Arch, tool driver.Toolchain) (*driver.Compiled, error) {
	res, err := driver.CompileChecked(context.Background(), prog, opts, tg, tool)
	if err != nil {
		return nil, err
	}
	for _, w := range res.Registers.Warnings {
		e.warn(c, codeBuild, "", "%s", w)
	}
	return res, nil
}

// registerSummary says in one line what ptxas made of a checked build's
// kernels, or "" when it did not run: their registers as shipped, and,
// where the build planned again, the kernels whose launch bounds ptxas did
// not meet and those whose blocks-per-SM bound the check dropped.
func registerSummary(check *driver.RegisterCheck) string {
	if check == nil || check.Tool == driver.NoToolchain {
		return ""
	}
	var ks, dropped []string
	for _, k := range check.Kernels {
		switch {
		case k.Function != nil:
			ks = append(ks, fmt.Sprintf("%s %d", k.Kernel, k.PTXAS))
		case k.BoundDropped > 0:
			ks = append(ks, k.Kernel+" ?")
		}
		if k.BoundDropped > 0 {
			dropped = append(dropped, fmt.Sprintf("%s (was %s)", k.Kernel, blocksPerSM(k.BoundDropped)))
		}
	}
	s := fmt.Sprintf("ptxas (%s), registers per thread as built: %s", check.Tool, strings.Join(ks, ", "))
	if check.Replanned {
		var short []string
		for _, k := range check.Probed {
			if k.Short {
				short = append(short, shortfall(k))
			}
		}
		s += fmt.Sprintf("; ptxas did not meet the launch bounds of %s, so the build planned again with their registers at the largest bound ptxas met, or else unbounded, as the floor of their stages' registers (and the other kernels' as theirs)",
			strings.Join(short, ", "))
	}
	if len(dropped) > 0 {
		s += "; still spilling when planned again, so bounded by their threads alone: " + strings.Join(dropped, ", ")
	}
	return s
}

// shortfall says how ptxas did not meet probed kernel k's launch bounds,
// what it gave the kernel unbounded, and what under the largest bound it
// met (ProbedKernel.Tighter).
func shortfall(k driver.ProbedKernel) string {
	s := fmt.Sprintf("%s (%d registers", k.Kernel, k.Registers)
	if k.SpillStores > 0 || k.SpillLoads > 0 {
		s += fmt.Sprintf(", %d B spilled and %d B reloaded", k.SpillStores, k.SpillLoads)
	}
	s += fmt.Sprintf(" at %s", blocksPerSM(k.BlocksPerSM))
	if k.Unbounded != nil {
		s += fmt.Sprintf("; %d unbounded", k.Unbounded.Registers)
	}
	if k.Tighter != nil {
		s += fmt.Sprintf("; %d, met, at %s", k.Tighter.Registers, blocksPerSM(k.TighterBound))
	}
	return s + ")"
}

// blocksPerSM says n blocks per SM.
func blocksPerSM(n int) string {
	if n == 1 {
		return "1 block per SM"
	}
	return fmt.Sprintf("%d blocks per SM", n)
}

// compileForDevice compiles prog with opts for a run on device: on the
// GPU (cuda) with its registers checked by the compiler of its code, as
// tec build --ptxas auto checks them (nvcc for --codegen cu, llc and
// ptxas for ptx, where on PATH), elsewhere as driver.Compile does.
func (e *env) compileForDevice(c *command, prog *te.Program, opts pipeline.Options, device string, cf *cudaFlags) (*driver.Compiled, error) {
	if device != "cuda" {
		return driver.Compile(prog, opts)
	}
	tg, err := gpu.LookupArch(cf.target)
	if err != nil {
		return nil, err
	}
	tool, err := e.toolchain("auto", tg, cf.codegen == driver.CodegenPTX)
	if err != nil {
		return nil, err
	}
	if tool == driver.NVCC && cf.codegen == driver.CodegenPTX || tool == driver.LLCPTXAS && cf.codegen == driver.CodegenCU {
		tool = driver.NoToolchain // not the compiler of the code that runs
	}
	return e.compileChecked(c, prog, opts, tg, tool)
}
