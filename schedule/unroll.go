package schedule

import (
	"slices"

	"tec/te"
)

// UnrollPoints is the window of a reduction that one thread computes in
// serial loops (a thread per output, a flash-decoding merge's sums over
// its chunks): backend/lower unrolls the loops over up to this many
// consecutive points of it (ReduceUnroll), whose loads the compiler then
// issues together, before the sums that use them, and the cost model
// prices those loads in flight together. Sixteen is about what nvcc
// chooses for such a loop left to it (the 49 points of a 7×7 pool
// unrolled whole, a loop of 576 by 16), and within a thread's registers
// where a point loads two values.
const UnrollPoints = 16

// ReduceUnroll returns how a thread's loops over r's axes (outermost
// first) are unrolled: factors[i] is the iterations of loop i in one
// unrolled body — its extent where it is unrolled whole (#pragma unroll),
// 2 to its extent − 1 where it is unrolled in part (#pragma unroll
// factors[i]), 1 where the compiler is left to choose — and points the
// reduction's points in that body, whose loads are in flight together.
// Loops are unrolled whole from the innermost out while their points fit
// UnrollPoints, and the next by the part of the window left where that is
// at least two iterations. A reduction whose body nests another that moves
// with its axes is not unrolled: the copies of the inner loops would
// multiply.
func ReduceUnroll(r *te.Reduce) (factors []int, points int) {
	factors = make([]int, len(r.Axes))
	for i := range factors {
		factors[i] = 1
	}
	if nestsMovingReduce(r) {
		return factors, 1
	}
	points = 1
	for i := len(r.Axes) - 1; i >= 0; i-- {
		ext := r.Axes[i].Extent
		if points*ext <= UnrollPoints {
			factors[i] = ext
			points *= ext
			continue
		}
		if u := UnrollPoints / points; u >= 2 {
			factors[i] = u
			points *= u
		}
		break
	}
	return factors, points
}

// nestsMovingReduce reports whether r's body holds a reduction that uses
// one of r's axes (te.InvariantReductions are computed once, before r's
// loops).
func nestsMovingReduce(r *te.Reduce) bool {
	inv := te.InvariantReductions(r)
	moving := false
	te.Walk(r.Body, func(x te.Expr) bool {
		n, ok := x.(*te.Reduce)
		if !ok {
			return !moving
		}
		if !slices.Contains(inv, n) {
			moving = true
		}
		return false
	})
	return moving
}
