package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"strings"

	"tec/driver"
	"tec/gpu"
	"tec/internal/safefile"
	"tec/partition"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
)

// optFlags are the flags of the commands that run the pipeline.
type optFlags struct {
	level         int
	gpu           string
	deterministic bool
	precision     string
	context       int
	flashChunks   int
}

func (o *optFlags) registerOpt(fs *flag.FlagSet) {
	fs.IntVar(&o.level, "O", pipeline.MaxLevel, fmt.Sprintf("optimisation level, -O0 to -O%d", pipeline.MaxLevel))
	fs.BoolVar(&o.deterministic, "deterministic", false, "combine split reductions' per-block partials in a fixed order instead of with atomics: bit-identical results from run to run")
	fs.StringVar(&o.gpu, "gpu", "", "the GPU model: "+strings.Join(gpu.Names(), ", ")+" or a .json file (default: "+gpu.Default+")")
	fs.IntVar(&o.context, "context", 0, "the context the cost model prices attention masked by run-time positions at (select(t <= pos[b], …)): tiles past position N-1 are skipped at run time and left out of the predictions; 0 prices the whole cache")
	fs.IntVar(&o.flashChunks, "flash-chunks", 0, "split attention's softmax-weighted reductions over a long axis across blocks in N chunks (flash-decoding): 0 lets the cost model decide at -O3 and -O4, 1 never splits, N splits in N chunks at every level where N divides the axis")
	fs.StringVar(&o.precision, "precision", "f32", "the arithmetic precision: "+strings.Join(precision.Names(), ", ")+" (f16 and bf16 store params and activations in that type, accumulating and keeping statistics in f32; tf32 rounds contraction operands to TF32)")
}

// registerTargetOpt registers the flags of registerOpt for a command that
// also has --target, whose default GPU follows the target.
func (o *optFlags) registerTargetOpt(fs *flag.FlagSet) {
	o.registerOpt(fs)
	usage := "the GPU model: " + strings.Join(gpu.Names(), ", ") + " or a .json file (default: " + gpu.Default
	for _, a := range gpu.ArchNames() {
		if name, _ := gpu.DefaultFor(a); name != gpu.Default {
			usage += ", " + name + " for --target " + a
		}
	}
	fs.Lookup("gpu").Usage = usage + ")"
}

// options returns the pipeline's options, with the GPU that --gpu and
// the target tg ("" for a command without --target) resolve to
// (gpu.Resolve): the GPU named by --gpu or, without it, the one that
// matches tg, compiled for tg.
func (o *optFlags) options(tg string) (pipeline.Options, error) {
	if o.level < 0 || o.level > pipeline.MaxLevel {
		return pipeline.Options{}, fmt.Errorf("-O%d: want -O0 to -O%d", o.level, pipeline.MaxLevel)
	}
	prec, err := precision.Parse(o.precision)
	if err != nil {
		return pipeline.Options{}, fmt.Errorf("--precision: %w", err)
	}
	if tg != "" {
		if _, err := gpu.LookupArch(tg); err != nil {
			return pipeline.Options{}, fmt.Errorf("--target: %w", err)
		}
	}
	g, err := gpu.Resolve(o.gpu, tg)
	if mm := (*gpu.MismatchError)(nil); errors.As(err, &mm) {
		return pipeline.Options{}, targetMismatch(mm)
	}
	if err != nil {
		return pipeline.Options{}, gpuFailure(err)
	}
	if err := pipeline.CheckPrecision(prec, *g); err != nil {
		return pipeline.Options{}, err
	}
	if o.context < 0 {
		return pipeline.Options{}, fmt.Errorf("--context %d: want a number of positions, at least 1 (0: the whole cache)", o.context)
	}
	if o.flashChunks < 0 {
		return pipeline.Options{}, fmt.Errorf("--flash-chunks %d: want 0 (the cost model decides), 1 (no split) or a number of chunks", o.flashChunks)
	}
	return pipeline.Options{Level: o.level, GPU: *g, Deterministic: o.deterministic, Precision: prec, Context: o.context, FlashChunks: o.flashChunks}, nil
}

// targetMismatch is the usage error of a --target whose code the --gpu
// model cannot run (--target sm_90 --gpu a100 planned for an A100 code
// that no A100 runs), with the target that it can.
func targetMismatch(mm *gpu.MismatchError) error {
	fit := "an older GPU has no --target"
	if a, ok := mm.Model.NativeArch(); ok {
		fit = "--target " + a.Name + " for the GPU"
	}
	return fmt.Errorf("--target %w"+hintSep+"plan for a GPU of the target (leave --gpu out for its default), or emit %s", mm, fit)
}

// optionsError reports an error of optFlags.options: a usage error, or a
// GPU description that is not valid.
func (e *env) optionsError(c *command, err error) int {
	var f *failure
	if errors.As(err, &f) {
		return e.failf(c, exitUsage, err)
	}
	return e.usageError(c, "%v", err)
}

// optLevelArg matches "-O3" and "--O3", which the flag package would read as
// a flag named "O3".
var optLevelArg = regexp.MustCompile(`^--?O([0-9]+)$`)

// splitOptLevel rewrites "-O3" as "-O=3", so that -O takes its value
// attached as compilers' -O does.
func splitOptLevel(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if m := optLevelArg.FindStringSubmatch(a); m != nil {
			a = "-O=" + m[1]
		}
		out[i] = a
	}
	return out
}

// emitKinds returns the kinds of file tec build emits.
func emitKinds() []string { return []string{"cu", "ll", "ptx", "host"} }

type buildFlags struct {
	compileFlags
	optFlags
	out        string
	target     string
	emit       string
	report     string
	dumpAfter  string
	cpuprofile string
	counters   string
	ptxas      string
}

// counterModes are the values of tec build's --counters.
var counterModes = map[string]partition.CounterMode{
	"cost": partition.CountersByCost, "off": partition.CountersOff, "everywhere": partition.CountersWherever,
}

func buildCommand() *command {
	c := &command{
		name:    "build",
		summary: "compile a model to CUDA C++, LLVM IR and PTX",
		usage:   "[flags] FILE -o DIR",
		help: `Build compiles FILE's model through the optimisation pipeline (-O0 one
kernel per tensor expression ... -O4 grid-synced persistent kernels with
on-chip reuse) and writes to DIR what --emit asks for:

  cu    MODEL.cu and MODEL.h: the kernels in CUDA C++ and a C interface
        (MODEL_run, MODEL_workspace_size, descriptions of the tensors)
  host  main.cu: a runner that reads .npy inputs and params, runs the model,
        writes .npy outputs and, with --bench N, times it:
          nvcc -O3 -arch=sm_80 -o run main.cu MODEL.cu
  ll    MODEL.ll: the kernels as LLVM IR for nvptx64-nvidia-cuda
  ptx   MODEL.ptx: that IR compiled by llc (llc-16 for sm_90)

--report writes the static cost report as JSON (per kernel: grid, block,
shared memory, global bytes read and written, FLOPs, barriers);
--dump-after prints a pass's result on standard output.

At -O3 and -O4 the kernels carry the blocks per SM the plan counts on
(__launch_bounds__). With --ptxas auto, the default, and nvcc (or llc and
ptxas) on PATH, the build compiles its kernels under those bounds; where
ptxas spills under a kernel's bound, it plans again with the registers
ptxas gives that kernel unbounded, and a kernel that still spills is
bounded by its threads alone, with a warning.`,
	}
	c.run = func(e *env, args []string) int {
		fs := newFlagSet(c)
		var bf buildFlags
		bf.compileFlags.register(fs)
		bf.registerTargetOpt(fs)
		fs.StringVar(&bf.out, "o", "", "the directory to write to (created if missing)")
		fs.StringVar(&bf.target, "target", gpu.DefaultArch(), "the GPU architecture: "+strings.Join(gpu.ArchNames(), " or ")+" (default: --gpu's own, or "+gpu.DefaultArch()+" without --gpu)")
		fs.StringVar(&bf.emit, "emit", "cu,ll,ptx,host", "what to write, comma-separated: cu, ll, ptx, host")
		fs.StringVar(&bf.report, "report", "", "write the static cost report to this JSON file")
		fs.StringVar(&bf.dumpAfter, "dump-after", "", "print the result of a pass on standard output: "+strings.Join(dumpNames(), ", ")+" (those that run with the options given), or all; comma-separated")
		fs.StringVar(&bf.cpuprofile, "cpuprofile", "", "write a CPU profile of the build to this file, for go tool pprof")
		registerPTXAS(fs, &bf.ptxas)
		fs.StringVar(&bf.counters, "counters", "cost", "where -O3 and -O4 kernels wait on per-tile counters instead of grid syncs: cost (where sound and predicted cheaper), off, or everywhere (where sound)")
		pos, code, ok := e.parse(c, fs, splitOptLevel(args))
		if !ok {
			return code
		}
		e.setJSON(bf.diagnostics, isSet(fs, "diagnostics"), false)
		if err := bf.validate(); err != nil {
			return e.usageError(c, "%v", err)
		}
		if len(pos) != 1 {
			return e.usageError(c, "want one FILE, got %d arguments", len(pos))
		}
		// Without --target, the code is for --gpu's own architecture
		// (gpu.Resolve), or the default one without --gpu either.
		target := bf.target
		if !isSet(fs, "target") && bf.gpu != "" {
			target = ""
		}
		if target != "" {
			if _, err := gpu.LookupArch(target); err != nil {
				return e.usageError(c, "--target: %v", err)
			}
		}
		emit, err := parseEmit(bf.emit)
		if err != nil {
			return e.usageError(c, "--emit: %v", err)
		}
		if bf.out == "" && len(emit) > 0 {
			return e.usageError(c, "-o DIR is required")
		}
		opts, err := bf.options(target)
		if err != nil {
			return e.optionsError(c, err)
		}
		tg := opts.GPU.Arch
		mode, ok := counterModes[bf.counters]
		if !ok {
			return e.usageError(c, "--counters %s: want cost, off or everywhere", bf.counters)
		}
		opts.Counters = mode
		tool, err := e.toolchain(bf.ptxas, tg, !emit["cu"] && !emit["host"] && (emit["ll"] || emit["ptx"]))
		if err != nil {
			return e.usageError(c, "%v", err)
		}
		dumps, err := parseDumps(bf.dumpAfter, opts)
		if err != nil {
			return e.usageError(c, "--dump-after: %v", err)
		}
		if bf.cpuprofile != "" {
			stop, err := startCPUProfile(bf.cpuprofile)
			if err != nil {
				fmt.Fprintf(e.stderr, "tec build: %v\n", err)
				return exitUser
			}
			defer stop()
		}
		prog, code := e.compile(&bf.compileFlags, pos[0])
		if prog == nil {
			return code
		}
		relativeSpans(prog, pos[0])
		return e.build(c, prog, &bf, tg, opts, tool, emit, dumps)
	}
	return c
}

// relativeSpans renames the source files in prog's spans, which the
// emitted code cites, relative to the directory of file, the main file:
// file itself by its base name, a file it imports by the path from there.
// Builds do not depend on where they ran: "tec build bert.te" in
// /tmp/x and "tec build /tmp/x/bert.te" elsewhere write the same files.
// The standard library's names ("stdlib/nn.te") stay.
func relativeSpans(prog *te.Program, file string) {
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return
	}
	names := map[string]string{}
	for _, t := range prog.Tensors {
		f := t.Span.File
		if f == "" || strings.HasPrefix(f, "stdlib/") {
			continue
		}
		name, ok := names[f]
		if !ok {
			name = f
			if abs, err := filepath.Abs(f); err == nil {
				if rel, err := filepath.Rel(dir, abs); err == nil {
					name = filepath.ToSlash(rel)
				}
			}
			names[f] = name
		}
		t.Span.File = name
	}
}

// startCPUProfile starts profiling the process's CPU into the file at path
// and returns the function that stops it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// parseEmit parses --emit.
func parseEmit(s string) (map[string]bool, error) {
	emit := map[string]bool{}
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		found := false
		for _, known := range emitKinds() {
			found = found || k == known
		}
		if !found {
			return nil, fmt.Errorf("unknown kind %q (want %s)", k, strings.Join(emitKinds(), ", "))
		}
		emit[k] = true
	}
	return emit, nil
}

// emitOutputs returns the driver's outputs of the kinds of --emit.
func emitOutputs(emit map[string]bool) driver.Outputs {
	return driver.Outputs{CUDA: emit["cu"], Runner: emit["host"], LLVM: emit["ll"], PTX: emit["ptx"]}
}

// dumpNames returns the names that --dump-after knows, in the order the
// passes run: te (the front end's program), the pipeline's passes
// (pipeline.Table), cu and ll (the emitters').
func dumpNames() []string {
	names := []string{"te"}
	for _, p := range pipeline.Table() {
		names = append(names, p.Name)
	}
	return append(names, "cu", "ll")
}

// parseDumps parses --dump-after into the set of passes to print: those
// that the pipeline runs with opts, and te, cu and ll.
func parseDumps(s string, opts pipeline.Options) (map[string]bool, error) {
	level := opts.Level
	passes := append(append([]string{"te"}, pipeline.PassesFor(opts)...), "cu", "ll")
	dumps := map[string]bool{}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
		case p == "all":
			for _, q := range passes {
				dumps[q] = true
			}
		default:
			found := false
			for _, q := range passes {
				found = found || p == q
			}
			if !found && p == "precision" {
				return nil, fmt.Errorf("the precision pass runs only with --precision %s", strings.Join(precision.Names()[1:], ", "))
			}
			if !found {
				return nil, fmt.Errorf("no pass %q at -O%d (want one of %s, or all)", p, level, strings.Join(passes, ", "))
			}
			dumps[p] = true
		}
	}
	return dumps, nil
}

func (e *env) build(c *command, prog *te.Program, bf *buildFlags, tg gpu.Arch, opts pipeline.Options, tool driver.Toolchain, emit, dumps map[string]bool) int {
	dump := func(pass, text string) {
		if dumps[pass] {
			fmt.Fprintf(e.stdout, "// ---- after %s ----\n%s", pass, text)
			if !strings.HasSuffix(text, "\n") {
				fmt.Fprintln(e.stdout)
			}
		}
	}
	if dumps["te"] {
		dump("te", prog.String())
	}
	// The pipeline prints a pass's result for Dump whether or not it is
	// wanted: give it Dump only when one of its passes is.
	for _, pass := range pipeline.PassesFor(opts) {
		if dumps[pass] {
			opts.Dump = dump
		}
	}
	res, err := e.compileChecked(c, prog, opts, tg, tool)
	if err != nil {
		return e.failf(c, exitUser, fail(codeBuild, err))
	}
	out := emitOutputs(emit)
	out.DumpCUDA, out.DumpLLVM, out.Dump = dumps["cu"], dumps["ll"], dump
	files, err := driver.Emit(context.Background(), res, tg, out)
	var ptxErr *driver.PTXError
	if errors.As(err, &ptxErr) {
		err = fmt.Errorf("%w"+hintSep+"leave ptx out of --emit to build without llc", err)
	}
	if err != nil {
		return e.failf(c, exitUser, fail(codeBuild, err))
	}
	// The report is made before anything is written, so that a report
	// that cannot be made leaves no partial outputs behind.
	var reportData []byte
	if bf.report != "" {
		if reportData, err = res.Report(opts.GPU, tg); err != nil {
			return e.failf(c, exitUser, reportFailure(bf.gpu, opts.GPU, err))
		}
	}
	if len(files) > 0 {
		if err := os.MkdirAll(bf.out, 0o755); err != nil {
			return e.failf(c, exitUser, &failure{code: codeIO, file: bf.out, err: err})
		}
	}
	var written []string
	for _, f := range files {
		path := filepath.Join(bf.out, f.Name)
		if err := safefile.WriteFile(path, f.Data, 0o644); err != nil {
			return e.failf(c, exitUser, &failure{code: codeIO, file: path, err: fmt.Errorf("writing %s: %w", path, err)})
		}
		written = append(written, path)
	}
	if bf.report != "" {
		if err := writeReport(bf.report, reportData); err != nil {
			return e.failf(c, exitUser, &failure{code: codeIO, file: bf.report, err: err})
		}
		written = append(written, bf.report)
	}
	if len(dumps) == 0 {
		fmt.Fprintf(e.stdout, "%s: model %s at -O%d for %s: %d kernels, workspace %d B\n",
			bf.out, res.Module.Name, opts.Level, tg.Name, len(res.Module.Kernels), res.Layout().Bytes)
		if s := registerSummary(res.Registers); s != "" {
			fmt.Fprintf(e.stdout, "  %s\n", s)
		}
		for _, w := range written {
			fmt.Fprintf(e.stdout, "  wrote %s\n", w)
		}
	}
	return exitOK
}

// reportFailure wraps an error of driver.Compiled.Report as a failure: a prediction
// that is not finite is the fault of the GPU description g (--gpu spec),
// whose implausible figures it names.
func reportFailure(spec string, g gpu.Model, err error) error {
	if !errors.Is(err, driver.ErrNotFinite) {
		return fail(codeBuild, err)
	}
	// Validate bounds costs to a second; a rate is in range down to the
	// smallest positive number, and none below 1 per second is plausible.
	var odd []string
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"dram_bandwidth", g.DRAMBandwidth}, {"l2_bandwidth", g.L2Bandwidth},
		{"fp32_peak", g.FP32Peak}, {"fp16_peak", g.FP16Peak}, {"tf32_peak", g.TF32Peak},
	} {
		if f.v > 0 && f.v < 1 {
			odd = append(odd, fmt.Sprintf("%s %g", f.name, f.v))
		}
	}
	msg := fmt.Sprintf("--gpu %s: cannot write --report: %v", cmp.Or(spec, g.Name), err)
	if len(odd) > 0 {
		msg += " (the description has " + strings.Join(odd, ", ") + ")"
	}
	msg += hintSep + "give bandwidths in bytes per second, peaks in FLOP per second and costs in seconds (docs/gpu.md)"
	f := &failure{code: codeGPU, err: errors.New(msg)}
	if strings.HasSuffix(spec, ".json") {
		f.file = spec
	}
	return f
}

// writeReport writes the report data to path, creating its directory
// (safefile does).
func writeReport(path string, data []byte) error {
	if err := safefile.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
