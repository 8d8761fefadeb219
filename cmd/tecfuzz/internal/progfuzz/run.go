package progfuzz

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"tec/analysis"
	"tec/backend/kir"
	"tec/backend/sim"
	"tec/driver"
	"tec/gpu"
	"tec/internal/numeric"
	"tec/lang"
	"tec/lang/syntax"
	"tec/partition"
	"tec/pipeline"
	"tec/precision"
	"tec/te"
)

// Config is one way of compiling and running a program.
type Config struct {
	Level         int
	GPUName       string // a built-in name, or "rand-..." for a generated one
	GPU           gpu.Model
	Deterministic bool
	// Counters is where the fused kernels (-O3 and up) wait on per-tile
	// counters instead of grid syncs; the zero value decides by cost.
	Counters partition.CounterMode
	// Precision is the program's --precision, which Run sets from its
	// "# precision" line.
	Precision precision.Mode
}

// String describes the configuration as the command line says it, e.g.
// "-O3 a100 det".
func (c Config) String() string {
	s := fmt.Sprintf("-O%d %s", c.Level, c.GPUName)
	if c.Deterministic {
		s += " det"
	}
	if c.Counters == partition.CountersWherever {
		s += " --counters everywhere"
	}
	if c.Precision != precision.F32 {
		s += " --precision " + c.Precision.String()
	}
	return s
}

// Failure kinds.
const (
	KindCheck    = "check"     // the generated program does not check: a generator bug
	KindFmt      = "fmt"       // tec fmt is not idempotent, or changes the program
	KindRefPanic = "ref-panic" // the reference evaluator panicked
	KindRef      = "ref-error" // the reference evaluator failed
	KindBuild    = "build"     // driver.Compile (the pipeline) failed (or panicked)
	KindLaunch   = "launch"    // a kernel exceeds the GPU's block limits
	KindEmit     = "emit"      // the CUDA or LLVM emitter failed (or panicked)
	KindSim      = "sim"       // the simulator failed (or panicked)
	KindRace     = "race"      // the simulator found a race
	KindMismatch = "mismatch"  // an output differs from the reference beyond its tolerance
	KindExplain  = "explain"   // tec explain --plan's analysis report failed (or panicked)
	// KindExpect: a program with a planted out-of-range index ("# expect
	// outside") ran without the "is outside" error naming it.
	KindExpect = "expect"
)

// Failure is one failed check of a program at one configuration.
type Failure struct {
	Kind   string
	Config *Config // nil for failures before the pipeline (check, fmt, ref)
	Msg    string
	// Known names the known defect (F1...F9 of issue 17) the failure is
	// an instance of, or is empty.
	Known string
	// Stack is the stack of a panic.
	Stack string
	// OnChipCause and ResidentCause say that the failure (at -O4) goes
	// away when no result, or no weight, is kept on chip.
	OnChipCause, ResidentCause bool
	// HalfFullCause says that the failure (a mismatch from -O2) goes away
	// when the program's f16 and bf16 full() constants are f32 ones.
	HalfFullCause bool
}

// String describes the failure: kind, configuration and message.
func (f Failure) String() string {
	cfg := ""
	if f.Config != nil {
		cfg = " at " + f.Config.String()
	}
	return fmt.Sprintf("%s%s: %s", f.Kind, cfg, f.Msg)
}

var digits = regexp.MustCompile(`[0-9]+`)

// names matches the names a failure message quotes: those after "kernel",
// "stage", "named", "output", "buffer" and "parameter", and any name with
// a digit.
var names = regexp.MustCompile(`\b(kernel|stage|named|output|buffer|parameter) [A-Za-z_][A-Za-z0-9_.-]*|\b[a-z][a-z0-9_.]*[0-9]\b|\b[a-z]\b`)

// Class is the failure's class, for counting and for the reducer: its
// kind, level and GPU, and the message's first words with numbers and
// tensor names (which the reducer changes) blanked out.
func (f Failure) Class() string {
	cfg := "-"
	if c := f.Config; c != nil {
		cfg = fmt.Sprintf("-O%d %s", c.Level, gpuClass(c))
		if c.Deterministic {
			cfg += " det"
		}
		if c.Counters == partition.CountersWherever {
			cfg += " counters"
		}
		if c.Precision != precision.F32 {
			cfg += " " + c.Precision.String()
		}
	}
	return fmt.Sprintf("%s|%s|%s", f.Kind, cfg, f.message())
}

// Root is the failure's class without the configuration: the failures of
// one defect at several levels and GPUs usually share it.
func (f Failure) Root() string {
	return f.Kind + "|" + f.message()
}

// message returns the failure message's first words with numbers and
// tensor names blanked out.
func (f Failure) message() string {
	msg, _, _ := strings.Cut(f.Msg, "\n")
	if i := strings.IndexAny(msg, "[=("); i >= 0 {
		msg = msg[:i]
	}
	if f.Kind == KindMismatch {
		msg = ""
	}
	msg = names.ReplaceAllStringFunc(msg, func(s string) string {
		if w, _, ok := strings.Cut(s, " "); ok {
			return w + " _"
		}
		return "_"
	})
	msg = digits.ReplaceAllString(msg, "#")
	if len(msg) > 90 {
		msg = msg[:90]
	}
	return strings.TrimSpace(msg)
}

// Options say what Run checks.
type Options struct {
	Configs []Config
	// Emit runs both emitters on every built module.
	Emit bool
	// Fmt checks tec fmt's idempotence and that it keeps the program.
	Fmt bool
}

// resident lets every all-resident kernel launch the grid its plan chose.
const resident = 1 << 20

// Run checks the program src against the reference at every configuration
// and returns its failures, each marked with the known defect it is.
func Run(src []byte, opts Options) []Failure {
	fs := run(src, opts)
	for i := range fs {
		fs[i].Known = knownDefect(src, fs[i])
	}
	return fs
}

func run(src []byte, opts Options) []Failure {
	var fails []Failure
	p, ds := lang.Check("prog.te", src, lang.Config{})
	if ds.HasErrors() {
		return []Failure{{Kind: KindCheck, Msg: firstLine(ds.Error())}}
	}
	mode := programPrecision(src)
	ref := reference(src, p, mode)
	if outside := expectedOutside(src); outside != "" {
		return runExpectingOutside(ref, outside, opts)
	}
	if ref.err != nil {
		kind := KindRef
		if ref.stack != "" {
			kind = KindRefPanic
		}
		return []Failure{{Kind: kind, Msg: ref.err.Error(), Stack: ref.stack}}
	}
	if opts.Fmt {
		if f := checkFmt(src, mode, ref.want); f != nil {
			fails = append(fails, *f)
		}
	}
	if c := explainConfig(opts.Configs); c != nil {
		if msg, stack := explainPlan(src, c); msg != "" {
			fails = append(fails, Failure{Kind: KindExplain, Config: c, Msg: msg, Stack: stack})
		}
	}
	tols := Tolerances(src)
	if mode != precision.F32 {
		if f := ref.measureAmplification(tols); f != nil {
			return append(fails, *f)
		}
	}
	for i := range opts.Configs {
		c := opts.Configs[i]
		c.Precision = mode
		if pipeline.CheckTarget(ref.p, mode, c.GPU) != nil {
			continue // refused, as TestRefusedPrecision checks
		}
		for _, f := range runConfig(ref, tols, &c, opts.Emit) {
			if f.Config.Level == pipeline.MaxLevel && (f.Kind == KindMismatch || f.Kind == KindRace) {
				f.OnChipCause = !failsWith(ref, tols, &c, f.Kind, pipeline.Options{OnChipBytes: 1})
				f.ResidentCause = !failsWith(ref, tols, &c, f.Kind, pipeline.Options{ResidentBytes: 1})
			}
			if f.Kind == KindMismatch && f.Config.Level >= 2 && halfFull.Match(src) {
				f.HalfFullCause = !failsAsF32(src, &c)
			}
			fails = append(fails, f)
		}
	}
	return fails
}

// refResult is a program's reference: the program p, the program q that
// the precision pass makes of it (p itself at f32), the feeds of p and
// those conformed to q's placeholders (numeric.ConformFeeds), and q's
// float64 reference outputs, or the error (and a panic's stack) of its
// evaluation.
type refResult struct {
	p, q    *te.Program
	mode    precision.Mode
	in, qin map[string]*te.Array
	want    map[string]*te.Array
	stack   string
	err     error
	// amp and exact are set at a precision other than f32 (see
	// halfCompare): the f32 program's measured amplification of one
	// rounding error, and its float64 reference outputs.
	amp   float64
	exact map[string]*te.Array
}

// reference evaluates the program p of src at precision mode, fed as Feeds
// fills it and as src's "# feed" lines say.
func reference(src []byte, p *te.Program, mode precision.Mode) *refResult {
	r := &refResult{p: p, q: precision.Apply(p, mode), mode: mode, in: Feeds(p)}
	applyFeeds(src, r.in)
	r.qin = numeric.ConformFeeds(r.in, r.q)
	r.want, r.stack, r.err = evaluate(r.q, r.qin)
	return r
}

// runExpectingOutside checks a program fed a planted index outside its
// dimension: the reference and every configuration's simulation must stop
// with the "is outside" error that names the input, never compute values
// or panic.
func runExpectingOutside(ref *refResult, input string, opts Options) []Failure {
	expected := func(err error) bool {
		return err != nil && strings.Contains(err.Error(), "is outside") && strings.Contains(err.Error(), input+"[")
	}
	switch {
	case ref.stack != "":
		return []Failure{{Kind: KindRefPanic, Msg: ref.err.Error(), Stack: ref.stack}}
	case !expected(ref.err):
		return []Failure{{Kind: KindExpect, Msg: fmt.Sprintf("reference: %v, want an index of %s outside its dimension", ref.err, input)}}
	}
	var fails []Failure
	for i := range opts.Configs {
		c := opts.Configs[i]
		c.Precision = ref.mode
		if pipeline.CheckTarget(ref.p, ref.mode, c.GPU) != nil {
			continue
		}
		f := func(kind, msg, stack string) Failure {
			return Failure{Kind: kind, Config: &c, Msg: msg, Stack: stack}
		}
		res, stack, err := build(ref.p, pipeline.Options{Level: c.Level, GPU: c.GPU, Deterministic: c.Deterministic, Counters: c.Counters, Precision: c.Precision})
		if err != nil {
			fails = append(fails, f(KindBuild, err.Error(), stack))
			continue
		}
		_, stack, err = simulate(res.Module, ref.qin)
		switch {
		case stack != "":
			fails = append(fails, f(KindSim, err.Error(), stack))
		case !expected(err):
			fails = append(fails, f(KindExpect, fmt.Sprintf("simulator: %v, want an index of %s outside its dimension", err, input), ""))
		}
	}
	return fails
}

var halfFull = regexp.MustCompile(`full\((f16|bf16)\[`)

// failsAsF32 reports whether src, with its f16 and bf16 full() constants
// made f32, still has a mismatch at c.
func failsAsF32(src []byte, c *Config) bool {
	src = halfFull.ReplaceAll(src, []byte("full(f32["))
	p, ds := lang.Check("prog.te", src, lang.Config{})
	if ds.HasErrors() {
		return true
	}
	ref := reference(src, p, c.Precision)
	if ref.err != nil {
		return true
	}
	tols := Tolerances(src)
	if c.Precision != precision.F32 && ref.measureAmplification(tols) != nil {
		return true
	}
	return hasKind(runConfig(ref, tols, c, false), KindMismatch)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Feeds fills the program's inputs and params as "tec run --fill random
// --seed 0" does (uniform in
// [-1, 1), params of rank 2 or more scaled by 1/√fan-in, rounded to their
// dtype; see numeric.NewFilled), the ids of gathers inside their tables
// (numeric.GatherRanges).
func Feeds(p *te.Program) map[string]*te.Array {
	in := map[string]*te.Array{}
	ranges := numeric.GatherRanges(p)
	for _, t := range p.Placeholders() {
		if r, ok := ranges[t]; ok {
			in[t.Name] = numeric.NewFilledIndex(t, numeric.Random, 0, r)
			continue
		}
		in[t.Name] = numeric.NewFilled(t, numeric.Random, 0)
	}
	return in
}

func evaluate(p *te.Program, in map[string]*te.Array) (out map[string]*te.Array, stack string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, stack, err = nil, string(debug.Stack()), fmt.Errorf("panic: %v", r)
		}
	}()
	out, err = te.Evaluate(p, in, te.EvalOptions{Workers: 1})
	return out, "", err
}

// checkFmt checks that formatting is idempotent and that the formatted
// program checks and evaluates (at precision mode) to the same values, bit
// for bit.
func checkFmt(src []byte, mode precision.Mode, want map[string]*te.Array) *Failure {
	once, err := format(src)
	if err != nil {
		return &Failure{Kind: KindFmt, Msg: "format: " + err.Error()}
	}
	twice, err := format(once)
	if err != nil {
		return &Failure{Kind: KindFmt, Msg: "format of the formatted program: " + err.Error()}
	}
	if !bytes.Equal(once, twice) {
		return &Failure{Kind: KindFmt, Msg: "format is not idempotent"}
	}
	p, ds := lang.Check("prog.te", once, lang.Config{})
	if ds.HasErrors() {
		return &Failure{Kind: KindFmt, Msg: "the formatted program does not check: " + firstLine(ds.Error())}
	}
	ref := reference(once, p, mode)
	if ref.err != nil {
		return &Failure{Kind: KindFmt, Msg: "the formatted program does not evaluate: " + ref.err.Error()}
	}
	for name, w := range want {
		mm, err := numeric.Compare(ref.want[name], w, numeric.Tolerance{})
		if err != nil || mm != nil {
			return &Failure{Kind: KindFmt, Msg: fmt.Sprintf("the formatted program's output %s differs: %v %v", name, mm, err)}
		}
	}
	return nil
}

func format(src []byte) ([]byte, error) {
	f, err := syntax.Parse("prog.te", src)
	if err != nil {
		return nil, err
	}
	return syntax.Format(f, src)
}

var tolLine = regexp.MustCompile(`(?m)^# tol (\S+) (\S+)$`)

// Tolerances reads the "# tol NAME ATOL" lines the generator writes.
func Tolerances(src []byte) map[string]float64 {
	tols := map[string]float64{}
	for _, m := range tolLine.FindAllSubmatch(src, -1) {
		if v, err := strconv.ParseFloat(string(m[2]), 64); err == nil {
			tols[string(m[1])] = v
		}
	}
	return tols
}

// tolerance returns the comparison of an output: the generator's absolute
// tolerance and a relative one of 4 units of f32 roundoff (the final
// rounding and the reorderings of a tree reduction's last steps); outputs
// without one (a program written by hand) get the tolerance of the
// end-to-end tests.
func tolerance(tols map[string]float64, name string) numeric.Tolerance {
	if a, ok := tols[name]; ok {
		return numeric.Tolerance{Atol: a, Rtol: 4 * u}
	}
	return numeric.Tolerance{Rtol: 1e-3, Atol: 1e-4}
}

// failsWith reports whether the program fails with a failure of kind at
// c with extra's on-chip limits.
func failsWith(ref *refResult, tols map[string]float64, c *Config, kind string, extra pipeline.Options) bool {
	return hasKind(runWith(ref, tols, c, false, extra), kind)
}

func hasKind(fs []Failure, kind string) bool {
	for _, f := range fs {
		if f.Kind == kind {
			return true
		}
	}
	return false
}

// explainConfig is the configuration at which a program's explain --plan
// is checked: the last of the highest level (the plan that transforms the
// program most), or nil for none.
func explainConfig(cs []Config) *Config {
	var best *Config
	for i := range cs {
		if best == nil || cs[i].Level >= best.Level {
			best = &cs[i]
		}
	}
	return best
}

// explainPlan does what tec explain --plan does with the program src at
// c: the global analysis of the program at c's precision, a build of the
// analysed program, then the analysis's report; it returns the error or
// panic, if any (issue 23: params declared in a loop panicked in the
// report at -O2 and up).
func explainPlan(src []byte, c *Config) (msg, stack string) {
	defer func() {
		if r := recover(); r != nil {
			msg, stack = fmt.Sprintf("panic: %v", r), string(debug.Stack())
		}
	}()
	p, ds := lang.Check("prog.te", src, lang.Config{})
	if ds.HasErrors() {
		return firstLine(ds.Error()), ""
	}
	p = precision.Apply(p, programPrecision(src))
	a, err := analysis.Analyze(p, analysis.Options{})
	if err != nil {
		return err.Error(), ""
	}
	opts := pipeline.Options{Level: c.Level, GPU: c.GPU, Deterministic: c.Deterministic, Counters: c.Counters}
	if _, err := driver.Compile(a.Program, opts); err != nil {
		return err.Error(), ""
	}
	if r := a.Report(); r == nil {
		return "no report", ""
	}
	return "", ""
}

func runConfig(ref *refResult, tols map[string]float64, c *Config, emit bool) []Failure {
	return runWith(ref, tols, c, emit, pipeline.Options{})
}

// runWith builds the program at c (with extra's on-chip limits), checks
// the launches against the GPU, emits, simulates with race detection and
// compares every output, and every input the program updates in place,
// with the reference.
func runWith(ref *refResult, tols map[string]float64, c *Config, emit bool, extra pipeline.Options) []Failure {
	f := func(kind, msg, stack string) Failure {
		return Failure{Kind: kind, Config: c, Msg: msg, Stack: stack}
	}
	opts := pipeline.Options{Level: c.Level, GPU: c.GPU, Deterministic: c.Deterministic, Counters: c.Counters, Precision: c.Precision,
		OnChipBytes: extra.OnChipBytes, ResidentBytes: extra.ResidentBytes}
	res, stack, err := build(ref.p, opts)
	if err != nil {
		return []Failure{f(KindBuild, err.Error(), stack)}
	}
	var fails []Failure
	if msg := checkLaunch(res.Module, c.GPU); msg != "" {
		fails = append(fails, f(KindLaunch, msg, ""))
	}
	if emit {
		if msg, stack := emitBoth(res, c.GPU); msg != "" {
			fails = append(fails, f(KindEmit, msg, stack))
		}
	}
	out, stack, err := simulate(res.Module, ref.qin)
	if err != nil {
		return append(fails, f(KindSim, err.Error(), stack))
	}
	if out.RaceCount > 0 {
		fails = append(fails, f(KindRace, out.Races[0].String(), ""))
	}
	for _, name := range compared(ref.q) {
		got := out.Outputs[name]
		if got == nil {
			fails = append(fails, f(KindSim, "no output "+name, ""))
			continue
		}
		if ref.mode != precision.F32 {
			if msg := ref.halfCompare(name, got, tols); msg != "" {
				fails = append(fails, f(KindMismatch, msg, ""))
			}
			continue
		}
		mm, err := numeric.Compare(got, ref.want[name], tolerance(tols, name))
		if err != nil {
			fails = append(fails, f(KindMismatch, fmt.Sprintf("output %s: %v", name, err), ""))
		} else if mm != nil {
			fails = append(fails, f(KindMismatch, fmt.Sprintf("output %s: %s", name, mm), ""))
		}
	}
	return fails
}

// compared returns the names of the arrays a run is compared on: p's
// outputs, then the inputs it updates in place (outputs under their own
// names).
func compared(p *te.Program) []string {
	var names []string
	for _, o := range p.Outputs {
		names = append(names, o.Name)
	}
	for _, u := range p.Updates() {
		if n := u.Update.Target.Name; !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

func build(p *te.Program, opts pipeline.Options) (res *driver.Compiled, stack string, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, stack, err = nil, string(debug.Stack()), fmt.Errorf("panic: %v", r)
		}
	}()
	res, err = driver.Compile(p, opts)
	return res, "", err
}

func simulate(m *kir.Module, in map[string]*te.Array) (res *sim.Result, stack string, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, stack, err = nil, string(debug.Stack()), fmt.Errorf("panic: %v", r)
		}
	}()
	// The gathers run as on a device (clamped, reported in the error
	// record), the path the emitted code takes; ids in range leave the
	// record clear.
	res, err = sim.Run(m, in, sim.Options{Race: true, ResidentBlocks: resident, DeviceGathers: true})
	if err == nil && res.GatherError != nil {
		return nil, "", fmt.Errorf("the device's error record: %w", res.GatherError)
	}
	return res, "", err
}

// checkLaunch reports the first kernel whose block exceeds the GPU's
// threads or shared memory per block.
func checkLaunch(m *kir.Module, g gpu.Model) string {
	for _, k := range m.Kernels {
		if k.Block > g.MaxThreadsPerBlock {
			return fmt.Sprintf("kernel %s: %d threads per block > %d", k.Name, k.Block, g.MaxThreadsPerBlock)
		}
		if g.CheckShared(k.Name, k.SharedBytes()) != nil {
			return fmt.Sprintf("kernel %s: %d B shared memory per block > %d", k.Name, k.SharedBytes(), g.SharedPerBlock)
		}
	}
	return ""
}

// emitBoth runs the CUDA and the LLVM emitter for the GPU's architecture.
func emitBoth(c *driver.Compiled, g gpu.Model) (msg, stack string) {
	defer func() {
		if r := recover(); r != nil {
			msg, stack = fmt.Sprintf("panic: %v", r), string(debug.Stack())
		}
	}()
	m, err := g.WithArch("") // the GPU's own architecture
	if err != nil {
		return err.Error(), ""
	}
	ctx := context.Background()
	if _, err := driver.Emit(ctx, c, m.Arch, driver.Outputs{CUDA: true}); err != nil {
		return "cuda: " + err.Error(), ""
	}
	if _, err := driver.Emit(ctx, c, m.Arch, driver.Outputs{LLVM: true}); err != nil {
		return "llvm: " + err.Error(), ""
	}
	return "", ""
}

// RandomGPU returns a valid GPU description (gpu.Model.Validate) with
// small, odd limits: a thread limit that may not be a power of two or a
// multiple of the warp, little shared memory (down to the 16 KiB that
// Validate allows), few SMs, few blocks per SM.
func RandomGPU(r *rand.Rand) (string, gpu.Model) {
	threads := []int{32, 33, 64, 96, 128, 160, 192, 256, 512, 1024}[r.IntN(10)]
	shared := []int{16 << 10, 20 << 10, 24 << 10, 32 << 10, 48 << 10}[r.IntN(5)]
	g := gpu.Model{
		CC: "8.0", SMs: 1 + r.IntN(8),
		SharedPerBlock: shared, SharedPerSM: shared * (1 + r.IntN(2)),
		RegsPerSM: 64 << 10, MaxRegsPerThread: 255,
		MaxThreadsPerBlock: threads, MaxThreadsPerSM: threads * (1 + r.IntN(4)), MaxBlocksPerSM: 1 + r.IntN(4),
		L2Bytes: 1 << 20, DRAMBandwidth: 100e9, FP32Peak: 1e12, FP16Peak: 4e12,
		LaunchCost: 2e-6, GridSyncCost: 1e-6,
	}
	g.Name = fmt.Sprintf("rand-%dt-%dsm-%dk-%db", threads, g.SMs, shared>>10, g.MaxBlocksPerSM)
	return g.Name, g
}

// SlowGPU returns the A100 with 8 SMs, slow arithmetic (1 GFLOP/s, tensor
// cores 16 times faster) and almost free launches and grid syncs: costs
// that change the plans the cost model picks, never what they compute,
// under which even the fuzzer's small tensor-core contractions split K
// over blocks.
func SlowGPU() gpu.Model {
	g, _ := gpu.Builtin("a100")
	g.Name = "a100-slow"
	g.SMs = 8
	g.FP32Peak, g.TF32Peak, g.FP16Peak = 1e9, 8e9, 16e9
	g.GridSyncCost, g.LaunchCost = 1e-9, 1e-9
	return g
}

// Configs returns the configurations a program of seed is checked at:
// -O0 to -O2 (which depend on the target only through its block limits)
// on the A100, the small GPU (256 threads per block) and a random GPU; -O3
// and -O4 on those and the H100, each with and without Deterministic;
// with counters wherever they are sound (tec build --counters everywhere)
// -O3 on the random GPU and -O4 on the A100; -O3 and -O4 on SlowGPU
// (split K); and -O4 on the T4 (sm_75): every level on at least three
// GPU descriptions.
func Configs(seed uint64) []Config {
	rname, rgpu := RandomGPU(rand.New(rand.NewPCG(seed, 0x69b)))
	type named struct {
		name string
		gpu  gpu.Model
	}
	gpus := []named{{rname, rgpu}}
	for _, n := range []string{"a100", "h100", "small"} {
		g, _ := gpu.Builtin(n)
		gpus = append(gpus, named{n, g})
	}
	var cs []Config
	for level := 0; level <= pipeline.MaxLevel; level++ {
		for _, g := range gpus {
			if level < 3 && g.name == "h100" {
				continue
			}
			for _, det := range []bool{false, true} {
				if det && level < 3 {
					continue
				}
				cs = append(cs, Config{Level: level, GPUName: g.name, GPU: g.gpu, Deterministic: det})
			}
			if level == 3 && g.name == rname || level == 4 && g.name == "a100" {
				cs = append(cs, Config{Level: level, GPUName: g.name, GPU: g.gpu, Counters: partition.CountersWherever})
			}
		}
	}
	// sm_75: two m16n8k8 MMAs a k step, operands staged without cp.async
	// (programs without bf16 or tf32, which pipeline.CheckTarget refuses).
	t4, _ := gpu.Builtin("t4")
	cs = append(cs, Config{Level: pipeline.MaxLevel, GPUName: "t4", GPU: t4})
	for level := 3; level <= pipeline.MaxLevel; level++ {
		cs = append(cs, Config{Level: level, GPUName: "a100-slow", GPU: SlowGPU()})
	}
	return cs
}

// gpuClass names a configuration's GPU for counting: a built-in's name, or
// "rand" for a generated one, with "odd" added when its thread limit is not
// a power of two.
func gpuClass(c *Config) string {
	if !strings.HasPrefix(c.GPUName, "rand") {
		return c.GPUName
	}
	if !isPow2(c.GPU.MaxThreadsPerBlock) {
		return "rand-odd"
	}
	return "rand"
}

// isPow2 reports whether n is a power of two.
func isPow2(n int) bool { return n > 0 && bits.OnesCount(uint(n)) == 1 }

// ampGPU is the GPU the amplification of a program at a precision is
// measured on, at -O0.
const ampGPU = "a100"

// measureAmplification sets ref.amp and ref.exact for a program at a
// precision other than f32: the float64 reference of the f32 program p,
// and the largest relError (see halfCompare) of p simulated in f32 at -O0
// against it, in units of f32's roundoff u: how much the program amplifies
// one rounding error. It returns a failure where p itself is not right in
// f32 (the f32 configurations of other programs find those; here it would
// make the measure meaningless).
func (ref *refResult) measureAmplification(tols map[string]float64) *Failure {
	exact, stack, err := evaluate(ref.p, ref.in)
	if err != nil {
		kind := KindRef
		if stack != "" {
			kind = KindRefPanic
		}
		return &Failure{Kind: kind, Msg: "the f32 program: " + err.Error(), Stack: stack}
	}
	g, _ := gpu.Builtin(ampGPU)
	c := &Config{Level: 0, GPUName: ampGPU, GPU: g}
	f32 := &refResult{p: ref.p, q: ref.p, in: ref.in, qin: ref.in, want: exact}
	if fs := runConfig(f32, tols, c, false); len(fs) > 0 {
		fs[0].Msg = "the f32 program: " + fs[0].Msg
		return &fs[0]
	}
	res, _, _ := build(ref.p, pipeline.Options{Level: 0, GPU: g})
	out, _, _ := simulate(res.Module, ref.in)
	ref.exact, ref.amp = exact, 1
	for _, name := range compared(ref.p) {
		ref.amp = max(ref.amp, numeric.RelError(out.Outputs[name], exact[name])/u)
	}
	return nil
}

// halfUnit is the relative size of one unit in the last place of the type
// a precision rounds to: 2^-11 for f16 and TF32 (10 fraction bits, round
// to nearest), 2^-8 for bf16.
func halfUnit(m precision.Mode) float64 {
	if m == precision.BF16 {
		return 0x1p-8
	}
	return 0x1p-11
}

// halfCompare compares an output of a program at a precision other than
// f32 with the reference of the program the precision pass made, as
// precision's TestExamples does, and returns the mismatch or "".
//
// Both round at the same points (half storage, TF32 operands), but the
// simulator computes in f32 and the reference in float64, so a value just
// beside a rounding boundary may round to the neighbouring value: one unit
// of the rounded type where the f32 value and the float64 one straddle the
// boundary, which the operations after it amplify as they amplify any
// rounding error. The generator's error bounds count f32 roundings and do
// not see the half roundings inside a statement (softmax's exponentials,
// an RNN's steps), so the amplification is measured instead: amp, the f32
// program's error against its float64 reference in units of u. The
// tolerance is eight amplified units of the half type, relative to the
// output's largest magnitude (relError), as in precision's TestExamples: a
// rounding point missing on one side differs by half a unit at every
// element, a half accumulator or a wrong tile by far more. An output also
// passes within the generator's f32 tolerance (exact outputs: copies,
// gathers, updated slots). An output whose reference at the precision
// overflows where the f32 reference does not is not compared: past the
// largest half value, whether an element overflows depends on the last bit
// of a sum.
func (ref *refResult) halfCompare(name string, got *te.Array, tols map[string]float64) string {
	want := ref.want[name]
	if mm, err := numeric.Compare(got, want, tolerance(tols, name)); err == nil && mm == nil {
		return ""
	} else if err != nil {
		return fmt.Sprintf("output %s: %v", name, err)
	}
	if overflows(want, ref.exact[name]) {
		return ""
	}
	tol := 8 * halfUnit(ref.mode) * ref.amp
	if e := numeric.RelError(got, want); !(e <= tol) {
		return fmt.Sprintf("output %s: relative error %.3g against the reference at %s, want <= %.3g (8 units of %s times the f32 amplification %.3g)",
			name, e, ref.mode, tol, ref.mode, ref.amp)
	}
	return ""
}

// overflows reports whether half holds an infinity or a NaN where exact,
// the f32 program's reference, holds a finite value.
func overflows(half, exact *te.Array) bool {
	if exact == nil {
		return false
	}
	for i, v := range half.Data {
		w := exact.Data[i]
		if (math.IsInf(v, 0) || math.IsNaN(v)) && !math.IsInf(w, 0) && !math.IsNaN(w) {
			return true
		}
	}
	return false
}
