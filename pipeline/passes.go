package pipeline

import (
	"fmt"

	"tec/backend/kir"
	"tec/backend/lower"
	"tec/gpu"
	"tec/partition"
	"tec/precision"
	"tec/te"
	"tec/transform"
)

// A pass is one step of Build: what it is called, when it runs, what it
// does, and the text of its result.
type pass struct {
	name string
	// when says in words under which options the pass runs; runs
	// decides it.
	when string
	runs func(Options) bool
	// doc says in a line what the pass does.
	doc string
	run func(*build) error
	// dump returns the text of the pass's result.
	dump func(*build) string
}

// passes returns the passes of Build, in the order they run. Build,
// Passes, PassesFor, Table and the package documentation all come from
// it.
func passes() []pass {
	return []pass{
		{
			name: "precision", when: "Precision other than f32",
			runs: func(o Options) bool { return o.Precision != precision.F32 },
			doc:  "half storage, or TF32 rounding of contraction operands (package precision)",
			run: func(b *build) error {
				b.prog = precision.Apply(b.prog, b.opts.Precision)
				return nil
			},
			dump: programText,
		},
		{
			name: "groups", when: "-O3 and up",
			runs: func(o Options) bool { return o.Level >= 3 },
			doc:  "grouped convolutions as a batched contraction of their groups (transform.GroupConvolutions)",
			run: func(b *build) (err error) {
				b.prog, b.groups, err = groupConvolutions(b.prog, b.opts)
				return err
			},
			dump: programText,
		},
		{
			name: "flash", when: "-O3 and up, or FlashChunks > 1",
			runs: func(o Options) bool { return o.FlashChunks > 1 || o.FlashChunks == 0 && o.Level >= 3 },
			doc:  "softmax-weighted reductions split across blocks (flash-decoding, transform.SplitSoftmax)",
			run: func(b *build) (err error) {
				b.prog, b.flash, err = splitSoftmax(b.prog, b.opts)
				return err
			},
			dump: programText,
		},
		{
			name: "pad", when: "-O3 and up",
			runs: func(o Options) bool { return o.Level >= 3 },
			doc:  "softmax axes of half scores padded to a multiple of 8 positions for 16-byte rows, if predicted faster (transform.PadSoftmax)",
			run: func(b *build) (err error) {
				b.prog, b.pads, err = padSoftmax(b.prog, b.opts)
				return err
			},
			dump: programText,
		},
		{
			name: "horizontal", when: "-O1 and up",
			runs: func(o Options) bool { return o.Level >= 1 },
			doc:  "independent TEs concatenated (transform.Horizontal)",
			run: func(b *build) (err error) {
				b.prog, err = transform.Horizontal(b.prog)
				return err
			},
			dump: programText,
		},
		{
			name: "vertical", when: "-O2 and up",
			runs: func(o Options) bool { return o.Level >= 2 },
			doc:  "one-relies-on-one chains inlined (transform.Vertical)",
			run: func(b *build) (err error) {
				b.prog, err = transform.Vertical(b.prog)
				return err
			},
			dump: programText,
		},
		{
			name: "recompute", when: "-O3 and up",
			runs: func(o Options) bool { return o.Level >= 3 },
			doc:  "cheap producers recomputed in their consumers' tiles, if predicted faster (transform.Recompute)",
			run: func(b *build) error {
				pl, err := plan(b.prog, b.opts.GPU, b.popts)
				if err != nil {
					return err
				}
				b.prog, b.plan, err = recompute(b.prog, pl, b.opts.GPU, b.popts)
				return err
			},
			dump: programText,
		},
		{
			name: "plan", when: "every level",
			runs: func(Options) bool { return true },
			doc:  "dependences analysed, the program partitioned into kernels (package partition)",
			run: func(b *build) (err error) {
				if b.plan == nil { // else the recompute pass planned it
					b.plan, err = plan(b.prog, b.opts.GPU, b.popts)
				}
				return err
			},
			dump: func(b *build) string { return b.plan.String() },
		},
		{
			name: "kir", when: "every level",
			runs: func(Options) bool { return true },
			doc:  "lowered to kernel IR: a kernel per TE, or grid-synced ones from -O3 (package lower)",
			run: func(b *build) (err error) {
				if b.opts.Level >= 3 {
					b.mod, err = lower.Fused(b.prog, b.plan, lower.FusedOptions{Deterministic: b.opts.Deterministic})
				} else {
					b.mod, err = lower.Unfused(b.prog, lower.Options{Plan: b.plan})
				}
				if err != nil {
					return err
				}
				b.mod.TempsInWorkspace = b.popts.TempsInWorkspace
				return nil
			},
			dump: func(b *build) string { return b.mod.String() },
		},
	}
}

// programText returns the text of the program that a pass made.
func programText(b *build) string { return b.prog.String() }

// build is the state of one Build between its passes.
type build struct {
	opts  Options
	popts partition.Options
	prog  *te.Program
	// plan is prog's partition once a pass has made it.
	plan *partition.Plan
	// mod is the kernel IR once the kir pass has made it.
	mod *kir.Module
	// flash are the flash pass's choices, groups the groups pass's, pads
	// the pad pass's.
	flash  []FlashChoice
	groups []GroupChoice
	pads   []PadChoice
	// checked holds the program and plan that verify has checked.
	checked struct {
		prog *te.Program
		plan *partition.Plan
	}
}

// runPasses runs, in order, the passes of which runs returns true for b's
// options and want, if not nil, for the pass's name; it verifies b after
// each, and hands its result to dump when not nil. It returns the names
// of the passes it ran.
func (b *build) runPasses(want func(name string) bool, dump func(pass, text string)) ([]string, error) {
	var ran []string
	for _, ps := range passes() {
		if !ps.runs(b.opts) || want != nil && !want(ps.name) {
			continue
		}
		if err := ps.run(b); err != nil {
			return ran, err
		}
		if err := b.verify(); err != nil {
			return ran, fmt.Errorf("pipeline: after the %s pass: %w", ps.name, err)
		}
		ran = append(ran, ps.name)
		if dump != nil {
			dump(ps.name, ps.dump(b))
		}
	}
	return ran, nil
}

// PassInfo describes a pass of Build, for tools and documentation.
type PassInfo struct {
	// Name is what Options.Dump and tec build --dump-after call it.
	Name string
	// When says in words under which options it runs.
	When string
	// Doc says in a line what it does.
	Doc string
}

// Table returns every pass that Build may run, in the order it runs them.
func Table() []PassInfo {
	var ps []PassInfo
	for _, p := range passes() {
		ps = append(ps, PassInfo{Name: p.name, When: p.when, Doc: p.doc})
	}
	return ps
}

// Passes returns the names of the passes that Build runs at level with
// the other options at their zero values, in order.
func Passes(level int) []string {
	return PassesFor(Options{Level: level})
}

// PassesFor returns the names of the passes that Build runs with opts, in
// order.
func PassesFor(opts Options) []string {
	var names []string
	for _, p := range passes() {
		if p.runs(opts) {
			names = append(names, p.name)
		}
	}
	return names
}

// CheckPrecision refuses a precision that g's architecture cannot run:
// bf16 and tf32 on sm_75, which has neither their conversions nor their
// tensor-core MMAs.
func CheckPrecision(m precision.Mode, g gpu.Model) error {
	if m == precision.BF16 && !g.Arch.BF16() || m == precision.TF32 && !g.Arch.TF32() {
		return fmt.Errorf("--precision %s: %s has no %s arithmetic or tensor cores, which need sm_80 or later; use --precision f16 (its tensor cores' type) or f32, or build for a newer GPU (%s)",
			m, archOf(g), m, newerGPUs)
	}
	return nil
}

// CheckTarget refuses a program, or a precision (CheckPrecision), that
// g's architecture cannot run: on sm_75, a bf16 tensor. Build calls it
// first.
func CheckTarget(p *te.Program, m precision.Mode, g gpu.Model) error {
	if err := CheckPrecision(m, g); err != nil || g.Arch.BF16() {
		return err
	}
	for _, t := range p.Tensors {
		if t.DType == te.BF16 {
			return fmt.Errorf("%s %s is bf16, which %s has no arithmetic for (sm_80 and later have); declare it f16 or f32, or build for a newer GPU (%s)",
				t.Kind, t.Name, archOf(g), newerGPUs)
		}
	}
	return nil
}

// newerGPUs are built-in GPUs of sm_80 and later, which CheckTarget's
// messages suggest.
const newerGPUs = "--gpu a10, l4, a100 or h100"

// archOf names g's architecture and g, for CheckTarget's messages.
func archOf(g gpu.Model) string {
	return fmt.Sprintf("%s (compute capability %d.%d, the %s)", g.Arch.Name, g.Arch.Major, g.Arch.Minor, g.Name)
}

// Build compiles p with opts, running the passes of Table that opts asks
// for.
func Build(p *te.Program, opts Options) (*Result, error) {
	if opts.Level < 0 || opts.Level > MaxLevel {
		return nil, fmt.Errorf("optimisation level -O%d: want -O0 to -O%d", opts.Level, MaxLevel)
	}
	if opts.FlashChunks < 0 {
		return nil, fmt.Errorf("flash-decoding: %d chunks: want 0 (the cost model decides), 1 (no split) or more", opts.FlashChunks)
	}
	opts = opts.withDefaultGPU()
	if err := CheckTarget(p, opts.Precision, opts.GPU); err != nil {
		return nil, err
	}
	b := &build{opts: opts, popts: partitionOptions(opts), prog: p}
	ran, err := b.runPasses(nil, opts.Dump)
	if err != nil {
		return nil, err
	}
	return &Result{Program: b.prog, Plan: b.plan, Module: b.mod, Passes: ran, Flash: b.flash, Groups: b.groups, Pads: b.pads}, nil
}
