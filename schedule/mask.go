package schedule

import "tec/te"

// Mask is the test of a masked contraction's tiles: Live, a condition on
// the flat output coordinates of the contraction (M over its M axes, N
// over its N axes, B over its batch axes, each row-major), is false at
// every output point where the body does not use the products.
type Mask struct {
	Live    te.Expr
	M, N, B *te.Var
	// Scalars are the run-time scalars Live reads, each a variable of
	// Live standing for the value of a load at the contraction's batch
	// axes (the lowering evaluates the load with those axes bound).
	Scalars []Scalar
	// Context, when not 0, is the value the cost model assumes every
	// run-time scalar has, less one (a decode step at position
	// Context-1 attends over Context positions); 0 assumes any value, so
	// that no tile is priced as skipped (see partition.Options.Context).
	Context int
	// K, when set, makes Live a k mask (contraction.KMaskOf): a condition on the
	// flat reduction coordinate K as well, false where the products are
	// exactly 0, so that a tile skips the k it makes false throughout.
	K *te.Var
}

// Scalar is a run-time scalar of a mask: Var in Live is Load's value.
type Scalar struct {
	Var  *te.Var
	Load *te.Load
}

// TileRange is the flat output coordinates of one tile: [MLo, MHi] ×
// [NLo, NHi] of batch entry B (inclusive).
type TileRange struct {
	MLo, MHi, NLo, NHi, B int
}

// Dead reports whether the mask makes every output point of the tile r
// leave the products unused, by ConditionUnder's exact integer bounds.
func (mk *Mask) Dead(r TileRange) bool {
	v, ok := te.ConditionUnder(mk.Live, func(x *te.Var) (int, int) {
		switch x {
		case mk.M:
			return r.MLo, r.MHi
		case mk.N:
			return r.NLo, r.NHi
		case mk.B:
			return r.B, r.B
		}
		if mk.Context > 0 && mk.isScalar(x) {
			return mk.Context - 1, mk.Context - 1
		}
		return 0, x.Extent - 1
	})
	return ok && !v
}

// isScalar reports whether v stands for a run-time scalar.
func (mk *Mask) isScalar(v *te.Var) bool {
	for _, s := range mk.Scalars {
		if s.Var == v {
			return true
		}
	}
	return false
}

// UsesBatch reports whether the mask depends on the batch coordinate.
func (mk *Mask) UsesBatch() bool {
	uses := false
	te.Walk(mk.Live, func(e te.Expr) bool {
		if x, ok := e.(*te.IndexExpr); ok && x.Index.Uses(mk.B) {
			uses = true
		}
		return !uses
	})
	return uses
}
