package driver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"tec/backend/cuda"
	"tec/backend/kir"
	"tec/backend/llvm"
	"tec/gpu"
	"tec/partition"
	"tec/pipeline"
	"tec/te"
)

// Toolchain is the compiler that a register check (CompileChecked) runs
// on a build's kernels.
type Toolchain int

// The toolchains.
const (
	NoToolchain Toolchain = iota // no compiler: the plan's estimates stand
	NVCC                         // nvcc -cubin -Xptxas -v on the CUDA C++
	LLCPTXAS                     // llc on the LLVM IR, then ptxas -v
)

func (t Toolchain) String() string {
	switch t {
	case NVCC:
		return "nvcc"
	case LLCPTXAS:
		return "llc+ptxas"
	}
	return "none"
}

// PTXASFunction is what ptxas -v reports of one entry function.
type PTXASFunction struct {
	Registers int
	// SpillStores and SpillLoads are bytes, StackFrame the bytes of the
	// function's stack frame.
	SpillStores, SpillLoads, StackFrame int
	// Calls says that the function calls others (ptxas lists their
	// properties under it): its stack frame and spills include what the
	// calls save, not only registers that did not fit.
	Calls bool
}

var (
	ptxasEntry = regexp.MustCompile(`Compiling entry function '([^']+)'`)
	ptxasFunc  = regexp.MustCompile(`Compiling function '([^']+)'`)
	ptxasProps = regexp.MustCompile(`Function properties for (\S+)`)
	ptxasFrame = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	ptxasUsed  = regexp.MustCompile(`Used (\d+) registers`)
)

// ParsePTXAS parses the output of ptxas -v (or nvcc -Xptxas -v): each
// entry function's figures by its name, demangled where it is a C++
// name (_Z13k_k26_x_mu_24PK6__half… is k_k26_x_mu_24).
func ParsePTXAS(out []byte) map[string]*PTXASFunction {
	fns := map[string]*PTXASFunction{}
	var cur *PTXASFunction
	var curName string
	props := "" // the function whose properties the next line gives
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if m := ptxasEntry.FindStringSubmatch(line); m != nil {
			curName = m[1]
			cur = &PTXASFunction{}
			fns[demangle(curName)] = cur
			continue
		}
		if ptxasFunc.MatchString(line) {
			cur, curName = nil, ""
			continue
		}
		if m := ptxasProps.FindStringSubmatch(line); m != nil {
			props = m[1]
			if cur != nil && props != curName {
				cur.Calls = true
			}
			continue
		}
		if m := ptxasFrame.FindStringSubmatch(line); m != nil {
			if cur != nil && props == curName {
				cur.StackFrame, _ = strconv.Atoi(m[1])
				cur.SpillStores, _ = strconv.Atoi(m[2])
				cur.SpillLoads, _ = strconv.Atoi(m[3])
			}
			props = ""
			continue
		}
		if m := ptxasUsed.FindStringSubmatch(line); m != nil && cur != nil && cur.Registers == 0 {
			cur.Registers, _ = strconv.Atoi(m[1])
		}
	}
	return fns
}

// demangle returns the name of a C++ function's mangled symbol (_Z, an
// optional L for internal linkage, the name's length and the name), or
// sym itself.
func demangle(sym string) string {
	s, ok := strings.CutPrefix(sym, "_Z")
	if !ok {
		return sym
	}
	s = strings.TrimPrefix(s, "L")
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil || i+n > len(s) {
		return sym
	}
	return s[i : i+n]
}

// RegisterMargin is the registers per thread that the register check
// adds to what ptxas allocates unbounded before it compares them with the
// plan's blocks per SM: ptxas allocates differently under launch bounds,
// and one that leaves exactly its unbounded figure can spill (resnext's
// k1_x.1 at f16: 38 registers unbounded, 12 B spilled when bounded to 40
// on sm_90). 8 is a thread's share of one 256-register warp granule.
const RegisterMargin = 8

// KernelRegisters says which register figure a kernel's occupancy counts.
type KernelRegisters struct {
	// Kernel is the kernel's name (kir.Kernel.Name).
	Kernel string
	// Estimate is the planner's estimate of registers per thread (the
	// most of its stages' schedules'), Planned the figure the plan's
	// occupancy counted: the estimate, or, where the build planned again
	// with ptxas's figures, the most of its stages' floors
	// (RegisterCheck.Floors) where that is more.
	Estimate, Planned int
	// PTXAS is what ptxas allocated to the kernel compiled without a
	// blocks-per-SM bound (0: not compiled), with its figures.
	PTXAS     int
	Function  *PTXASFunction
	FromPTXAS bool // Planned is ptxas's figure, not the estimate
}

// Source says where a kernel's register figure came from: "ptxas" or
// "estimate".
func (k KernelRegisters) Source() string {
	if k.FromPTXAS {
		return "ptxas"
	}
	return "estimate"
}

// RegisterCheck is what a register check (CompileChecked) found.
type RegisterCheck struct {
	// Tool compiled the kernels; NoToolchain when none did and the
	// estimates stand.
	Tool Toolchain
	// Replanned says that the plan counted on more blocks per SM than
	// ptxas's registers let be resident for some kernel (ProbedKernel.Short),
	// and the program was planned again with Floors.
	Replanned bool
	// Floors are the fewest registers per thread, by the name of the
	// tensor each stage computes, that the check found: what ptxas
	// allocated to the probed kernel computing it, plus RegisterMargin
	// (the most of those and of the build's own
	// pipeline.Options.StageRegs). Where Replanned, the re-plan counted
	// them (pipeline.Options.StageRegs): each kernel the most of its
	// stages', so that a light kernel keeps the blocks per SM that its
	// own registers leave, whatever a heavy one takes.
	Floors map[string]int
	// Kernels are the module's kernels' figures, in order.
	Kernels []KernelRegisters
	// Probed are the kernels that ptxas compiled, those of the first plan
	// (which a re-plan may cut differently), in order.
	Probed []ProbedKernel
	// Warnings name the kernels that spill registers without calling a
	// function, or say why the tool could not compile them.
	Warnings []string
}

// ProbedKernel is what ptxas reported of one kernel (kir.Kernel.Name).
type ProbedKernel struct {
	Kernel string
	*PTXASFunction
	// Floor is the kernel's registers plus RegisterMargin, at most the
	// GPU's registers per thread: the floor of the stages it computes
	// (RegisterCheck.Floors). Short says that the plan counted on more
	// blocks per SM of the kernel (its launch bounds) than Floor leaves.
	Floor int
	Short bool
}

// CompileChecked compiles prog as Compile does and, at -O3 and up where
// tool is not NoToolchain, compiles the kernels once with tool and checks
// the registers that ptxas allocates against the plan's occupancy: where
// a kernel's blocks per SM (kir.Kernel.BlocksPerSM, its launch bounds) need
// fewer registers per thread than ptxas gives it unbounded (plus
// RegisterMargin), the program is planned again, once, with each probed
// kernel's figure (plus RegisterMargin) as the floor of the stages it
// computes (RegisterCheck.Floors, pipeline.Options.StageRegs), so that the
// grid the plan launches and the launch bounds hold what ptxas made. A
// kernel of the re-plan counts the most of its stages' floors, so that a
// light kernel is not planned with a heavy one's registers. The result's
// Registers says what was used; where the tool fails, its warnings say so
// and the estimates stand.
//
// Only a checked plan's blocks per SM become launch bounds: where no check
// ran (below -O3, no tool, or a tool that failed), the kernels are bounded
// by their threads alone, since an estimate too low (2.7 times, for the
// decode step) would make ptxas spill to meet it.
func CompileChecked(ctx context.Context, prog *te.Program, opts pipeline.Options, tg gpu.Arch, tool Toolchain) (*Compiled, error) {
	check := &RegisterCheck{Tool: tool}
	if opts.Level < 3 || tool == NoToolchain {
		c, err := Compile(prog, opts)
		if err != nil {
			return nil, err
		}
		check.Tool = NoToolchain
		c.Registers = check.figures(c, nil)
		unbound(c.Module)
		return c, nil
	}
	// The passes' dumps wait for the check: a re-plan dumps its own.
	first := opts
	var dumps [][2]string
	if opts.Dump != nil {
		first.Dump = func(pass, text string) { dumps = append(dumps, [2]string{pass, text}) }
	}
	flush := func() {
		for _, d := range dumps {
			opts.Dump(d[0], d[1])
		}
	}
	c, err := Compile(prog, first)
	if err != nil {
		flush()
		return nil, err
	}
	fns, err := ptxasFunctions(ctx, c, tg, tool)
	if err != nil {
		flush()
		// The estimates stand; the build goes on, and says why.
		check.Tool = NoToolchain
		check.Warnings = append(check.Warnings, fmt.Sprintf("the register check could not compile the kernels with %s, so the plan keeps its estimates: %v", tool, err))
		c.Registers = check.figures(c, nil)
		unbound(c.Module)
		return c, nil
	}
	check.probe(c, fns, opts.StageRegs)
	if !check.Replanned {
		flush()
	} else {
		opts.StageRegs = check.Floors
		if c, err = Compile(prog, opts); err != nil {
			return nil, fmt.Errorf("planning again with ptxas's registers per thread: %w", err)
		}
	}
	c.Registers = check.figures(c, fns)
	return c, nil
}

// probe records what ptxas reported (fns) of c's kernels: each kernel's
// figure, plus RegisterMargin, becomes the floor of the stages it computes
// (the most of it and of floors, those c was planned with), and a kernel
// whose launch bounds count on more blocks per SM than that figure leaves
// is short and has the program planned again.
func (check *RegisterCheck) probe(c *Compiled, fns map[string]*PTXASFunction, floors map[string]int) {
	check.Floors = maps.Clone(floors)
	if check.Floors == nil {
		check.Floors = map[string]int{}
	}
	g := c.Plan.GPU
	for i, k := range c.Module.Kernels {
		f := fns[k.Name]
		if f == nil {
			continue
		}
		if (f.SpillStores > 0 || f.SpillLoads > 0) && !f.Calls {
			check.Warnings = append(check.Warnings, fmt.Sprintf("kernel %s: ptxas spills %d B of registers (stores) and reloads %d B with %d registers per thread",
				k.Name, f.SpillStores, f.SpillLoads, f.Registers))
		}
		pk := ProbedKernel{Kernel: k.Name, PTXASFunction: f, Floor: min(f.Registers+RegisterMargin, g.MaxRegsPerThread)}
		if i < len(c.Plan.Kernels) {
			for _, t := range c.Plan.Kernels[i].Stages {
				check.Floors[t.Name] = max(check.Floors[t.Name], pk.Floor)
			}
		}
		if k.BlocksPerSM > 0 {
			n, _ := g.BlocksPerSM(gpu.Block{Threads: k.Block, SharedBytes: int(k.SharedBytes()), RegsPerThread: pk.Floor})
			pk.Short = n < k.BlocksPerSM
		}
		check.Replanned = check.Replanned || pk.Short
		check.Probed = append(check.Probed, pk)
	}
}

// unbound drops the blocks-per-SM bound of m's kernels (kir.Kernel.BlocksPerSM),
// leaving ptxas the registers it would take.
func unbound(m *kir.Module) {
	for _, k := range m.Kernels {
		k.BlocksPerSM = 0
	}
}

// figures fills in check's kernels from c's plan and ptxas's functions
// (by kernel name; nil when none ran).
func (check *RegisterCheck) figures(c *Compiled, fns map[string]*PTXASFunction) *RegisterCheck {
	for i, k := range c.Module.Kernels {
		kr := KernelRegisters{Kernel: k.Name}
		if i < len(c.Plan.Kernels) {
			pk := c.Plan.Kernels[i]
			kr.Estimate = estimate(c.Plan, pk)
			kr.Planned = pk.Resources.RegsPerThread
		}
		kr.Planned = max(kr.Planned, kr.Estimate, c.Plan.GPU.MinRegsPerThread)
		kr.FromPTXAS = kr.Planned > kr.Estimate
		if f := fns[k.Name]; f != nil {
			kr.PTXAS, kr.Function = f.Registers, f
		}
		check.Kernels = append(check.Kernels, kr)
	}
	return check
}

// estimate returns the planner's own estimate of the registers per thread
// of kernel k of pl: the most of its stages' schedules', which its
// Resources raise to their floors (partition.Options.StageRegs).
func estimate(pl *partition.Plan, k *partition.Kernel) int {
	n := 0
	for _, t := range k.Stages {
		if s := pl.Schedules[t]; s != nil {
			n = max(n, s.RegsPerThread)
		}
	}
	return n
}

// ptxasFunctions compiles c's kernels with tool, without their blocks-per-SM
// bounds (the registers each takes unconstrained), and returns what ptxas
// reports of each by kernel name.
func ptxasFunctions(ctx context.Context, c *Compiled, tg gpu.Arch, tool Toolchain) (map[string]*PTXASFunction, error) {
	probe := *c.Module
	probe.Kernels = make([]*kir.Kernel, len(c.Module.Kernels))
	for i, k := range c.Module.Kernels {
		kc := *k
		kc.BlocksPerSM = 0
		probe.Kernels[i] = &kc
	}
	pc := &Compiled{Result: &pipeline.Result{Program: c.Program, Plan: c.Plan, Module: &probe, Passes: c.Passes}, layout: c.Layout()}
	var info []byte
	var names map[*kir.Kernel]string
	switch tool {
	case NVCC:
		dir, err := os.MkdirTemp("", "tec-nvcc-")
		if err != nil {
			return nil, fmt.Errorf("ptxas: %w", err)
		}
		defer os.RemoveAll(dir)
		if _, info, err = nvccCubin(ctx, pc, tg, dir, "-Xptxas", "-v"); err != nil {
			return nil, err
		}
		names = cuda.KernelNames(&probe)
	case LLCPTXAS:
		files, err := Emit(ctx, pc, tg, Outputs{PTX: true})
		if err != nil {
			return nil, err
		}
		if _, info, err = llvm.AssembleVerbose(ctx, files[0].Data, tg); err != nil {
			return nil, err
		}
		names = llvm.KernelNames(&probe)
	}
	fns := ParsePTXAS(info)
	out := map[string]*PTXASFunction{}
	for i, k := range probe.Kernels {
		if f := fns[names[k]]; f != nil {
			out[c.Module.Kernels[i].Name] = f
		}
	}
	return out, nil
}

// nvccCubin writes c's CUDA C++ for tg to dir and compiles it with nvcc
// -cubin -O3 and flags, returning the cubin and nvcc's output.
func nvccCubin(ctx context.Context, c *Compiled, tg gpu.Arch, dir string, flags ...string) (cubin, info []byte, err error) {
	nvcc, err := exec.LookPath("nvcc")
	if err != nil {
		return nil, nil, fmt.Errorf("no nvcc on PATH (the CUDA toolkit; Debian: nvidia-cuda-toolkit): %w", err)
	}
	files, err := Emit(ctx, c, tg, Outputs{CUDA: true})
	if err != nil {
		return nil, nil, err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return nil, nil, err
		}
	}
	out := filepath.Join(dir, "model.cubin")
	args := append(append([]string{"-cubin", "-O3", "-arch=" + tg.Name}, flags...), "-o", out, filepath.Join(dir, files[0].Name))
	info, err = exec.CommandContext(ctx, nvcc, args...).CombinedOutput()
	if err != nil {
		return nil, nil, fmt.Errorf("nvcc -cubin -arch=%s: %w\n%s", tg.Name, err, strings.TrimSpace(string(info)))
	}
	cubin, err = os.ReadFile(out)
	if err != nil {
		return nil, nil, err
	}
	return cubin, info, nil
}
