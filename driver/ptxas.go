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
	// Callees are the spills of the functions it calls, one for each that
	// spills: where a kernel's stages are functions, their loops are there.
	Callees []Spill
}

// Spill is what a function spills, in bytes.
type Spill struct{ Stores, Loads int }

// smallSpillStores and smallSpillLoads are the most bytes a function
// called from a kernel may spill and count as not spilling: a register or a few, stored once and reloaded a
// few times (ptxas 11.8 spills 4 B and reloads 4–12 B in the decode step's
// widest matrix-vector stages at 128 registers), an L1 access or two per
// iteration where it falls in a loop; dropping the kernel's bound for it
// costs far more (loopSpills).
const smallSpillStores, smallSpillLoads = 16, 64

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
			stores, _ := strconv.Atoi(m[2])
			loads, _ := strconv.Atoi(m[3])
			switch {
			case cur != nil && props == curName:
				cur.StackFrame, _ = strconv.Atoi(m[1])
				cur.SpillStores, cur.SpillLoads = stores, loads
			case cur != nil && (stores > 0 || loads > 0):
				cur.Callees = append(cur.Callees, Spill{Stores: stores, Loads: loads})
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
	// PTXAS is what ptxas allocated to the kernel as the build ships it
	// (0: not compiled so): compiled under its launch bounds or, where
	// the check dropped its blocks-per-SM bound (BoundDropped), with its
	// threads alone. Function has its figures.
	PTXAS     int
	Function  *PTXASFunction
	FromPTXAS bool // Planned is ptxas's figure, not the estimate
	// BoundDropped is the blocks per SM of the launch bound that the
	// check took from the kernel (0: none), since ptxas still spilled
	// under it after the program was planned again: the kernel is bounded
	// by its threads alone, and its launch takes the blocks per SM that
	// its registers leave.
	BoundDropped int
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
	// Replanned says that ptxas did not meet some kernel's launch bounds
	// (ProbedKernel.Short), and the program was planned again with Floors.
	Replanned bool
	// Floors are the fewest registers per thread, by the name of the
	// tensor each stage computes, that the check found (the most of
	// those and of the build's own pipeline.Options.StageRegs): the
	// probed kernel's Floor for each stage it computes. Where Replanned,
	// the re-plan counted them (pipeline.Options.StageRegs): each kernel
	// the most of its stages', so that a light kernel keeps the blocks
	// per SM that its own registers leave, whatever a heavy one takes.
	Floors map[string]int
	// Kernels are the module's kernels' figures, in order.
	Kernels []KernelRegisters
	// Probed are the kernels of the first plan (which a re-plan may cut
	// differently), in order, as ptxas compiled them under their launch
	// bounds.
	Probed []ProbedKernel
	// Warnings name the kernels that ship spilling registers without
	// calling a function and those whose blocks-per-SM bound the check
	// dropped, or say why the tool could not compile them.
	Warnings []string
}

// ProbedKernel is what ptxas reported of one kernel (kir.Kernel.Name) of
// the first plan, compiled under its launch bounds.
type ProbedKernel struct {
	Kernel string
	*PTXASFunction
	// Threads and BlocksPerSM are the kernel's launch bounds
	// (__launch_bounds__(Threads, BlocksPerSM); BlocksPerSM 0: its threads
	// alone).
	Threads, BlocksPerSM int
	// Unbounded is what ptxas allocated to the kernel compiled with its
	// threads alone, where the check compiled it so: where ptxas spilled
	// under its blocks-per-SM bound or allocated more registers than those
	// blocks leave (nil where it did neither, or reported nothing).
	Unbounded *PTXASFunction
	// Short says that ptxas did not meet the kernel's blocks-per-SM bound
	// (meets): it allocated more registers per thread than those blocks
	// leave, or spilled more under the bound than with the kernel's
	// threads alone (a kernel that calls functions spills what the calls
	// save whatever its bound).
	Short bool
	// Tighter is what ptxas allocated to a short kernel under the
	// largest blocks-per-SM bound, between its own and the one its
	// Unbounded registers leave, that ptxas met (TighterBound; nil and 0
	// where it met none or the check tried none): the registers it needs
	// rather than those it takes when free. A decode step whose weights
	// stream through cp.async rings needs 64 registers for 4 blocks of
	// 256 threads an SM, and takes 122 (2 blocks) when free.
	Tighter      *PTXASFunction
	TighterBound int
	// Floor is the floor of the registers per thread of the stages the
	// kernel computes (RegisterCheck.Floors): its registers under its
	// bounds where ptxas met them, else its Tighter registers where it
	// has them, else its Unbounded registers, with no margin: a bound
	// that leaves a few more does not keep ptxas from spilling (resnext's
	// k1_x.1 at f16 on sm_80: 38 registers unbounded, spills 12 B under a
	// bound of 40 and 20 B under one of 48), and a kernel that still
	// spills loses its bound, so that ptxas gives it its unbounded
	// figure, which the re-plan's blocks per SM leave room for.
	Floor int
}

// spills reports whether f spills registers that did not fit: any spill
// of a function that calls none (a call's spills include what it saves).
func (f *PTXASFunction) spills() bool {
	return (f.SpillStores > 0 || f.SpillLoads > 0) && !f.Calls
}

// loopSpills returns the bytes f spills (stores, loads) where they cost
// the most: f's own, or, where f calls functions, theirs, but for those
// that spill no more than smallSpillStores and smallSpillLoads. A calling kernel's own spills are
// mostly the live values its calls save and restore, once a call. The
// decode step's kernel, whose stages are functions, spills 188 B and
// reloads 2,216 B around its calls at 128 registers under
// __launch_bounds__(256, 2), and its widest stages spill 4 B each; losing
// its bound for them left it 172 registers, one block per SM, and the step
// 47 % slower (measured on an H200, 2026-11-28; docs/benchmarks.md, "The
// third H200 run").
func (f *PTXASFunction) loopSpills() (stores, loads int) {
	if !f.Calls {
		return f.SpillStores, f.SpillLoads
	}
	for _, c := range f.Callees {
		if c.Stores > smallSpillStores || c.Loads > smallSpillLoads {
			stores += c.Stores
			loads += c.Loads
		}
	}
	return stores, loads
}

// CompileChecked compiles prog as Compile does and, at -O3 and up where
// tool is not NoToolchain, checks with tool that ptxas meets the launch
// bounds of the kernels (kir.Kernel.BlocksPerSM, the blocks per SM the
// plan counts on): it compiles them all once under their bounds, and a
// kernel that ptxas compiles without spilling, in registers that leave
// its blocks per SM, keeps its plan, since that compile is the code the
// build ships. The kernels that spill under their bounds, or take more
// registers, are compiled once more, together, with their threads alone
// as their bound; one that spills no more so (a kernel whose calls save
// registers) keeps its plan too. Where some kernel is short
// (ProbedKernel.Short), each short kernel is compiled under the bounds
// between its own and the one its unbounded registers leave, one block
// per SM less a run, until ptxas meets one (tighten), and the program is
// planned again, once, with each probed kernel's Floor as the floor of
// the stages it computes (RegisterCheck.Floors,
// pipeline.Options.StageRegs): a short kernel's registers under the
// tighter bound ptxas met, or else unbounded, and any other's under its
// bounds. A kernel of the re-plan counts the most of its stages' floors,
// so that a light kernel is not planned with a heavy one's registers. The kernels of the re-plan
// that are not the code of a kernel already compiled under the same
// bounds are compiled once more under theirs, and one that is still
// short has its blocks-per-SM bound dropped (RegisterCheck.Warnings say
// so): it takes the registers it needs, and its launch the blocks per SM
// those leave. So the check runs the tool once where ptxas meets every
// bound, and otherwise three times and once more for each bound tried.
// The result's Registers says what was used; where the tool fails, its
// warnings say so and the estimates stand.
//
// Only a checked plan's blocks per SM become launch bounds: where no check
// ran (below -O3, no tool, or a tool that failed), the kernels are bounded
// by their threads alone, since an estimate too low (2.7 times, for the
// decode step) would make ptxas spill to meet it.
func CompileChecked(ctx context.Context, prog *te.Program, opts pipeline.Options, tg gpu.Arch, tool Toolchain) (*Compiled, error) {
	if opts.Level < 3 || tool == NoToolchain {
		c, err := Compile(prog, opts)
		if err != nil {
			return nil, err
		}
		c.Registers = (&RegisterCheck{}).figures(c, nil, nil)
		unbound(c.Module)
		return c, nil
	}
	// The passes' dumps wait for the check, which shows those of the plan
	// it keeps.
	first, dumps, err := compileDeferred(prog, opts)
	if err != nil {
		dumps.replay(opts)
		return nil, err
	}
	tc := toolchain{tg: tg, tool: tool}
	bounded, err := tc.compile(ctx, first, first.Module.Kernels, true)
	if err != nil {
		return standDown(first, dumps, opts, tool, err), nil
	}
	check := &RegisterCheck{Tool: tool}
	var unbounded map[*kir.Kernel]*PTXASFunction
	if spilled := check.probe(first, bounded); len(spilled) > 0 {
		if unbounded, err = tc.compile(ctx, first, spilled, false); err != nil {
			return standDown(first, dumps, opts, tool, err), nil
		}
	}
	check.Replanned = check.unbounded(first, unbounded)
	var tighter map[string]*PTXASFunction
	if check.Replanned {
		if tighter, err = check.tighten(ctx, tc, first, unbounded); err != nil {
			return standDown(first, dumps, opts, tool, err), nil
		}
	}
	check.floors(first, opts.StageRegs)
	compiled := compiledCode(first, bounded, unbounded)
	maps.Copy(compiled, tighter)
	if !check.Replanned {
		dumps.replay(opts)
		first.Registers = check.figures(first, bounded, check.settle(first, bounded, compiled))
		return first, nil
	}
	again := opts
	again.StageRegs = check.Floors
	c, dumps, err := compileDeferred(prog, again)
	if err != nil {
		dumps.replay(opts)
		return nil, fmt.Errorf("planning again with ptxas's registers per thread: %w", err)
	}
	defer dumps.replay(opts)
	shipped, err := tc.recheck(ctx, c, compiled)
	if err != nil {
		check.Warnings = append(check.Warnings, fmt.Sprintf("the register check could not compile the kernels planned again with %s, so their launch bounds are their threads alone: %v", tool, err))
		unbound(c.Module)
		c.Registers = check.figures(c, nil, nil)
		return c, nil
	}
	c.Registers = check.figures(c, shipped, check.settle(c, shipped, compiled))
	return c, nil
}

// heldDumps are the passes' dumps of a compile, held back.
type heldDumps [][2]string

// compileDeferred compiles prog as Compile does, holding back the dumps
// that opts asks for.
func compileDeferred(prog *te.Program, opts pipeline.Options) (*Compiled, heldDumps, error) {
	var d heldDumps
	if opts.Dump != nil {
		opts.Dump = func(pass, text string) { d = append(d, [2]string{pass, text}) }
	}
	c, err := Compile(prog, opts)
	return c, d, err
}

// replay passes d to opts.Dump.
func (d heldDumps) replay(opts pipeline.Options) {
	for _, p := range d {
		opts.Dump(p[0], p[1])
	}
}

// standDown returns c, whose register check failed with err, with the
// planner's estimates standing and its kernels bounded by their threads
// alone, having replayed its dumps d.
func standDown(c *Compiled, d heldDumps, opts pipeline.Options, tool Toolchain, err error) *Compiled {
	d.replay(opts)
	check := &RegisterCheck{Warnings: []string{fmt.Sprintf("the register check could not compile the kernels with %s, so the plan keeps its estimates: %v", tool, err)}}
	c.Registers = check.figures(c, nil, nil)
	unbound(c.Module)
	return c
}

// meets reports whether ptxas's figures f of kernel k, compiled under
// its launch bounds, keep them: registers per thread that leave k's
// blocks per SM on g, and no more bytes spilled (loopSpills) than base,
// ptxas's figures of k compiled with its threads alone (nil: none).
func meets(g gpu.Model, k *kir.Kernel, f, base *PTXASFunction) bool {
	var stores, loads int
	if base != nil {
		stores, loads = base.loopSpills()
	}
	if s, l := f.loopSpills(); s > stores || l > loads {
		return false
	}
	if k.BlocksPerSM == 0 {
		return true
	}
	n, _ := g.BlocksPerSM(gpu.Block{Threads: k.Block, SharedBytes: int(k.SharedBytes()), RegsPerThread: f.Registers})
	return n >= k.BlocksPerSM
}

// probe records what ptxas reported of c's kernels compiled under their
// launch bounds (fns), and returns the kernels with a blocks-per-SM
// bound that ptxas spilled under or allocated more registers than it
// leaves: those to compile with their threads alone.
func (check *RegisterCheck) probe(c *Compiled, fns map[*kir.Kernel]*PTXASFunction) []*kir.Kernel {
	var spilled []*kir.Kernel
	for _, k := range c.Module.Kernels {
		f := fns[k]
		if f == nil {
			continue
		}
		check.Probed = append(check.Probed, ProbedKernel{Kernel: k.Name, PTXASFunction: f, Threads: k.Block, BlocksPerSM: k.BlocksPerSM, Floor: min(f.Registers, c.Plan.GPU.MaxRegsPerThread)})
		if k.BlocksPerSM > 0 && !meets(c.Plan.GPU, k, f, nil) {
			spilled = append(spilled, k)
		}
	}
	return spilled
}

// unbounded records what ptxas reported of c's kernels compiled with
// their threads alone (fns), and whether any probed kernel is short: the
// floors of a short one become those registers.
func (check *RegisterCheck) unbounded(c *Compiled, fns map[*kir.Kernel]*PTXASFunction) bool {
	kernel := map[string]*kir.Kernel{}
	for k := range fns {
		kernel[k.Name] = k
	}
	short := false
	for i := range check.Probed {
		pk := &check.Probed[i]
		k := kernel[pk.Kernel]
		if k == nil {
			continue
		}
		pk.Unbounded = fns[k]
		if pk.Short = !meets(c.Plan.GPU, k, pk.PTXASFunction, pk.Unbounded); pk.Short {
			pk.Floor = min(pk.Unbounded.Registers, c.Plan.GPU.MaxRegsPerThread)
			short = true
		}
	}
	return short
}

// tighten looks, for each short kernel of c (unbounded holds what ptxas
// allocated to it with its threads alone), for the largest blocks-per-SM
// bound between its own and the one that its unbounded registers leave
// that ptxas meets, trying one bound less a compile, all short kernels in
// each, and records what it finds (ProbedKernel.Tighter) as the kernel's
// floor. It returns those compiles by their code (kernelKey), for the
// re-plan's kernels that are the same. ptxas takes what registers it
// likes when nothing bounds it, so that a kernel a bound of 5 blocks
// makes spill may need the 64 registers of 4, not the 122 of 2 that it
// takes unbounded.
func (check *RegisterCheck) tighten(ctx context.Context, tc toolchain, c *Compiled, unbounded map[*kir.Kernel]*PTXASFunction) (map[string]*PTXASFunction, error) {
	g := c.Plan.GPU
	kernel := map[string]*kir.Kernel{}
	for k := range unbounded {
		kernel[k.Name] = k
	}
	// trial is a short kernel k's copy under the bound being tried;
	// least its last bound worth a try, one more than its unbounded
	// figure's.
	type trial struct {
		pk    *ProbedKernel
		k, at *kir.Kernel
		least int
	}
	var open []trial
	for i := range check.Probed {
		pk := &check.Probed[i]
		k := kernel[pk.Kernel]
		if !pk.Short || k == nil || pk.Unbounded == nil || k.BlocksPerSM < 2 {
			continue
		}
		free, _ := g.BlocksPerSM(gpu.Block{Threads: k.Block, SharedBytes: int(k.SharedBytes()), RegsPerThread: pk.Unbounded.Registers})
		at := *k
		open = append(open, trial{pk: pk, k: k, at: &at, least: free + 1})
	}
	met := map[string]*PTXASFunction{}
	for len(open) > 0 {
		var ks []*kir.Kernel
		var next []trial
		for _, tr := range open {
			if tr.at.BlocksPerSM--; tr.at.BlocksPerSM >= tr.least {
				ks = append(ks, tr.at)
				next = append(next, tr)
			}
		}
		if len(ks) == 0 {
			break
		}
		fns, err := tc.compile(ctx, c, ks, true)
		if err != nil {
			return nil, err
		}
		open = open[:0]
		for _, tr := range next {
			f := fns[tr.at]
			switch {
			case f == nil:
			case meets(g, tr.at, f, tr.pk.Unbounded):
				tr.pk.Tighter, tr.pk.TighterBound = f, tr.at.BlocksPerSM
				tr.pk.Floor = min(f.Registers, g.MaxRegsPerThread)
				met[kernelKey(tr.k, c.Layout(), tr.at.BlocksPerSM)] = f
			default:
				open = append(open, tr)
			}
		}
	}
	return met, nil
}

// floors sets check.Floors: the most of the build's own floors and of
// each probed kernel of c's floor for each stage it computes.
func (check *RegisterCheck) floors(c *Compiled, own map[string]int) {
	check.Floors = maps.Clone(own)
	if check.Floors == nil {
		check.Floors = map[string]int{}
	}
	kernel := map[string]int{}
	for i, k := range c.Module.Kernels {
		kernel[k.Name] = i
	}
	for _, pk := range check.Probed {
		i, ok := kernel[pk.Kernel]
		if !ok || i >= len(c.Plan.Kernels) {
			continue
		}
		for _, t := range c.Plan.Kernels[i].Stages {
			check.Floors[t.Name] = max(check.Floors[t.Name], pk.Floor)
		}
	}
}

// compiledCode returns what ptxas reported of first's kernels by their
// code (kernelKey): those it compiled with their threads alone
// (unbounded), and those it compiled under their launch bounds (bounded)
// and met them.
func compiledCode(first *Compiled, bounded, unbounded map[*kir.Kernel]*PTXASFunction) map[string]*PTXASFunction {
	code := map[string]*PTXASFunction{}
	for _, k := range first.Module.Kernels {
		u := unbounded[k]
		if u != nil {
			code[kernelKey(k, first.Layout(), 0)] = u
		}
		if f := bounded[k]; f != nil && meets(first.Plan.GPU, k, f, u) {
			code[kernelKey(k, first.Layout(), k.BlocksPerSM)] = f
		}
	}
	return code
}

// kernelKey is the same string for two kernels exactly when a compiler
// makes the same code of them under the blocks-per-SM bound bound: the
// kernel's text but for its grid's size, which only the host's launch
// reads, its parameters' types and workspace offsets of layout, and the
// bound.
func kernelKey(k *kir.Kernel, layout *kir.Layout, bound int) string {
	kc := *k
	kc.Grid.Blocks = 0
	var b strings.Builder
	fmt.Fprintf(&b, "bound %d\n", bound)
	for _, p := range k.Params {
		fmt.Fprintf(&b, "param %s %s%v", p.Name, p.DType, p.Shape)
		if off, ok := layout.Offsets[p]; ok {
			fmt.Fprintf(&b, " at %d", off)
		}
		b.WriteByte('\n')
	}
	b.WriteString(kc.String())
	return b.String()
}

// settle takes the blocks-per-SM bound from each kernel of c that ptxas
// compiled under its launch bounds (shipped) without meeting them, which
// only a re-plan's kernels can do, measured against the same code
// compiled with its threads alone where compiled has it (by kernelKey);
// it replaces their figures in shipped by those, or by none. It warns of
// each, and of every other kernel that ships spilling without calling a
// function, and returns the dropped bounds by kernel.
func (check *RegisterCheck) settle(c *Compiled, shipped map[*kir.Kernel]*PTXASFunction, compiled map[string]*PTXASFunction) map[*kir.Kernel]int {
	dropped := map[*kir.Kernel]int{}
	for _, k := range c.Module.Kernels {
		f := shipped[k]
		if f == nil {
			continue
		}
		var base *PTXASFunction
		if !meets(c.Plan.GPU, k, f, nil) {
			base = compiled[kernelKey(k, c.Layout(), 0)]
		}
		if meets(c.Plan.GPU, k, f, base) {
			if f.spills() {
				check.Warnings = append(check.Warnings, fmt.Sprintf("kernel %s: ptxas spills %d B of registers (stores) and reloads %d B with %d registers per thread%s",
					k.Name, f.SpillStores, f.SpillLoads, f.Registers, spillBound(k)))
			}
			continue
		}
		w := fmt.Sprintf("kernel %s: planned again, ptxas still spills %d B of registers (stores) and reloads %d B with %d registers per thread under __launch_bounds__(%d, %d), so the kernel is bounded by its threads alone",
			k.Name, f.SpillStores, f.SpillLoads, f.Registers, k.Block, k.BlocksPerSM)
		dropped[k] = k.BlocksPerSM
		k.BlocksPerSM = 0
		shipped[k] = base
		if base != nil && base.spills() {
			w += fmt.Sprintf(", with which it spills %d B (stores) and reloads %d B with %d registers per thread", base.SpillStores, base.SpillLoads, base.Registers)
		}
		check.Warnings = append(check.Warnings, w)
	}
	return dropped
}

// spillBound says, for a kernel that ships spilling, under which bound.
func spillBound(k *kir.Kernel) string {
	if k.BlocksPerSM == 0 {
		return ""
	}
	return fmt.Sprintf(" under __launch_bounds__(%d, %d), as much as with its threads alone", k.Block, k.BlocksPerSM)
}

// unbound drops the blocks-per-SM bound of m's kernels (kir.Kernel.BlocksPerSM),
// leaving ptxas the registers it would take.
func unbound(m *kir.Module) {
	for _, k := range m.Kernels {
		k.BlocksPerSM = 0
	}
}

// figures fills in check's kernels from c's plan, ptxas's figures of the
// kernels as shipped (nil when none ran) and the bounds that the check
// dropped.
func (check *RegisterCheck) figures(c *Compiled, shipped map[*kir.Kernel]*PTXASFunction, dropped map[*kir.Kernel]int) *RegisterCheck {
	for i, k := range c.Module.Kernels {
		kr := KernelRegisters{Kernel: k.Name, BoundDropped: dropped[k]}
		if i < len(c.Plan.Kernels) {
			pk := c.Plan.Kernels[i]
			kr.Estimate = estimate(c.Plan, pk)
			kr.Planned = pk.Resources.RegsPerThread
		}
		kr.Planned = max(kr.Planned, kr.Estimate, c.Plan.GPU.MinRegsPerThread)
		kr.FromPTXAS = kr.Planned > kr.Estimate
		if f := shipped[k]; f != nil {
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

// toolchain runs a register check's compiler.
type toolchain struct {
	tg   gpu.Arch
	tool Toolchain
}

// recheck returns what ptxas reports of c's kernels compiled under their
// launch bounds: from compiled (by kernelKey) where it holds their code
// under those bounds, else from one compile of the rest.
func (tc toolchain) recheck(ctx context.Context, c *Compiled, compiled map[string]*PTXASFunction) (map[*kir.Kernel]*PTXASFunction, error) {
	shipped := map[*kir.Kernel]*PTXASFunction{}
	var rest []*kir.Kernel
	for _, k := range c.Module.Kernels {
		if f := compiled[kernelKey(k, c.Layout(), k.BlocksPerSM)]; f != nil {
			shipped[k] = f
		} else {
			rest = append(rest, k)
		}
	}
	if len(rest) == 0 {
		return shipped, nil
	}
	fns, err := tc.compile(ctx, c, rest, true)
	if err != nil {
		return nil, err
	}
	maps.Copy(shipped, fns)
	return shipped, nil
}

// compile compiles kernels ks of c's module, in one module of their own
// laid out as c's, with tc's tool: under their launch bounds where
// bounded, else with their threads alone as their bound. It returns what
// ptxas reports of each kernel of ks.
func (tc toolchain) compile(ctx context.Context, c *Compiled, ks []*kir.Kernel, bounded bool) (map[*kir.Kernel]*PTXASFunction, error) {
	probe := *c.Module
	probe.Kernels = make([]*kir.Kernel, len(ks))
	for i, k := range ks {
		kc := *k
		if !bounded {
			kc.BlocksPerSM = 0
		}
		probe.Kernels[i] = &kc
	}
	pc := &Compiled{Result: &pipeline.Result{Program: c.Program, Plan: c.Plan, Module: &probe, Passes: c.Passes}, layout: c.Layout()}
	var info []byte
	var names map[*kir.Kernel]string
	switch tc.tool {
	case NVCC:
		dir, err := os.MkdirTemp("", "tec-nvcc-")
		if err != nil {
			return nil, fmt.Errorf("ptxas: %w", err)
		}
		defer os.RemoveAll(dir)
		if _, info, err = nvccCubin(ctx, pc, tc.tg, dir, "-Xptxas", "-v"); err != nil {
			return nil, err
		}
		names = cuda.KernelNames(&probe)
	case LLCPTXAS:
		files, err := Emit(ctx, pc, tc.tg, Outputs{PTX: true})
		if err != nil {
			return nil, err
		}
		if _, info, err = llvm.AssembleVerbose(ctx, files[0].Data, tc.tg); err != nil {
			return nil, err
		}
		names = llvm.KernelNames(&probe)
	}
	fns := ParsePTXAS(info)
	out := map[*kir.Kernel]*PTXASFunction{}
	for i, k := range probe.Kernels {
		if f := fns[names[k]]; f != nil {
			out[ks[i]] = f
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
