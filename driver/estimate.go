package driver

import (
	"tec/backend/kir"
	"tec/backend/report"
	"tec/backend/sim"
	"tec/te"
)

// Seconds implements Device: the program's work, with the contractions
// that go to BLAS told apart (gemmWork).
func (Reference) Seconds(prog *te.Program, _ *Compiled) float64 {
	w := prog.Work()
	gemm, operands := gemmWork(prog)
	return (w.Total()-gemm)/refScalarRate + gemm/refGEMMRate + operands/refOperandRate
}

// WorkSeconds implements Device.
func (Reference) WorkSeconds(w te.Work) float64 {
	return w.Scalar/refScalarRate + w.Contraction/refGEMMRate
}

// Seconds implements Device: the kernels' static counts (simSeconds).
func (s Simulator) Seconds(prog *te.Program, c *Compiled) float64 {
	if c == nil {
		return s.WorkSeconds(prog.Work())
	}
	return simSeconds(c.Module, s.Options)
}

// WorkSeconds implements Device.
func (s Simulator) WorkSeconds(w te.Work) float64 {
	if s.Options.Race {
		return w.Total() / simRaceRate
	}
	return w.Total() / simRate
}

// Seconds implements Device.
func (d *CUDA) Seconds(prog *te.Program, _ *Compiled) float64 { return d.WorkSeconds(prog.Work()) }

// WorkSeconds implements Device.
func (*CUDA) WorkSeconds(w te.Work) float64 { return w.Total() / gpuRate }

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

// simCostOf returns the simulator's costs with race detection (race) or
// without.
func simCostOf(race bool) simCost {
	if race {
		return simCost{flop: 1.2e-8, elem: 1.6e-7, threadBarrier: 6e-7}
	}
	return simCost{flop: 3.6e-9, elem: 9.1e-8, threadBarrier: 1.4e-7}
}

// simSeconds estimates the seconds of simulating mod's kernels with opts,
// from their static counts.
func simSeconds(mod *kir.Module, opts sim.Options) float64 {
	c := simCostOf(opts.Race)
	resident := opts.ResidentBlocks
	if resident == 0 {
		resident = sim.DefaultResidentBlocks
	}
	var secs float64
	for _, k := range report.Module(mod, report.Config{ResidentBlocks: resident}).Kernels {
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
