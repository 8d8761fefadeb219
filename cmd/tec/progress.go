package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"tec/backend/kir"
	"tec/backend/report"
	"tec/backend/sim"
	"tec/lang/syntax"
	"tec/te"
)

// defaultLongRun is the estimated time above which tec run states its
// estimate before it starts and, on a terminal, shows a progress bar.
const defaultLongRun = 3 * time.Second

// progressInterval is the least time between two redraws of the bar.
const progressInterval = 200 * time.Millisecond

// longRun returns the estimated time above which a run is long.
func (e *env) longRunThreshold() time.Duration {
	if e.longRun > 0 {
		return e.longRun
	}
	return defaultLongRun
}

// terminal reports whether w is a terminal.
func (e *env) terminal(w io.Writer) bool {
	if e.isTerminal != nil {
		return e.isTerminal(w)
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// workOf measures the simulator's work in one number: operations and
// elements (4 bytes) moved to and from global memory.
func workOf(c kir.Counts) float64 {
	return float64(c.FLOPs) + float64(c.LoadBytes+c.StoreBytes)/4
}

// progressBar draws, on a terminal, how far a simulation has got against
// the static count of its work (backend/report).
type progressBar struct {
	w           io.Writer
	label       string
	total       float64
	start, last time.Time
	now         func() time.Time
}

func newProgressBar(w io.Writer, label string, total kir.Counts, now func() time.Time) *progressBar {
	t := now()
	p := &progressBar{w: w, label: label, total: workOf(total), start: t, last: t, now: now}
	p.draw(0, 0)
	return p
}

// update redraws the bar for the work done, at most every
// progressInterval; it is the simulator's progress callback.
func (p *progressBar) update(done kir.Counts) {
	t := p.now()
	if t.Sub(p.last) < progressInterval {
		return
	}
	p.last = t
	frac := 0.0
	if p.total > 0 {
		// The static count can miss work a data-dependent condition
		// adds: the bar stops short of full until the run ends.
		frac = min(workOf(done)/p.total, 0.99)
	}
	p.draw(frac, t.Sub(p.start))
}

// draw writes the bar over the current line.
func (p *progressBar) draw(frac float64, elapsed time.Duration) {
	const width = 30
	n := int(frac * width)
	eta := ""
	if frac > 0.01 && elapsed > time.Second {
		left := time.Duration(float64(elapsed) * (1 - frac) / frac)
		eta = ", about " + formatClock(left) + " left"
	}
	fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%%  %s elapsed%s\x1b[K", p.label, strings.Repeat("#", n), strings.Repeat("-", width-n), frac*100, formatClock(elapsed), eta)
}

// finish clears the bar's line.
func (p *progressBar) finish() {
	fmt.Fprint(p.w, "\r\x1b[K")
}

// formatClock formats a duration as m:ss or h:mm:ss.
func formatClock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// The rates at which the devices get through te.Program.Work, per second of
// one core's time (user and system), measured with /usr/bin/time -v on the
// 2-core machine the project is developed on (docs/cli.md "Work estimate"
// gives the runs). The reference splits its larger loops among the cores,
// so on an idle machine a run may take less than its estimate.
const (
	// refScalarRate is the reference's rate in its closures: element-wise
	// work, reductions, and contractions it cannot hand to BLAS (1×1
	// convolutions whose channel index divides, padded convolutions).
	refScalarRate = 1e8
	// refGEMMRate is its rate in the contractions it hands to BLAS
	// (gemmWork), four operations per multiply-add as te.Work counts.
	refGEMMRate = 1.5e10
	// refOperandRate is the elements per second of those contractions'
	// operands, which the reference may copy into matrices first: the
	// cost of a matrix-vector product (the LSTM's steps).
	refOperandRate = 2.5e8

	// simRaceRate and simRate are the simulator's rates, with --race and
	// without, in te.Program.Work where the kernels are not at hand (tec
	// generate's estimate): a run's estimate counts the kernels' work
	// (simSeconds).
	simRaceRate = 3e7
	simRate     = 8e7

	gpuRate = 1e12 // operations per second, a GPU (a tenth of an A100's f32 peak)
)

// simCost is what the simulator takes, in seconds of one core, for each
// unit of the kernels' static counts (backend/report): a FLOP, an element
// (4 bytes) loaded from or stored to global memory, and a thread's share
// of a block barrier. They are least-squares fits (of the relative error)
// to the runs of docs/cli.md, raised by a quarter with --race and by 30 %
// without, so that the estimates are 0.95 to 1.55 times the runs with
// --race and 0.75 to 1.65 times without.
type simCost struct{ flop, elem, threadBarrier float64 }

var (
	simCostRace   = simCost{flop: 1.2e-8, elem: 1.6e-7, threadBarrier: 6e-7}
	simCostNoRace = simCost{flop: 3.6e-9, elem: 9.1e-8, threadBarrier: 1.4e-7}
)

// estimateRun returns the estimated seconds that running work w takes on
// rf's device, from the work alone (tec generate's estimate; tec run's is
// estimateProgram's).
func estimateRun(w te.Work, rf *runFlags) float64 {
	switch {
	case rf.device == "ref":
		return w.Scalar/refScalarRate + w.Contraction/refGEMMRate
	case rf.device == "cuda":
		return w.Total() / gpuRate
	case rf.race:
		return w.Total() / simRaceRate
	}
	return w.Total() / simRate
}

// estimateProgram returns the estimated seconds that running prog on rf's
// device takes: on ref, from its work with the contractions that go to
// BLAS told apart (gemmWork); on sim, from mod's kernels (simSeconds).
func estimateProgram(prog *te.Program, mod *kir.Module, rf *runFlags) float64 {
	switch {
	case rf.device == "ref":
		w := prog.Work()
		gemm, operands := gemmWork(prog)
		return (w.Total()-gemm)/refScalarRate + gemm/refGEMMRate + operands/refOperandRate
	case rf.device == "sim" && mod != nil:
		return simSeconds(mod, rf.race)
	}
	return estimateRun(prog.Work(), rf)
}

// simSeconds estimates the seconds of simulating mod's kernels, from their
// static counts.
func simSeconds(mod *kir.Module, race bool) float64 {
	c := simCostNoRace
	if race {
		c = simCostRace
	}
	var secs float64
	for _, k := range report.Module(mod, report.Config{ResidentBlocks: sim.DefaultResidentBlocks}).Kernels {
		n := k.Counts
		secs += float64(n.FLOPs)*c.flop + float64(n.LoadBytes+n.StoreBytes)/4*c.elem + float64(n.BlockBarriers)*float64(k.Threads)*c.threadBarrier
	}
	return secs
}

// gemmWork returns the part of prog's contraction work (te.Work) that the
// reference evaluator hands to BLAS, and the elements of those products'
// operands. They are the contractions whose two loads have affine indexes,
// statically in bounds, over the tensor's axes and the reduction's, as
// te/eval_gemm.go matches them; the reference evaluates the rest in
// closures.
func gemmWork(prog *te.Program) (ops, operands float64) {
	for _, t := range prog.Tensors {
		if t.Kind != te.Compute || t.Body == nil {
			continue
		}
		n := float64(t.NumElements())
		out := map[*te.Var]bool{}
		for _, v := range t.Axes {
			out[v] = true
		}
		te.Walk(t.Body, func(x te.Expr) bool {
			r, ok := x.(*te.Reduce)
			if !ok {
				return true
			}
			if g, ok := gemmShape(r, t.Axes, out); ok {
				ops += n * g.k * 4
				operands += g.b * (g.m*g.k + g.k*g.n)
			}
			return false // te hands no nested reduction to BLAS
		})
	}
	return ops, operands
}

// gemmDims are the sizes of a batched matrix product C[b, m, n] = Σ_k
// A[b, m, k] · B[b, k, n].
type gemmDims struct{ b, m, n, k float64 }

// gemmShape returns the sizes of r as a matrix product, and whether the
// reference evaluator computes r with BLAS; axes are the tensor's, out the
// set of them.
func gemmShape(r *te.Reduce, axes []*te.Var, out map[*te.Var]bool) (gemmDims, bool) {
	mul, ok := r.Body.(*te.Binary)
	if r.Op != te.Sum || !ok || mul.Op != te.Mul || te.TypeOf(mul) != te.F32 || len(r.Axes) == 0 {
		return gemmDims{}, false
	}
	red := map[*te.Var]bool{}
	g := gemmDims{b: 1, m: 1, n: 1, k: 1}
	for _, v := range r.Axes {
		if v == nil || v.Extent <= 0 || red[v] || out[v] {
			return gemmDims{}, false
		}
		red[v] = true
		g.k *= float64(v.Extent)
	}
	whole := func(v *te.Var) (lo, hi int) { return 0, v.Extent - 1 }
	var used [2]map[*te.Var]bool
	for i, x := range []te.Expr{mul.X, mul.Y} {
		l, ok := x.(*te.Load)
		if !ok || l.Tensor == nil || len(l.Index) != len(l.Tensor.Shape) || l.IsGather() {
			return gemmDims{}, false
		}
		used[i] = map[*te.Var]bool{}
		for d, ix := range l.Index {
			if !ix.IsAffine() {
				return gemmDims{}, false
			}
			if lo, hi := ix.Bounds(whole); lo < 0 || hi >= l.Tensor.Shape[d] {
				return gemmDims{}, false
			}
			for _, term := range ix.Terms {
				v := term.Atom.Var
				if !out[v] && !red[v] {
					return gemmDims{}, false
				}
				used[i][v] = true
			}
		}
	}
	for _, v := range axes {
		switch e := float64(v.Extent); {
		case used[0][v] && used[1][v]:
			g.b *= e
		case used[0][v]:
			g.m *= e
		case used[1][v]:
			g.n *= e
		}
	}
	if g.b > 1 && g.m*g.n*g.k < 32 {
		return gemmDims{}, false // te evaluates many tiny products in closures
	}
	return g, true
}

// checkWork returns the estimated seconds of running prog (mod, its
// kernels, on sim) on rf's device, and refuses a run estimated to take
// longer than --max-time. The hint offers -D only where the file the
// program came from has constants to set: an imported model has none.
func (e *env) checkWork(prog *te.Program, mod *kir.Module, rf *runFlags) (float64, error) {
	secs := estimateProgram(prog, mod, rf)
	if rf.maxTime == 0 || secs <= rf.maxTime.Seconds() {
		return secs, nil
	}
	more := "allow it more time with --max-time " + suggestMaxTime(secs) + " (0: no limit)"
	hint := "use smaller sizes (-D NAME=VALUE), or " + more
	if !e.hasConstants() {
		hint = "the file has no constants to make the model smaller: " + more
	}
	return secs, fmt.Errorf("model %s takes about %.2g operations, some %s on %s; refusing a run estimated over %v"+hintSep+"%s",
		prog.Name, prog.Work().Total(), formatSeconds(secs), rf.device, rf.maxTime, hint)
}

// suggestMaxTime returns a --max-time that admits a run estimated at secs:
// half as long again, rounded up to a whole minute or hour.
func suggestMaxTime(secs float64) string {
	d := time.Duration(math.Min(secs*1.5, 1e6*3600) * float64(time.Second))
	if d > 2*time.Hour {
		return fmt.Sprintf("%dh", int64(math.Ceil(d.Hours())))
	}
	return fmt.Sprintf("%dm", int64(math.Ceil(d.Minutes())))
}

// hasConstants reports whether the last file compiled declares a constant
// that -D could set; true where that cannot be told.
func (e *env) hasConstants() bool {
	if e.source.src == nil {
		return true
	}
	f, err := syntax.Parse(e.source.file, e.source.src)
	if err != nil {
		return true
	}
	for _, d := range f.Decls {
		if _, ok := d.(*syntax.ConstDecl); ok {
			return true
		}
	}
	return false
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
