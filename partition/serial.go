package partition

import "tec/te"

// serialReduceStride is the largest distance, in elements, between the
// addresses that adjacent threads of a thread-per-output reduction read
// in one step (outputs adjacent along t's last axis): 1 and 2 are whole
// or half-used 32-byte sectors, as a stride-2 convolution reads them.
const serialReduceStride = 2

// serialReduces reports whether t, whose top-level reductions reds are
// at least rowReduceMin long, may be computed a thread per output
// (Elementwise, the reductions serial) rather than a block per output
// (RowReduce), for the cost model to choose: when every load of its
// reductions reads, at one step of the reduction, addresses at most
// serialReduceStride elements apart for outputs adjacent along t's last
// axis (a convolution's input along the output's width, or the same
// element: a weight), so that a warp's loads are coalesced or broadcast,
// as the model assumes. Rows of a row reduction (along the last axis,
// each thread's row a row apart) stay blocks. A block per output pays, for
// every output, its round trip, a tree of shuffles and two block
// barriers, with most of its threads idle on a reduction shorter than the
// block (cost.RowTilesTime): ResNeXt's grouped 3×3 convolutions (72
// terms) and its horizontally concatenated 1×1 ones (64 terms) took
// 97-955 µs each as blocks per output on an H200 (docs/benchmarks.md,
// "The stage clock").
func serialReduces(t *te.Tensor, reds []*te.Reduce) bool {
	if len(t.Axes) == 0 {
		return false
	}
	last := t.Axes[len(t.Axes)-1]
	coalesced := true
	for _, r := range reds {
		te.Walk(r.Body, func(e te.Expr) bool {
			if l, ok := e.(*te.Load); ok && coalesced {
				s, ok := loadStride(l, last)
				coalesced = ok && s <= serialReduceStride
			}
			return coalesced
		})
	}
	return coalesced
}

// loadStride returns the distance in elements between the addresses load
// l reads for two values of v one apart, the other variables fixed: the
// coefficient of v in l's flat offset. It reports false where v moves
// the offset other than linearly (inside a division or a remainder) or l
// gathers.
func loadStride(l *te.Load, v *te.Var) (int, bool) {
	if l.IsGather() || len(l.Index) != len(l.Tensor.Shape) {
		return 0, false
	}
	coef, stride := 0, 1
	for d := len(l.Index) - 1; d >= 0; d-- {
		for _, term := range l.Index[d].Simplify().Terms {
			a := term.Atom
			switch {
			case a.Op == te.AtomVar && a.Var == v:
				coef += term.Coef * stride
			case a.Op != te.AtomVar && a.Arg.Uses(v):
				return 0, false
			}
		}
		stride *= l.Tensor.Shape[d]
	}
	return max(coef, -coef), true
}
