package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"tec/backend/kir"
	"tec/backend/report"
	"tec/backend/sim"
	"tec/driver"
	"tec/frontend/hf"
	"tec/internal/numeric"
	"tec/internal/tensorio"
	"tec/lang/diag"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
)

// inputFlag collects repeated --input NAME=@FILE.npy flags.
type inputFlag map[string]string

func (f inputFlag) String() string { return fmt.Sprint(map[string]string(f)) }

func (f inputFlag) Set(s string) error {
	name, path, ok := strings.Cut(s, "=@")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want NAME=@FILE.npy, got %q", s)
	}
	if prev, dup := f[name]; dup {
		return fmt.Errorf("%s is given twice (@%s and @%s)", name, prev, path)
	}
	f[name] = path
	return nil
}

type runFlags struct {
	compileFlags
	optFlags
	cudaFlags
	race      bool
	device    string
	inputs    string
	input     inputFlag
	params    string
	fill      string
	seed      uint64
	outputs   string
	saveTo    string
	expected  string
	rtol      float64
	atol      float64
	json      bool
	show      int
	maxTime   time.Duration
	maxMemory string
}

func runCommand() *command {
	c := &command{
		name:    "run",
		summary: "evaluate a model on inputs and params",
		usage:   "[flags] FILE",
		help: `Run compiles FILE's model and evaluates it on a device:

  ref   the reference evaluator (float64 arithmetic; the oracle that every
        other device and optimisation level is checked against)
  sim   the kernels that "tec build" emits at -O (with --gpu), executed by
        the kernel-IR simulator on the CPU with CUDA's semantics (f32
        arithmetic, every block and thread, each launch checked against
        the GPU's limits); --race reports data races and reads of
        memory nothing wrote
  cuda  the same kernels on an NVIDIA GPU, through tec-cuda (build it with
        go install -tags cuda ./cmd/tec-cuda): --codegen ptx (default) runs
        the LLVM path's PTX, which the driver compiles, --codegen cu the
        CUDA C++ compiled by nvcc; --bench N times N runs with CUDA events
        and prints each kernel's and the total's median, min and max

Inputs and params are bound by name from .npz archives (--inputs,
--params) and single .npy files (--input NAME=@FILE.npy); --params DIR
binds the params of a program that tec import DIR wrote from the Hugging
Face checkpoint's safetensors. Anything not
supplied is filled as --fill says (zeros, ones, or random values that
depend only on --seed and the tensor's name); without --fill a missing
tensor is an error. Float data is converted to the placeholder's float
dtype; shapes must match exactly.

With --expected, every output is compared with the array of the same name
(|got - want| <= atol + rtol*|want|, NaN only equal to NaN); the first
differing element of each output is printed and the status is 1.
--outputs writes the outputs to an .npz archive; --json prints a
machine-readable summary on standard output.`,
	}
	c.run = func(e *env, args []string) int {
		fs := newFlagSet(c)
		rf := runFlags{input: inputFlag{}}
		rf.register(fs)
		fs.StringVar(&rf.device, "device", "ref", "where to evaluate: ref, sim or cuda")
		rf.registerTargetOpt(fs)
		rf.registerCUDA(fs)
		fs.BoolVar(&rf.race, "race", true, "with --device sim, detect data races and reads of memory nothing wrote (status 1 if any)")
		fs.StringVar(&rf.inputs, "inputs", "", "an .npz archive of inputs, by name")
		fs.Var(rf.input, "input", "one input from an .npy file: NAME=@FILE.npy (repeatable)")
		fs.StringVar(&rf.params, "params", "", "an .npz archive of params (weights), by name, or a Hugging Face checkpoint's directory (tec import DIR's)")
		fs.StringVar(&rf.fill, "fill", "", "fill tensors not supplied: zeros, ones or random")
		fs.Uint64Var(&rf.seed, "seed", 0, "the seed of --fill random")
		fs.StringVar(&rf.outputs, "outputs", "", "write the outputs to this .npz archive")
		fs.StringVar(&rf.saveTo, "save-feeds", "", "write every input and param, as bound, to `DIR`/NAME.npy (what the generated runner's --inputs and --params read)")
		fs.StringVar(&rf.expected, "expected", "", "compare the outputs with this .npz archive, which must hold exactly the outputs")
		fs.Float64Var(&rf.rtol, "rtol", 1e-4, "relative tolerance of --expected")
		fs.Float64Var(&rf.atol, "atol", 1e-5, "absolute tolerance of --expected")
		fs.BoolVar(&rf.json, "json", false, "print a JSON summary on standard output, and failures as JSON diagnostics")
		fs.IntVar(&rf.show, "show", 6, "how many leading values of each output to print")
		fs.DurationVar(&rf.maxTime, "max-time", time.Minute, "refuse a run estimated to take longer than this (0: no limit)")
		fs.StringVar(&rf.maxMemory, "max-memory", "auto", "refuse a run estimated to need more memory than this: a `SIZE` (512MiB, 8GB), auto (the memory available) or 0 (no limit)")
		pos, code, ok := e.parse(c, fs, splitOptLevel(args))
		if !ok {
			return code
		}
		e.setJSON(rf.diagnostics, isSet(fs, "diagnostics"), rf.json)
		// JSON diagnostics come with the JSON summary, so that standard
		// output is JSON whatever the outcome.
		rf.json = rf.json || e.json
		if err := rf.validate(); err != nil {
			return e.usageError(c, "%v", err)
		}
		if rf.device != "ref" && rf.device != "sim" && rf.device != "cuda" {
			return e.usageError(c, "unknown device %q (want ref, sim or cuda)", rf.device)
		}
		if err := checkCUDAFlags(fs, rf.device, &rf.cudaFlags); err != nil {
			return e.usageError(c, "%v", err)
		}
		if err := kernelFlagsNeedSim(fs, rf.device); err != nil {
			return e.usageError(c, "%v", err)
		}
		var tg string
		if rf.device == "cuda" {
			tg = rf.target // the GPU follows the target, as for tec build
		}
		opts, err := rf.options(tg)
		if err != nil {
			return e.optionsError(c, err)
		}
		var fill *numeric.Fill
		if rf.fill != "" {
			f, err := numeric.ParseFill(rf.fill)
			if err != nil {
				return e.usageError(c, "--fill: %v", err)
			}
			fill = &f
		}
		if !(rf.rtol >= 0) || !(rf.atol >= 0) || math.IsInf(rf.rtol, 1) || math.IsInf(rf.atol, 1) {
			return e.usageError(c, "--rtol and --atol must be non-negative finite numbers")
		}
		if rf.maxTime < 0 {
			return e.usageError(c, "--max-time must not be negative")
		}
		limit, err := parseMemoryLimit(rf.maxMemory, os.ReadFile)
		if err != nil {
			return e.usageError(c, "%v", err)
		}
		if len(pos) != 1 {
			return e.usageError(c, "want one FILE, got %d arguments", len(pos))
		}
		prog, code := e.compile(&rf.compileFlags, pos[0])
		if prog == nil {
			return code
		}
		// Both devices run the program at --precision, so that they round
		// at the same points; feeds are bound to its placeholders, whose
		// params may now be half (conform rounds f32 arrays to them).
		prog, opts.Precision = precision.Apply(prog, opts.Precision), precision.F32
		return e.runProgram(c, prog, &rf, opts, limit, fill)
	}
	return c
}

// kernelFlags are the flags of tec run that configure the kernels, which
// only --device sim (and cuda, all but --race) runs.
func kernelFlags() []string { return []string{"O", "gpu", "deterministic", "race"} }

// kernelFlagsNeedSim reports the kernel flags given with a device other
// than sim: the reference evaluator would ignore them, and a user who
// asked for -O4 would believe the kernels had run.
func kernelFlagsNeedSim(fs *flag.FlagSet, device string) error {
	if device == "sim" || device == "cuda" {
		return nil
	}
	var given []string
	for _, name := range kernelFlags() {
		f := fs.Lookup(name)
		if !isSet(fs, name) {
			continue
		}
		switch name {
		case "O":
			given = append(given, "-O"+f.Value.String())
		case "deterministic":
			given = append(given, "--deterministic")
		case "race":
			given = append(given, "--race="+f.Value.String())
		default:
			given = append(given, "--"+name+" "+f.Value.String())
		}
	}
	if len(given) == 0 {
		return nil
	}
	verb := "configures"
	if len(given) > 1 {
		verb = "configure"
	}
	return fmt.Errorf("%s %s the kernels, which only --device sim runs; --device %s evaluates the model itself and would ignore %s"+
		hintSep+"add --device sim to run the kernels that tec build emits, or leave %s out",
		joinAnd(given), verb, device, plural(len(given), "it", "them"), plural(len(given), "it", "them"))
}

// joinAnd joins words as "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// runSummary is the JSON printed by "tec run --json". Its fields are part of
// the CLI's documented interface (docs/cli.md).
type runSummary struct {
	Model   string          `json:"model"`
	Device  string          `json:"device"`
	TimeMS  jsonFloat       `json:"time_ms"`
	Filled  []string        `json:"filled"`
	Outputs []outputSummary `json:"outputs"`
	Compare *compareSummary `json:"compare,omitempty"`
	// CUDA describes a run on the GPU (--device cuda).
	CUDA *cudaSummary `json:"cuda,omitempty"`
	// Warnings are the warnings of the run, as JSON diagnostics.
	Warnings []diag.JSONDiagnostic `json:"warnings"`
}

type outputSummary struct {
	Name  string    `json:"name"`
	DType string    `json:"dtype"`
	Shape []int     `json:"shape"`
	Min   jsonFloat `json:"min"`
	Max   jsonFloat `json:"max"`
	Mean  jsonFloat `json:"mean"`
	NaNs  int       `json:"nan"`
	Infs  int       `json:"inf"`
}

type compareSummary struct {
	OK         bool              `json:"ok"`
	Rtol       float64           `json:"rtol"`
	Atol       float64           `json:"atol"`
	Mismatches []mismatchSummary `json:"mismatches"`
}

type mismatchSummary struct {
	Output string    `json:"output"`
	Index  []int     `json:"index"`
	Got    jsonFloat `json:"got"`
	Want   jsonFloat `json:"want"`
	Count  int       `json:"count"`
	MaxAbs jsonFloat `json:"max_abs"`
	MaxRel jsonFloat `json:"max_rel"`
}

// runProgram runs prog on rf's device (after checking that the run fits
// the time and memory it may take) and prints the result.
func (e *env) runProgram(c *command, prog *te.Program, rf *runFlags, opts pipeline.Options, limit memLimit, fill *numeric.Fill) int {
	if rf.device == "cuda" {
		// Say that tec-cuda is missing before compiling anything.
		if _, err := e.findTecCUDA(); err != nil {
			return e.failf(c, exitUser, err)
		}
	}
	dev := namedDevice(rf.device, rf.race)
	var comp *driver.Compiled
	var mod *kir.Module
	if dev.Kernels() {
		var err error
		if comp, err = e.compileForDevice(c, prog, opts, rf.device, &rf.cudaFlags); err != nil {
			return e.failf(c, exitUser, fail(codeBuild, err))
		}
		mod = comp.Module
	}
	need := dev.Memory(prog, comp)
	if rf.expected != "" {
		for _, t := range prog.Outputs {
			need.Total += driver.ArrayBytes(t)
		}
	}
	if err := e.checkMemory(prog.Name, rf.device, need, limit); err != nil {
		return e.failf(c, exitUser, fail(codeMemory, err))
	}
	secs, err := e.checkWork(dev, prog, comp, rf)
	if err != nil {
		return e.failf(c, exitUser, fail(codeTime, err))
	}
	long := secs > e.longRunThreshold().Seconds()
	if long && !e.json {
		fmt.Fprintf(e.stderr, "tec run: model %s on %s: about %.2g operations, estimated %s\n",
			prog.Name, rf.device, prog.Work().Total(), formatSeconds(secs))
	}
	feeds, filled, err := e.bindFeeds(c, prog, rf, fill)
	if err != nil {
		return e.failf(c, exitUser, err)
	}
	if rf.saveTo != "" {
		if err := saveFeeds(rf.saveTo, feeds); err != nil {
			return e.failf(c, exitUser, &failure{code: codeIO, file: rf.saveTo, err: fmt.Errorf("--save-feeds: %w", err)})
		}
	}
	var expected map[string]*te.Array
	if rf.expected != "" {
		if expected, err = readExpected(prog, rf.expected); err != nil {
			return e.failf(c, exitUser, err)
		}
	}
	if limit.bytes > 0 {
		// Freed intermediates are garbage until collected: the limit
		// makes the collector work harder, not the heap outgrow it.
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit.bytes))
	}
	var bar *progressBar
	if long && mod != nil && !e.json && e.terminal(e.stderr) {
		total := report.Module(mod, report.Config{ResidentBlocks: sim.DefaultResidentBlocks}).Total
		bar = newProgressBar(e.stderr, "tec run: simulating", total, time.Now)
	}
	start := time.Now()
	var outs map[string]*te.Array
	var gpu *cudaSummary
	switch {
	case rf.device == "cuda":
		outs, gpu, err = e.runCUDA(prog, comp, feeds, &rf.cudaFlags)
	case bar != nil:
		outs, err = e.evaluate(driver.Simulator{Options: sim.Options{Race: rf.race, Progress: bar.update}}, prog, comp, feeds)
		bar.finish()
	default:
		outs, err = e.evaluate(dev, prog, comp, feeds)
	}
	elapsed := time.Since(start)
	if err != nil {
		return e.failf(c, exitUser, err)
	}
	if rf.outputs != "" {
		if err := tensorio.WriteNPZ(rf.outputs, outs); err != nil {
			return e.failf(c, exitUser, &failure{code: codeIO, file: rf.outputs, err: err})
		}
	}
	sum := runSummary{Model: prog.Name, Device: rf.device, TimeMS: jsonFloat(elapsed.Microseconds()) / 1000, Filled: filled, CUDA: gpu}
	for _, t := range prog.Outputs {
		a := outs[t.Name]
		st := numeric.Summarize(a)
		sum.Outputs = append(sum.Outputs, outputSummary{Name: t.Name, DType: t.DType.String(), Shape: a.Shape,
			Min: jsonFloat(st.Min), Max: jsonFloat(st.Max), Mean: jsonFloat(st.Mean), NaNs: st.NaNs, Infs: st.Infs})
	}
	status := exitOK
	if expected != nil {
		cs, err := compareOutputs(prog, outs, expected, numeric.Tolerance{Rtol: rf.rtol, Atol: rf.atol})
		if err != nil {
			return e.failf(c, exitUser, &failure{code: codeData, file: rf.expected, err: fmt.Errorf("%s: %w", rf.expected, err)})
		}
		sum.Compare = cs
		if !cs.OK {
			status = exitUser
		}
	}
	if rf.json {
		sum.Warnings = e.jsonWarnings()
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			return e.failf(c, exitUser, fail(codeIO, err))
		}
		return status
	}
	printRun(e.stdout, &sum, outs, rf.show, rf.fill, rf.seed)
	if gpu != nil {
		printCUDA(e.stdout, gpu)
	}
	return status
}

// readExpected reads the arrays of --expected: exactly one for each output
// of prog. A missing array is an error that lists those the file holds; so
// is an array that names no output, which would otherwise be left
// uncompared while the run reported that every output matched.
func readExpected(prog *te.Program, file string) (map[string]*te.Array, error) {
	specs := make(map[string]tensorio.Spec, len(prog.Outputs))
	var outputs []string
	for _, t := range prog.Outputs {
		specs[t.Name] = tensorio.Spec{DType: t.DType, Shape: t.Shape}
		outputs = append(outputs, t.Name)
	}
	arrays, others, err := tensorio.ReadNPZAs(file, specs)
	if err != nil {
		return nil, dataFailure(file, err)
	}
	var missing []string
	for _, name := range outputs {
		if arrays[name] == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 && len(others) == 0 {
		return arrays, nil
	}
	held := append(slices.Sorted(maps.Keys(arrays)), others...)
	sort.Strings(held)
	holds := "holds no arrays"
	if len(held) > 0 {
		holds = "holds " + quoteAll(held)
	}
	var msg string
	if len(missing) > 0 {
		msg = fmt.Sprintf("%s has no array for %s %s of model %s; it %s", file,
			plural(len(missing), "output", "outputs"), quoteAll(missing), prog.Name, holds)
	} else {
		msg = fmt.Sprintf("%s %s, of which %s %s no output of model %s (its outputs: %s)", file, holds,
			quoteAll(others), plural(len(others), "names", "name"), prog.Name, quoteAll(outputs))
	}
	var hints []string
	for _, name := range others {
		if s := diag.Suggest(name, missing); s != "" {
			hints = append(hints, fmt.Sprintf("%q to %q", name, s))
		}
	}
	hint := "--expected must hold one array for each output, named after it, and nothing else"
	if len(hints) > 0 {
		hint = "rename " + joinAnd(hints) + ": " + hint
	}
	return nil, &failure{code: codeData, file: file, err: errors.New(msg + hintSep + hint)}
}

// quoteAll quotes each name and joins them with commas.
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// dataFailure wraps an error reading file: an I/O failure (a file missing
// or unreadable) or data that does not fit the model.
func dataFailure(file string, err error) error {
	code := codeData
	var pe *fs.PathError
	if errors.As(err, &pe) {
		code = codeIO
	}
	return &failure{code: code, file: file, err: err}
}

// namedDevice returns the device of --device name: the reference
// evaluator (ref), the simulator (sim), detecting races with race, or, for
// its estimates, a GPU (cuda; cudaDevice gives the one that runs).
func namedDevice(name string, race bool) driver.Device {
	switch name {
	case "sim":
		return driver.Simulator{Options: sim.Options{Race: race}}
	case "cuda":
		return &driver.CUDA{}
	}
	return driver.Reference{}
}

// evaluate runs prog on dev, a device of this process (comp, its kernels,
// on sim), and returns its outputs by name. It prints the races the
// simulator finds, or keeps them as JSON diagnostics.
func (e *env) evaluate(dev driver.Device, prog *te.Program, comp *driver.Compiled, feeds map[string]*te.Array) (map[string]*te.Array, error) {
	res, err := dev.Run(context.Background(), prog, comp, feeds)
	var races *driver.RaceError
	if errors.As(err, &races) {
		for _, race := range races.Races {
			if e.json {
				e.pending = append(e.pending, &diag.Diagnostic{Severity: diag.Error, Code: codeRace, Message: race.String()})
			} else {
				fmt.Fprintf(e.stderr, "tec run: %s\n", race)
			}
		}
	}
	if err != nil {
		return nil, runFailure(err)
	}
	return res.Outputs, nil
}

// bindFeeds assembles the arrays of every placeholder of prog from the files
// named by the flags, filling the rest. It returns the names it filled.
func (e *env) bindFeeds(c *command, prog *te.Program, rf *runFlags, fill *numeric.Fill) (map[string]*te.Array, []string, error) {
	placeholders := prog.Placeholders()
	specs := make(map[string]tensorio.Spec, len(placeholders))
	for _, t := range placeholders {
		specs[t.Name] = tensorio.Spec{DType: t.DType, Shape: t.Shape}
	}
	given := map[string]*te.Array{}
	origin := map[string]string{}
	give := func(name string, a *te.Array, file string) error {
		if prev, dup := origin[name]; dup {
			return &failure{code: codeData, file: file, err: fmt.Errorf("%s %q is given twice, by %s and by %s", specKind(prog, name), name, prev, file)}
		}
		given[name], origin[name] = a, file
		return nil
	}
	var extra []string
	for i, file := range []string{rf.inputs, rf.params} {
		if file == "" {
			continue
		}
		read := tensorio.ReadNPZAs
		if i == 1 {
			read = readParams
		}
		arrays, others, err := read(file, specs)
		if err != nil {
			return nil, nil, dataFailure(file, err)
		}
		for _, name := range slices.Sorted(maps.Keys(arrays)) {
			if err := give(name, arrays[name], file); err != nil {
				return nil, nil, err
			}
		}
		for _, name := range others {
			extra = append(extra, name)
			origin[name] = file
		}
	}
	for _, name := range slices.Sorted(maps.Keys(rf.input)) {
		file := rf.input[name]
		spec, ok := specs[name]
		if !ok {
			extra = append(extra, name)
			origin[name] = file
			continue
		}
		a, err := tensorio.ReadNPYFile(file, &spec)
		if err != nil {
			return nil, nil, dataFailure(file, err)
		}
		if err := give(name, a, file); err != nil {
			return nil, nil, err
		}
	}

	known := make([]string, len(placeholders))
	for i, t := range placeholders {
		known[i] = t.Name
	}
	sort.Strings(extra)
	e.warnExtras(c, extra, func(name string) string { return origin[name] }, func(name string) string {
		msg := fmt.Sprintf("%s holds %q, which is no input or param of model %s", origin[name], name, prog.Name)
		if s := diag.Suggest(name, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return msg
	}, "no input or param of model "+prog.Name)

	var ranges map[string][2]int // of gathers' index tensors, for --fill
	if fill != nil {
		ranges = gatherRanges(prog)
	}
	feeds, filled, missing, err := fillOrConform(placeholders, given, func(name string) string { return origin[name] }, fill, rf.seed, ranges)
	if err != nil {
		return nil, nil, err
	}
	if len(missing) > 0 {
		return nil, nil, fail(codeData, fmt.Errorf("no data for %s %s of model %s"+hintSep+"pass --inputs/--params/--input, or --fill zeros|ones|random",
			plural(len(missing), "tensor", "tensors"), strings.Join(missing, ", "), prog.Name))
	}
	return feeds, filled, nil
}

// readParams reads the arrays that specs names from what --params names:
// an .npz archive, or the directory of a Hugging Face checkpoint, whose
// safetensors it reads by the names of frontend/hf's mapping (a param wq.3
// from model.layers.3.self_attn.q_proj.weight). Either way it returns the
// arrays by the names of specs, as the file stores them (conform converts
// them), and the names of the file's arrays that specs does not name.
func readParams(path string, specs map[string]tensorio.Spec) (map[string]*te.Array, []string, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return hf.ReadParams(path, specs)
	}
	return tensorio.ReadNPZAs(path, specs)
}

// fillOrConform returns an array for each placeholder of ts: the one
// given, conformed to it (an error names the file origin(name) that gave
// it), or else one filled as fill says, an index tensor's within the
// range of its gathers (ranges, by name). It returns the names it filled,
// and those neither given nor filled, where fill is nil.
func fillOrConform(ts []*te.Tensor, given map[string]*te.Array, origin func(name string) string, fill *numeric.Fill, seed uint64, ranges map[string][2]int) (feeds map[string]*te.Array, filled, missing []string, err error) {
	feeds = map[string]*te.Array{}
	filled, missing = []string{}, []string{}
	for _, t := range ts {
		a, ok := given[t.Name]
		if !ok {
			if fill == nil {
				missing = append(missing, t.Name)
				continue
			}
			if r, isIndex := ranges[t.Name]; isIndex {
				feeds[t.Name] = numeric.NewFilledIndex(t, *fill, seed, r)
			} else {
				feeds[t.Name] = numeric.NewFilled(t, *fill, seed)
			}
			filled = append(filled, t.Name)
			continue
		}
		conv, err := conform(a, t)
		if err != nil {
			file := origin(t.Name)
			return nil, nil, nil, &failure{code: codeData, file: file, err: fmt.Errorf("%s: %s %q: %w", file, t.Kind, t.Name, err)}
		}
		feeds[t.Name] = conv
	}
	return feeds, filled, missing, nil
}

// gatherRanges returns, by name, the range of the values that the gathers
// of progs accept of each of their index tensors (numeric.GatherRanges).
func gatherRanges(progs ...*te.Program) map[string][2]int {
	ranges := map[string][2]int{}
	for _, p := range progs {
		for t, r := range numeric.GatherRanges(p) {
			ranges[t.Name] = r
		}
	}
	return ranges
}

// specKind returns "input" or "param" for the placeholder name of prog.
func specKind(prog *te.Program, name string) string {
	if t := prog.Lookup(name); t != nil {
		return t.Kind.String()
	}
	return "tensor"
}

// conform checks that a fits placeholder t, converting between float dtypes
// (rounding to t's precision).
func conform(a *te.Array, t *te.Tensor) (*te.Array, error) {
	if !te.SameShape(a.Shape, t.Shape) {
		return nil, fmt.Errorf("shape %s, want %s", numeric.FormatIndex(a.Shape), numeric.FormatIndex(t.Shape))
	}
	if a.DType == t.DType {
		return a, nil
	}
	if a.DType.IsFloat() && t.DType.IsFloat() {
		b := te.NewArray(t.DType, t.Shape)
		for i, v := range a.Data {
			b.Data[i] = te.Round(t.DType, v)
		}
		return b, nil
	}
	return nil, fmt.Errorf("dtype %s, want %s", a.DType, t.DType)
}

func compareOutputs(prog *te.Program, outs, expected map[string]*te.Array, tol numeric.Tolerance) (*compareSummary, error) {
	cs := &compareSummary{OK: true, Rtol: tol.Rtol, Atol: tol.Atol, Mismatches: []mismatchSummary{}}
	for _, t := range prog.Outputs {
		want, ok := expected[t.Name]
		if !ok {
			return nil, fmt.Errorf("no array for output %q", t.Name)
		}
		m, err := numeric.Compare(outs[t.Name], want, tol)
		if err != nil {
			return nil, fmt.Errorf("output %q: %w", t.Name, err)
		}
		if m != nil {
			cs.OK = false
			cs.Mismatches = append(cs.Mismatches, mismatchSummary{Output: t.Name, Index: m.Index, Got: jsonFloat(m.Got), Want: jsonFloat(m.Want),
				Count: m.Count, MaxAbs: jsonFloat(m.MaxAbs), MaxRel: jsonFloat(m.MaxRel)})
		}
	}
	return cs, nil
}

func printRun(w io.Writer, s *runSummary, outs map[string]*te.Array, show int, fill string, seed uint64) {
	fmt.Fprintf(w, "model %s on %s: %.3f ms\n", s.Model, s.Device, s.TimeMS)
	if len(s.Filled) > 0 {
		fmt.Fprintf(w, "filled with %s (seed %d): %s\n", fill, seed, strings.Join(s.Filled, ", "))
	}
	for _, o := range s.Outputs {
		fmt.Fprintf(w, "%s %s%s  min %.6g  max %.6g  mean %.6g", o.Name, o.DType, numeric.FormatIndex(o.Shape), o.Min, o.Max, o.Mean)
		if o.NaNs+o.Infs > 0 {
			fmt.Fprintf(w, "  (%d NaN, %d Inf)", o.NaNs, o.Infs)
		}
		fmt.Fprintln(w)
		if show > 0 {
			data := outs[o.Name].Data
			n := min(show, len(data))
			vals := make([]string, n)
			for i := range vals {
				vals[i] = fmt.Sprintf("%.6g", data[i])
			}
			more := ""
			if n < len(data) {
				more = ", ..."
			}
			fmt.Fprintf(w, "  [%s%s]\n", strings.Join(vals, ", "), more)
		}
	}
	if s.Compare != nil {
		if s.Compare.OK {
			fmt.Fprintf(w, "all %d outputs match the expected values (rtol %g, atol %g)\n", len(s.Outputs), s.Compare.Rtol, s.Compare.Atol)
		}
		for _, m := range s.Compare.Mismatches {
			fmt.Fprintf(w, "MISMATCH %s%s: got %.9g, want %.9g; %d elements differ (max abs diff %.3g, max rel diff %.3g; rtol %g, atol %g)\n",
				m.Output, numeric.FormatIndex(m.Index), m.Got, m.Want, m.Count, m.MaxAbs, m.MaxRel, s.Compare.Rtol, s.Compare.Atol)
		}
	}
}

// jsonFloat is a float64 whose JSON form is a number when finite and the
// string "NaN", "Infinity" or "-Infinity" otherwise (JSON has no such numbers).
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Infinity"`), nil
	}
	return json.Marshal(v)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// saveFeeds writes each feed to dir/NAME.npy, creating dir.
func saveFeeds(dir string, feeds map[string]*te.Array) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(feeds))
	for name := range feeds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := tensorio.WriteNPYFile(filepath.Join(dir, name+".npy"), feeds[name]); err != nil {
			return err
		}
	}
	return nil
}

// namedExtras is how many of the arrays that feed nothing warnExtras names
// one by one.
const namedExtras = 5

// warnExtras warns of the arrays extra (sorted by name) of the files that
// file names, which feed nothing: the first namedExtras with message's
// words, and the rest in one warning that counts them as what (an archive
// of 20,000 unrelated arrays gives six warnings, not 20,000).
func (e *env) warnExtras(c *command, extra []string, file, message func(name string) string, what string) {
	var rest []string
	if len(extra) > namedExtras+1 {
		extra, rest = extra[:namedExtras], extra[namedExtras:]
	}
	for _, name := range extra {
		e.warn(c, codeData, file(name), "%s", message(name))
	}
	if len(rest) > 0 {
		e.warn(c, codeData, file(rest[0]), "%d more arrays (%s, ...) are %s",
			len(rest), strings.Join(rest[:min(3, len(rest))], ", "), what)
	}
}
