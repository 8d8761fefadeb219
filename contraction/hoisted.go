package contraction

import "tec/te"

// HoistedReductions returns the reductions nested in a contraction's factor
// x (outermost first, none inside another) that a matrix-vector tile
// computes once per row in a prologue: f32 sums, maxima and minima. x is a
// factor of a contraction that Of accepts, so none of them uses
// the contraction's reduction axes.
func HoistedReductions(x te.Expr) []*te.Reduce {
	var rs []*te.Reduce
	te.Walk(x, func(e te.Expr) bool {
		r, ok := e.(*te.Reduce)
		if !ok {
			return true
		}
		if hoistableOp(r) {
			rs = append(rs, r)
		}
		return false
	})
	return rs
}

// hoistableOp reports whether a nested reduction r is one that a block's
// threads can compute together (an f32 sum, max or min).
func hoistableOp(r *te.Reduce) bool {
	return te.TypeOf(r) == te.F32 && (r.Op == te.Sum || r.Op == te.ReduceMax || r.Op == te.ReduceMin)
}

// nestedInvariant reports whether every reduction nested in r's body is
// invariant in r's axes: computed once for all of r's points, it could be
// hoisted out of r's loop.
func nestedInvariant(r *te.Reduce) bool {
	ok := true
	te.Walk(r.Body, func(e te.Expr) bool {
		n, isReduce := e.(*te.Reduce)
		if !isReduce || !ok {
			return ok
		}
		used := te.UsedVars(n.Body)
		for _, a := range r.Axes {
			if used[a] {
				ok = false
			}
		}
		return false
	})
	return ok
}
