package schedule

import "tec/te"

// A k mask (Mask.K set) skips the k at which a matrix-vector
// contraction's products are exactly zero; these are its counts of the
// k it leaves live.

// DeadK reports whether the k mask makes the products zero at every k in
// [lo, hi], at every output point (and, when mk.Context is set, with
// every run-time scalar at Context-1).
func (mk *Mask) DeadK(lo, hi int) bool {
	v, ok := te.ConditionUnder(mk.Live, func(x *te.Var) (int, int) {
		if x == mk.K {
			return lo, hi
		}
		if mk.Context > 0 && mk.isScalar(x) {
			return mk.Context - 1, mk.Context - 1
		}
		return 0, x.Extent - 1
	})
	return ok && !v
}

// LiveK returns how many k of K the k mask leaves live: those priced as
// run, at the scalars' Context (all of K when it is 0).
func (mk *Mask) LiveK() int {
	if mk.Context == 0 {
		return mk.K.Extent
	}
	if n, ok := mk.liveKAveraged(); ok {
		return n
	}
	live := 0
	for k := range mk.K.Extent {
		if !mk.DeadK(k, k) {
			live++
		}
	}
	return live
}

// maxAveragedRows bounds the values of an output variable over which
// liveKAveraged averages a k mask.
const maxAveragedRows = 1024

// liveKAveraged returns how many k of K a k mask leaves live on average
// over the one output variable its condition reads besides k and the
// run-time scalars, with every scalar at Context-1, and whether the mask
// has such a variable. A softmax split in chunks (flash-decoding) masks
// its partials with c*S + j <= pos[b]: at position 127 of chunks of 1024,
// chunk 0 has 128 live j and the others none, 16 on average over 8
// chunks, where DeadK over every c at once would price 128 in each.
func (mk *Mask) liveKAveraged() (int, bool) {
	var row *te.Var
	ok := true
	te.Walk(mk.Live, func(e te.Expr) bool {
		x, isIndex := e.(*te.IndexExpr)
		if !isIndex {
			return true
		}
		for _, v := range x.Index.Vars() {
			switch {
			case v == mk.K || mk.isScalar(v):
			case row == nil:
				row = v
			case row != v:
				ok = false
			}
		}
		return ok
	})
	if !ok || row == nil || row.Extent > maxAveragedRows {
		return 0, false
	}
	live := 0
	for r := range row.Extent {
		live += mk.liveKInRow(row, r, 0, mk.K.Extent-1)
	}
	return (live + row.Extent/2) / row.Extent, true
}

// liveKInRow counts the k in lo..hi that the mask leaves live in row r of
// the output variable row (undecided counts as live), bisecting k's range
// until the condition is decided over each part: a mask monotone in k,
// as causal and position masks are, takes O(log K) evaluations, not K.
func (mk *Mask) liveKInRow(row *te.Var, r, lo, hi int) int {
	isLive, decided := te.ConditionUnder(mk.Live, func(x *te.Var) (int, int) {
		switch {
		case x == mk.K:
			return lo, hi
		case x == row:
			return r, r
		case mk.isScalar(x):
			return mk.Context - 1, mk.Context - 1
		}
		return 0, x.Extent - 1
	})
	switch {
	case decided && isLive:
		return hi - lo + 1
	case decided:
		return 0
	case lo == hi:
		return 1
	}
	mid := lo + (hi-lo)/2
	return mk.liveKInRow(row, r, lo, mid) + mk.liveKInRow(row, r, mid+1, hi)
}
