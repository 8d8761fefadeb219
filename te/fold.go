package te

// FoldSelects returns e with every select whose condition has the same value
// for every value of the variables it uses (each in [0, Extent)) replaced by
// the branch that it chooses. A branch that can never run may load out of
// bounds — select(i - 2 >= 0, x[i - 2], 0.0) where i in 0..1, or
// select(i < 3, a[i], b[i - 3]) once i is 1 — and is then gone before any
// stage asks for its loads to be in bounds. Subtrees that do not change are
// shared with e; e itself is not modified.
func FoldSelects(e Expr) Expr {
	switch x := e.(type) {
	case *Select:
		if v, ok := ConstCondition(x.Cond); ok {
			if v {
				return FoldSelects(x.Then)
			}
			return FoldSelects(x.Else)
		}
		c, t, f := FoldSelects(x.Cond), FoldSelects(x.Then), FoldSelects(x.Else)
		if c == x.Cond && t == x.Then && f == x.Else {
			return e
		}
		return &Select{Cond: c, Then: t, Else: f}
	case *Unary:
		if y := FoldSelects(x.X); y != x.X {
			return &Unary{Op: x.Op, X: y}
		}
	case *Binary:
		a, b := FoldSelects(x.X), FoldSelects(x.Y)
		if a != x.X || b != x.Y {
			return &Binary{Op: x.Op, X: a, Y: b}
		}
	case *Cast:
		if y := FoldSelects(x.X); y != x.X {
			return &Cast{To: x.To, X: y}
		}
	case *Reduce:
		if y := FoldSelects(x.Body); y != x.Body {
			return &Reduce{Op: x.Op, Axes: x.Axes, Body: y}
		}
	}
	return e
}

// ConstCondition reports whether the bool expression c has one value for
// every value of its variables (each in [0, Extent)), and that value. It
// decides constants, comparisons of index values by the bounds of their
// difference, and !, && and || of those.
func ConstCondition(c Expr) (value, ok bool) {
	return ConditionUnder(c, func(v *Var) (int, int) { return 0, v.Extent - 1 })
}

// ConditionUnder reports whether the bool expression c has one value for
// every value of its variables when each variable v ranges over [lo, hi] =
// rng(v), and that value, deciding what ConstCondition decides by the
// exact integer bounds of Index.Bounds. A variable with an empty range
// (lo > hi) decides nothing. A contraction's masked epilogue asks it about
// the ranges of one tile's output indexes: a tile where the mask is false
// throughout computes no products.
func ConditionUnder(c Expr, rng func(*Var) (lo, hi int)) (value, ok bool) {
	switch x := c.(type) {
	case *ConstExpr:
		if x.DType == Bool || x.DType == I32 {
			return x.Value != 0, true
		}
	case *Unary:
		if x.Op == Not {
			v, ok := ConditionUnder(x.X, rng)
			return !v, ok
		}
	case *Binary:
		switch {
		case x.Op == And || x.Op == Or:
			a, okA := ConditionUnder(x.X, rng)
			b, okB := ConditionUnder(x.Y, rng)
			short := x.Op == Or // the value that decides alone
			switch {
			case okA && a == short, okB && b == short:
				return short, true
			case okA && okB:
				return !short, true
			}
		case x.Op.IsComparison():
			return comparisonUnder(x, rng)
		}
	}
	return false, false
}

// comparisonUnder decides a comparison of two index values from the bounds
// of their difference under rng.
func comparisonUnder(b *Binary, rng func(*Var) (lo, hi int)) (value, ok bool) {
	d, ok := ComparisonDiff(b)
	if !ok {
		return false, false
	}
	for _, v := range d.Vars() {
		if lo, hi := rng(v); lo > hi {
			return false, false // no range to decide by
		}
	}
	lo, hi := d.Bounds(rng)
	return DecideComparison(b.Op, lo, hi)
}

// ComparisonDiff returns x - y, simplified, for a comparison x op y of two
// index values (i32 index expressions or integer constants), and false for
// any other comparison.
func ComparisonDiff(b *Binary) (Index, bool) {
	x, okX := asIndex(b.X)
	y, okY := asIndex(b.Y)
	if !okX || !okY || !b.Op.IsComparison() {
		return Index{}, false
	}
	return x.Sub(y).Simplify(), true
}

// DecideComparison reports whether d op 0 has one value for every d in
// [lo, hi], and that value.
func DecideComparison(op BinaryOp, lo, hi int) (value, ok bool) {
	var yes, no bool // always true, always false
	switch op {
	case Lt:
		yes, no = hi < 0, lo >= 0
	case Le:
		yes, no = hi <= 0, lo > 0
	case Gt:
		yes, no = lo > 0, hi <= 0
	case Ge:
		yes, no = lo >= 0, hi < 0
	case Eq:
		yes, no = lo == 0 && hi == 0, lo > 0 || hi < 0
	case Ne:
		yes, no = lo > 0 || hi < 0, lo == 0 && hi == 0
	}
	if yes || no {
		return yes, true
	}
	return false, false
}

// asIndex returns an i32 index value or integer constant as an Index.
func asIndex(e Expr) (Index, bool) {
	switch x := e.(type) {
	case *IndexExpr:
		return x.Index, true
	case *ConstExpr:
		if x.DType == I32 {
			return Const(int(x.Value)), true
		}
	}
	return Index{}, false
}
