package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"

	"tec/analysis"
	"tec/precision"
	"tec/te"
)

// analysisFlags are the flags of the commands that analyse a model.
type analysisFlags struct {
	compileFlags
	threshold float64
}

func (f *analysisFlags) register(fs *flag.FlagSet) {
	f.compileFlags.register(fs)
	fs.Float64Var(&f.threshold, "threshold", analysis.DefaultThreshold,
		"ops per element read and written at and above which a TE is compute-intensive")
}

func (f *analysisFlags) validate() error {
	if err := f.compileFlags.validate(); err != nil {
		return err
	}
	if !(f.threshold > 0) || math.IsInf(f.threshold, 1) {
		return fmt.Errorf("-threshold must be a positive finite number, not %g", f.threshold)
	}
	return nil
}

// analyse compiles file and analyses its model, printing any error; it
// returns nil and the exit status on failure.
func (e *env) analyse(f *analysisFlags, file string) (*analysis.Analysis, int) {
	prog, code := e.compile(&f.compileFlags, file)
	if prog == nil {
		return nil, code
	}
	return e.analyseProgram(f, prog)
}

func (e *env) analyseProgram(f *analysisFlags, prog *te.Program) (*analysis.Analysis, int) {
	a, err := analysis.Analyze(prog, analysis.Options{Threshold: f.threshold})
	if err != nil {
		return nil, e.failf(nil, exitUser, fail(codeBuild, err))
	}
	return a, exitOK
}

func explainCommand() *command {
	c := &command{
		name:    "explain",
		summary: "report the global analysis of a model",
		usage:   "[flags] FILE",
		help: `Explain checks FILE, lowers its model and prints the global analysis that
the partitioner and the transforms work from (the Souffle paper's §5). For
every TE: its type and source location; whether each output element relies
on one element of each input (OR, one-relies-on-one) or on many through a
reduction (MR); whether it is compute-intensive (CI) or memory-intensive
(MI), with its ratio of arithmetic operations to elements read and written;
its live range and level in the topological order; each access as a
relation in polyhedral notation,

  { O0[i, j] -> I0[i, rk] : 0 <= i < 64 and 0 <= j < 64 and 0 <= rk < 64 }

and which TEs read its result, with their spatial reuse (independent
readers) and temporal reuse (dependent readers). A summary follows: TEs by
class, total FLOPs and the compulsory bytes (inputs + params + outputs).

With --plan it also runs the pipeline (at -O and for --gpu, as tec build
does) and prints the partition plan: each kernel's stages, grid, occupancy,
resources, barriers and predicted time, and before every kernel but the
first, the boundary's reason with the predicted times of the kernels kept
merged and split there.

--json prints the same as one JSON object; docs/cli.md gives the schema.`,
	}
	c.run = func(e *env, args []string) int {
		fs := newFlagSet(c)
		var af analysisFlags
		af.register(fs)
		asJSON := fs.Bool("json", false, "print the analysis as JSON")
		summary := fs.Bool("summary", false, "print the summary only")
		withPlan := fs.Bool("plan", false, "also print the partition plan (kernels, boundaries and their reasons) at -O for --gpu")
		var of optFlags
		of.registerOpt(fs)
		var ptxasMode string
		registerPTXAS(fs, &ptxasMode)
		pos, code, ok := e.parse(c, fs, splitOptLevel(args))
		if !ok {
			return code
		}
		e.setJSON(af.diagnostics, isSet(fs, "diagnostics"), *asJSON)
		if err := af.validate(); err != nil {
			return e.usageError(c, "%v", err)
		}
		if len(pos) != 1 {
			return e.usageError(c, "want one FILE, got %d arguments", len(pos))
		}
		opts, err := of.options("")
		if err != nil {
			return e.optionsError(c, err)
		}
		prog, code := e.compile(&af.compileFlags, pos[0])
		if prog == nil {
			return code
		}
		// The analysis is of the program at --precision (its tensors'
		// bytes depend on it); the pipeline need not apply the pass again.
		prog, opts.Precision = precision.Apply(prog, opts.Precision), precision.F32
		a, code := e.analyseProgram(&af, prog)
		if a == nil {
			return code
		}
		var pl *kernelPlan
		if *withPlan {
			tg := opts.GPU.Arch
			tool, err := e.toolchain(ptxasMode, tg, false)
			if err != nil {
				return e.usageError(c, "%v", err)
			}
			if pl, err = e.plan(c, a.Program, opts, tg, tool); err != nil {
				return e.failf(c, exitUser, fail(codeBuild, err))
			}
		}
		r := a.Report()
		if *asJSON {
			if *summary {
				r.Tensors, r.TEs, r.Reuse = nil, nil, nil
			}
			out := struct {
				*analysis.Report
				Plan *planReport `json:"plan,omitempty"`
			}{Report: r}
			if pl != nil {
				out.Plan = newPlanReport(pl, opts.Level)
			}
			enc := json.NewEncoder(e.stdout)
			enc.SetIndent("", "  ")
			err = enc.Encode(out)
		} else {
			err = r.WriteText(e.stdout, *summary)
			if err == nil && pl != nil {
				_, err = fmt.Fprintf(e.stdout, "\npartition at -O%d:\n%s", opts.Level, pl.String())
			}
		}
		if err != nil {
			return e.failf(c, exitUser, fail(codeIO, fmt.Errorf("writing the report: %w", err)))
		}
		return exitOK
	}
	return c
}
