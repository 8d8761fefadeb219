package lower

import (
	"tec/backend/kir"
	"tec/schedule"
	"tec/te"
)

// A masked contraction (contraction.MaskedReduce) is lowered like any other:
// its select is part of the body that the tile's epilogue evaluates per
// output element. Its mask also decides, per tile, whether the tile needs
// any product: a tile whose output ranges make the mask false throughout
// skips the staging and the k loop, and its epilogue writes the select's
// other branch. The test is the one schedule.Mask.Dead makes when it
// prices the stage, computed at run time from the tile's coordinates with
// the same integer bounds, so that the kernel skips exactly the tiles the
// cost model leaves out; a mask on run-time scalars (pos[b]) compares them
// with the tile's ranges when the tile runs, skipping every tile past them.
// A matrix-vector tile (a decode step's scores: one query against the
// cache) tests its columns' range the same way (matVecLive) and skips its
// staging, products and combining; its epilogue then reads no partial
// sums.

// tileMask returns the kir condition under which the tile with flat output
// ranges mLo..mHi, nLo..nHi of batch entry b needs its products, or nil
// when every tile does. The mask's run-time scalars are loaded once per
// tile into registers (g, with the contraction's batch axes bound to the
// tile's entry): the test stays block-uniform, since the scalars' indexes
// use only batch axes.
func tileMask(g *gen, mk *schedule.Mask, mLo, mHi, nLo, nHi, b kir.Expr) kir.Expr {
	if mk == nil {
		return nil
	}
	rng := map[*te.Var][2]kir.Expr{mk.M: {mLo, mHi}, mk.N: {nLo, nHi}, mk.B: {b, b}}
	for _, s := range mk.Scalars {
		v := kir.NewVar(s.Var.Name, te.I32)
		g.emit(&kir.Let{Var: v, Value: convert(g.expr(s.Load), te.I32)})
		rng[s.Var] = [2]kir.Expr{v, v}
	}
	_, dead := decide(mk.Live, rng)
	if dead == nil {
		return nil
	}
	return &kir.Unary{Op: te.Not, X: dead}
}

// kLive returns the test of the k mask mk for batch entry b of a
// matrix-vector tile: a function giving the kir condition under which the
// products at some k in [lo, hi] may be nonzero, or nil when mk is nil or
// the test cannot be decided. The mask's run-time scalars are loaded once
// (the contraction's batch axes bound to b).
func kLive(g *gen, mk *schedule.Mask, b kir.Expr) func(lo, hi kir.Expr) kir.Expr {
	if mk == nil {
		return nil
	}
	rng := map[*te.Var][2]kir.Expr{
		mk.M: {kir.I(0), kir.I(mk.M.Extent - 1)},
		mk.N: {kir.I(0), kir.I(mk.N.Extent - 1)},
		mk.B: {b, b},
	}
	vars := make([]*kir.Var, len(mk.Scalars))
	for i, s := range mk.Scalars {
		vars[i] = kir.NewVar(s.Var.Name, te.I32)
		rng[s.Var] = [2]kir.Expr{vars[i], vars[i]}
	}
	probe := map[*te.Var][2]kir.Expr{mk.K: {kir.I(0), kir.I(0)}}
	for v, r := range rng {
		probe[v] = r
	}
	if _, dead := decide(mk.Live, probe); dead == nil {
		return nil
	}
	for i, s := range mk.Scalars {
		g.emit(&kir.Let{Var: vars[i], Value: convert(g.expr(s.Load), te.I32)})
	}
	return func(lo, hi kir.Expr) kir.Expr {
		at := map[*te.Var][2]kir.Expr{mk.K: {lo, hi}}
		for v, r := range rng {
			at[v] = r
		}
		_, dead := decide(mk.Live, at)
		return &kir.Unary{Op: te.Not, X: dead}
	}
}

// decide returns conditions under which c is true, and false, at every
// point of the ranges rng (by te.ConditionUnder's rules); nil where it
// cannot tell.
func decide(c te.Expr, rng map[*te.Var][2]kir.Expr) (yes, no kir.Expr) {
	switch x := c.(type) {
	case *te.ConstExpr:
		if x.DType != te.Bool && x.DType != te.I32 {
			return nil, nil
		}
		if x.Value != 0 {
			return kir.B(true), nil
		}
		return nil, kir.B(true)
	case *te.Unary:
		if x.Op == te.Not {
			yes, no := decide(x.X, rng)
			return no, yes
		}
	case *te.Binary:
		switch {
		case x.Op == te.And:
			ya, na := decide(x.X, rng)
			yb, nb := decide(x.Y, rng)
			return both(ya, yb), either(na, nb)
		case x.Op == te.Or:
			ya, na := decide(x.X, rng)
			yb, nb := decide(x.Y, rng)
			return either(ya, yb), both(na, nb)
		case x.Op.IsComparison():
			d, ok := te.ComparisonDiff(x)
			if !ok {
				return nil, nil
			}
			for _, v := range d.Vars() {
				if _, ok := rng[v]; !ok {
					return nil, nil
				}
			}
			lo, hi := bounds(d, rng)
			return comparison(x.Op, lo, hi)
		}
	}
	return nil, nil
}

// comparison returns the conditions under which d op 0 holds, and fails,
// for every d in [lo, hi].
func comparison(op te.BinaryOp, lo, hi kir.Expr) (yes, no kir.Expr) {
	zero := kir.I(0)
	switch op {
	case te.Lt:
		return kir.Lt(hi, zero), kir.Ge(lo, zero)
	case te.Le:
		return kir.Le(hi, zero), kir.Bin(te.Gt, lo, zero)
	case te.Gt:
		return kir.Bin(te.Gt, lo, zero), kir.Le(hi, zero)
	case te.Ge:
		return kir.Ge(lo, zero), kir.Lt(hi, zero)
	case te.Eq:
		return kir.And(kir.Eq(lo, zero), kir.Eq(hi, zero)), kir.Bin(te.Or, kir.Bin(te.Gt, lo, zero), kir.Lt(hi, zero))
	case te.Ne:
		return kir.Bin(te.Or, kir.Bin(te.Gt, lo, zero), kir.Lt(hi, zero)), kir.And(kir.Eq(lo, zero), kir.Eq(hi, zero))
	}
	return nil, nil
}

func both(a, b kir.Expr) kir.Expr {
	if a == nil || b == nil {
		return nil
	}
	return kir.And(a, b)
}

func either(a, b kir.Expr) kir.Expr {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return kir.Bin(te.Or, a, b)
}

// bounds returns the least and greatest values of x over rng, as
// te.Index.Bounds computes them.
func bounds(x te.Index, rng map[*te.Var][2]kir.Expr) (lo, hi kir.Expr) {
	lo, hi = kir.I(x.Const), kir.I(x.Const)
	for _, t := range x.Terms {
		alo, ahi := atomBounds(t.Atom, rng)
		if t.Coef < 0 {
			alo, ahi = ahi, alo
		}
		lo = addI(lo, mulI(alo, t.Coef))
		hi = addI(hi, mulI(ahi, t.Coef))
	}
	return lo, hi
}

// atomBounds returns the range of a, as te.Atom.Bounds computes it.
func atomBounds(a te.Atom, rng map[*te.Var][2]kir.Expr) (lo, hi kir.Expr) {
	switch a.Op {
	case te.AtomVar:
		r := rng[a.Var]
		return r[0], r[1]
	case te.AtomDiv:
		l, h := bounds(*a.Arg, rng)
		return divI(l, a.Divisor), divI(h, a.Divisor)
	}
	l, h := bounds(*a.Arg, rng)
	d := kir.I(a.Divisor)
	if cl, ok := constI(l); ok {
		if ch, ok := constI(h); ok {
			if te.FloorDiv(cl, a.Divisor) == te.FloorDiv(ch, a.Divisor) {
				return kir.I(te.FloorMod(cl, a.Divisor)), kir.I(te.FloorMod(ch, a.Divisor))
			}
			return kir.I(0), kir.I(a.Divisor - 1)
		}
	}
	one := kir.Eq(kir.Div(l, d), kir.Div(h, d)) // within one multiple of d
	return &kir.Select{Cond: one, Then: kir.Mod(l, d), Else: kir.I(0)},
		&kir.Select{Cond: one, Then: kir.Mod(h, d), Else: kir.I(a.Divisor - 1)}
}

// constI returns the value of an i32 constant.
func constI(e kir.Expr) (int, bool) {
	if c, ok := e.(*kir.Const); ok && c.T == te.I32 {
		return int(c.Value), true
	}
	return 0, false
}

// addI, mulI and divI build i32 arithmetic, folding constants.
func addI(a, b kir.Expr) kir.Expr {
	ca, okA := constI(a)
	cb, okB := constI(b)
	switch {
	case okA && okB:
		return kir.I(ca + cb)
	case okA && ca == 0:
		return b
	case okB && cb == 0:
		return a
	}
	return kir.Add(a, b)
}

func mulI(a kir.Expr, c int) kir.Expr {
	if ca, ok := constI(a); ok {
		return kir.I(ca * c)
	}
	switch c {
	case 0:
		return kir.I(0)
	case 1:
		return a
	}
	return kir.Mul(a, kir.I(c))
}

func divI(a kir.Expr, d int) kir.Expr {
	if ca, ok := constI(a); ok {
		return kir.I(te.FloorDiv(ca, d))
	}
	if d == 1 {
		return a
	}
	return kir.Div(a, kir.I(d))
}
