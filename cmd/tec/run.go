package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"tec/backend/sim"
	"tec/internal/numeric"
	"tec/internal/tensorio"
	"tec/lang/diag"
	"tec/pipeline"
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
	race     bool
	device   string
	inputs   string
	input    inputFlag
	params   string
	fill     string
	seed     uint64
	outputs  string
	saveTo   string
	expected string
	rtol     float64
	atol     float64
	json     bool
	show     int
	maxTime  time.Duration
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

Inputs and params are bound by name from .npz archives (--inputs,
--params) and single .npy files (--input NAME=@FILE.npy). Anything not
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
		fs.StringVar(&rf.device, "device", "ref", "where to evaluate: ref or sim")
		rf.registerOpt(fs)
		fs.BoolVar(&rf.race, "race", true, "with --device sim, detect data races and reads of memory nothing wrote (status 1 if any)")
		fs.StringVar(&rf.inputs, "inputs", "", "an .npz archive of inputs, by name")
		fs.Var(rf.input, "input", "one input from an .npy file: NAME=@FILE.npy (repeatable)")
		fs.StringVar(&rf.params, "params", "", "an .npz archive of params (weights), by name")
		fs.StringVar(&rf.fill, "fill", "", "fill tensors not supplied: zeros, ones or random")
		fs.Uint64Var(&rf.seed, "seed", 0, "the seed of --fill random")
		fs.StringVar(&rf.outputs, "outputs", "", "write the outputs to this .npz archive")
		fs.StringVar(&rf.saveTo, "save-feeds", "", "write every input and param, as bound, to `DIR`/NAME.npy (what the generated runner's --inputs and --params read)")
		fs.StringVar(&rf.expected, "expected", "", "compare the outputs with this .npz archive")
		fs.Float64Var(&rf.rtol, "rtol", 1e-4, "relative tolerance of --expected")
		fs.Float64Var(&rf.atol, "atol", 1e-5, "absolute tolerance of --expected")
		fs.BoolVar(&rf.json, "json", false, "print a JSON summary on standard output")
		fs.IntVar(&rf.show, "show", 6, "how many leading values of each output to print")
		fs.DurationVar(&rf.maxTime, "max-time", time.Minute, "refuse a run estimated to take longer than this (0: no limit)")
		pos, code, ok := e.parse(c, fs, splitOptLevel(args))
		if !ok {
			return code
		}
		if err := rf.validate(); err != nil {
			return e.usageError(c, "%v", err)
		}
		if rf.device != "ref" && rf.device != "sim" {
			return e.usageError(c, "unknown device %q (want ref or sim)", rf.device)
		}
		if _, err := rf.options(""); err != nil {
			return e.usageError(c, "%v", err)
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
		if len(pos) != 1 {
			return e.usageError(c, "want one FILE, got %d arguments", len(pos))
		}
		prog, code := e.compile(&rf.compileFlags, pos[0])
		if prog == nil {
			return code
		}
		if err := checkWork(prog, &rf); err != nil {
			fmt.Fprintf(e.stderr, "tec run: %v\n", err)
			return exitUser
		}
		return e.runProgram(prog, &rf, fill)
	}
	return c
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

func (e *env) runProgram(prog *te.Program, rf *runFlags, fill *numeric.Fill) int {
	feeds, filled, err := bindFeeds(prog, rf, fill, e.stderr)
	if err != nil {
		fmt.Fprintf(e.stderr, "tec run: %v\n", err)
		return exitUser
	}
	if rf.saveTo != "" {
		if err := saveFeeds(rf.saveTo, feeds); err != nil {
			fmt.Fprintf(e.stderr, "tec run: --save-feeds: %v\n", err)
			return exitUser
		}
	}
	var expected map[string]*te.Array
	if rf.expected != "" {
		specs := make(map[string]tensorio.Spec, len(prog.Outputs))
		for _, t := range prog.Outputs {
			specs[t.Name] = tensorio.Spec{DType: t.DType, Shape: t.Shape}
		}
		if expected, _, err = tensorio.ReadNPZAs(rf.expected, specs); err != nil {
			fmt.Fprintf(e.stderr, "tec run: %v\n", err)
			return exitUser
		}
	}
	start := time.Now()
	outs, err := evaluate(prog, feeds, rf, e.stderr)
	elapsed := time.Since(start)
	if err != nil {
		fmt.Fprintf(e.stderr, "tec run: evaluating model %s on %s: %v\n", prog.Name, rf.device, err)
		return exitUser
	}
	if rf.outputs != "" {
		if err := tensorio.WriteNPZ(rf.outputs, outs); err != nil {
			fmt.Fprintf(e.stderr, "tec run: %v\n", err)
			return exitUser
		}
	}
	sum := runSummary{Model: prog.Name, Device: rf.device, TimeMS: jsonFloat(elapsed.Microseconds()) / 1000, Filled: filled}
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
			fmt.Fprintf(e.stderr, "tec run: %s: %v\n", rf.expected, err)
			return exitUser
		}
		sum.Compare = cs
		if !cs.OK {
			status = exitUser
		}
	}
	if rf.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			fmt.Fprintf(e.stderr, "tec run: %v\n", err)
			return exitUser
		}
		return status
	}
	printRun(e.stdout, &sum, outs, rf.show, rf.fill, rf.seed)
	return status
}

// The rates at which the devices get through te.Program.Work, measured on
// the 2-core machine the project is developed on (issue 17): a reduction
// with element-wise work around it, and a 1024³ matmul for BLAS.
const (
	refScalarRate      = 4e7   // operations per second, the reference's closures
	refContractionRate = 4e9   // operations per second, contractions handed to BLAS
	simRaceRate        = 3e6   // operations per second, the simulator with --race
	simRate            = 1.2e7 // operations per second, the simulator without
)

// estimateRun returns the estimated seconds that running prog on rf's
// device takes.
func estimateRun(w te.Work, rf *runFlags) float64 {
	switch {
	case rf.device == "ref":
		return w.Scalar/refScalarRate + w.Contraction/refContractionRate
	case rf.race:
		return w.Total() / simRaceRate
	}
	return w.Total() / simRate
}

// checkWork refuses a run estimated to take longer than --max-time.
func checkWork(prog *te.Program, rf *runFlags) error {
	w := prog.Work()
	secs := estimateRun(w, rf)
	if rf.maxTime == 0 || secs <= rf.maxTime.Seconds() {
		return nil
	}
	return fmt.Errorf("model %s takes about %.2g operations, some %s on %s; refusing a run estimated over %v\n"+
		"  hint: use smaller sizes (-D NAME=VALUE), or --max-time 0 to run it anyway", prog.Name, w.Total(), formatSeconds(secs), rf.device, rf.maxTime)
}

// formatSeconds formats an estimate of seconds in the unit that suits it.
func formatSeconds(s float64) string {
	switch {
	case s < 120:
		return fmt.Sprintf("%.0f seconds", s)
	case s < 2*3600:
		return fmt.Sprintf("%.0f minutes", s/60)
	case s < 2*86400:
		return fmt.Sprintf("%.0f hours", s/3600)
	case s < 2*365*86400:
		return fmt.Sprintf("%.0f days", s/86400)
	}
	return fmt.Sprintf("%.2g years", s/(365*86400))
}

// errRaces reports that the simulator found data races or uninitialised
// reads, which evaluate has printed.
var errRaces = errors.New("data races or uninitialised reads (see above)")

// evaluate runs prog on rf.device and returns its outputs by name.
func evaluate(prog *te.Program, feeds map[string]*te.Array, rf *runFlags, warn io.Writer) (map[string]*te.Array, error) {
	if rf.device == "ref" {
		return te.Evaluate(prog, feeds, te.EvalOptions{})
	}
	opts, err := rf.options("")
	if err != nil {
		return nil, err
	}
	res, err := pipeline.Build(prog, opts)
	if err != nil {
		return nil, err
	}
	r, err := sim.Run(res.Module, feeds, sim.Options{Race: rf.race})
	if err != nil {
		return nil, err
	}
	if r.RaceCount > 0 {
		for _, race := range r.Races {
			fmt.Fprintf(warn, "tec run: %s\n", race)
		}
		return nil, fmt.Errorf("%d %w", r.RaceCount, errRaces)
	}
	outs := map[string]*te.Array{}
	for i, t := range prog.Outputs {
		outs[t.Name] = r.Outputs[res.Module.Outputs[i].Name]
	}
	return outs, nil
}

// bindFeeds assembles the arrays of every placeholder of prog from the files
// named by the flags, filling the rest. It returns the names it filled.
func bindFeeds(prog *te.Program, rf *runFlags, fill *numeric.Fill, warn io.Writer) (map[string]*te.Array, []string, error) {
	placeholders := prog.Placeholders()
	specs := make(map[string]tensorio.Spec, len(placeholders))
	for _, t := range placeholders {
		specs[t.Name] = tensorio.Spec{DType: t.DType, Shape: t.Shape}
	}
	given := map[string]*te.Array{}
	origin := map[string]string{}
	give := func(name string, a *te.Array, file string) error {
		if prev, dup := origin[name]; dup {
			return fmt.Errorf("%s %q is given twice, by %s and by %s", specKind(prog, name), name, prev, file)
		}
		given[name], origin[name] = a, file
		return nil
	}
	var extra []string
	for _, file := range []string{rf.inputs, rf.params} {
		if file == "" {
			continue
		}
		arrays, others, err := tensorio.ReadNPZAs(file, specs)
		if err != nil {
			return nil, nil, err
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
	names := make([]string, 0, len(rf.input))
	for name := range rf.input {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		file := rf.input[name]
		spec, ok := specs[name]
		if !ok {
			extra = append(extra, name)
			origin[name] = file
			continue
		}
		a, err := tensorio.ReadNPYFile(file, &spec)
		if err != nil {
			return nil, nil, err
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
	for _, name := range extra {
		msg := fmt.Sprintf("tec run: warning: %s holds %q, which is no input or param of model %s", origin[name], name, prog.Name)
		if s := diag.Suggest(name, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		fmt.Fprintln(warn, msg)
	}

	feeds := map[string]*te.Array{}
	var filled, missing []string
	for _, t := range placeholders {
		a, ok := given[t.Name]
		if !ok {
			if fill == nil {
				missing = append(missing, t.Name)
				continue
			}
			feeds[t.Name] = numeric.NewFilled(t, *fill, rf.seed)
			filled = append(filled, t.Name)
			continue
		}
		conv, err := conform(a, t)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %s %q: %w", origin[t.Name], t.Kind, t.Name, err)
		}
		feeds[t.Name] = conv
	}
	if len(missing) > 0 {
		return nil, nil, fmt.Errorf("no data for %s %s of model %s\n  hint: pass --inputs/--params/--input, or --fill zeros|ones|random",
			plural(len(missing), "tensor", "tensors"), strings.Join(missing, ", "), prog.Name)
	}
	return feeds, filled, nil
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
		return nil, fmt.Errorf("shape %v, want %v", a.Shape, t.Shape)
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
			return nil, fmt.Errorf("no array %q for output %q", t.Name, t.Name)
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
