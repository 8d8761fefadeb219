package contraction

import (
	"math"

	"tec/schedule"
	"tec/te"
)

// The value side of masked attention: in
//
//	sc[b, t] = select(t <= pos[b], sum[e](q[b, e] * k[b, t, e]), -inf)
//	p[b, t] = exp(sc[b, t] - m[b])
//	ctx[b, e] = sum[t](p[b, t] * v[b, t, e])
//
// p is exactly 0 wherever t > pos[b] (exp(-inf) = 0), so that the k of
// ctx's sum past pos[b] add only zero products and a tile may skip them
// (their loads of v included). ZeroPast derives such a mask by following
// the else-branch of a select through the element-wise stages that keep
// it: -inf minus or plus a value, exp(-inf) = 0, 0 times or divided by a
// value, a cast, a load of a computed tensor at plain indexes.
//
// The derivation assumes the other operands finite (and a divisor of a
// zero nonzero), as the key side's
// skipping does for the products it leaves out: with a finite v, 0 × v is
// ±0 and the skipped terms leave the float sum unchanged, so that the
// result is identical to the reference's. Where v holds an infinity or a
// NaN past pos (never written by the program), the reference's 0 × inf is
// NaN and the skipping result is not; likewise a non-finite m makes the
// reference's p NaN at every t, live ones included, so both are NaN.

// fill is what an expression is known to be where its condition fails.
type fill int

const (
	fillNone   fill = iota
	fillNegInf      // -inf
	fillZero        // exactly 0
)

// ZeroPast returns a condition c over the variables of e (its own index
// variables and run-time scalar loads) such that e is exactly 0 wherever
// c is false, or false when it cannot tell (see the note above).
func ZeroPast(e te.Expr) (te.Expr, bool) {
	c, f := zeroPast(e, 0)
	if f != fillZero {
		return nil, false
	}
	return c, true
}

// maxLoadDepth bounds the producers ZeroPast follows through loads.
const maxLoadDepth = 8

func zeroPast(e te.Expr, depth int) (te.Expr, fill) {
	switch x := e.(type) {
	case *te.Select:
		if !readsOnlyScalars(x.Cond) {
			return nil, fillNone
		}
		switch constFill(x.Else) {
		case fillNegInf:
			return x.Cond, fillNegInf
		case fillZero:
			return x.Cond, fillZero
		}
		// select(c, a, b) with b filled under c' where c implies nothing
		// about c' is unknown; the same condition on both sides is not
		// derived here.
		return nil, fillNone
	case *te.Unary:
		c, f := zeroPast(x.X, depth)
		switch {
		case x.Op == te.Exp && f == fillNegInf:
			return c, fillZero
		case x.Op == te.Neg && f == fillZero:
			return c, fillZero
		}
		return nil, fillNone
	case *te.Cast:
		if !te.TypeOf(x).IsFloat() {
			return nil, fillNone
		}
		return zeroPast(x.X, depth)
	case *te.Binary:
		cx, fx := zeroPast(x.X, depth)
		cy, fy := zeroPast(x.Y, depth)
		switch x.Op {
		case te.Sub:
			if fx == fillNegInf && fy == fillNone {
				return cx, fillNegInf
			}
		case te.Add:
			if fx == fillNegInf && fy == fillNone {
				return cx, fillNegInf
			}
			if fy == fillNegInf && fx == fillNone {
				return cy, fillNegInf
			}
		case te.Mul:
			if fx == fillZero {
				return cx, fillZero
			}
			if fy == fillZero {
				return cy, fillZero
			}
		case te.Div:
			if fx == fillZero && fy == fillNone {
				return cx, fillZero
			}
		}
		return nil, fillNone
	case *te.Load:
		if x.Tensor.Kind != te.Compute || x.IsGather() || depth >= maxLoadDepth || len(x.Index) != len(x.Tensor.Axes) {
			return nil, fillNone
		}
		c, f := zeroPast(x.Tensor.Body, depth+1)
		if f == fillNone {
			return nil, fillNone
		}
		sub := map[*te.Var]te.Index{}
		for i, a := range x.Tensor.Axes {
			sub[a] = x.Index[i]
		}
		c, ok := renameCond(c, sub)
		if !ok {
			return nil, fillNone
		}
		return c, f
	}
	return nil, fillNone
}

// constFill returns the fill of a constant: -inf or 0.
func constFill(e te.Expr) fill {
	c, ok := e.(*te.ConstExpr)
	if !ok || !c.DType.IsFloat() {
		return fillNone
	}
	switch {
	case math.IsInf(c.Value, -1):
		return fillNegInf
	case c.Value == 0:
		return fillZero
	}
	return fillNone
}

// renameCond rewrites the condition c, over a producer's axes, at the
// indexes sub gives them; false for a node it does not know.
func renameCond(c te.Expr, sub map[*te.Var]te.Index) (te.Expr, bool) {
	rename := func(ix te.Index) te.Index {
		return ix.Substitute(func(v *te.Var) (te.Index, bool) {
			s, ok := sub[v]
			return s, ok
		})
	}
	return rewriteCond(c, func(leaf te.Expr) (te.Expr, bool) {
		switch x := leaf.(type) {
		case *te.ConstExpr:
			return x, true
		case *te.IndexExpr:
			return &te.IndexExpr{Index: rename(x.Index)}, true
		case *te.Load:
			if !isScalarLoad(x) {
				return nil, false
			}
			ix := make([]te.Index, len(x.Index))
			for i, v := range x.Index {
				ix[i] = rename(v)
			}
			return &te.Load{Tensor: x.Tensor, Index: ix}, true
		}
		return nil, false
	})
}

// rewriteCond rebuilds the condition c, comparisons and logical operations
// over leaves and their negations, with each leaf (any other node) as leaf
// rewrites it. It reports false if leaf refuses a leaf or c has an
// arithmetic operation above its comparisons.
func rewriteCond(c te.Expr, leaf func(te.Expr) (te.Expr, bool)) (te.Expr, bool) {
	switch x := c.(type) {
	case *te.Unary:
		if x.Op != te.Not {
			return nil, false
		}
		y, ok := rewriteCond(x.X, leaf)
		return &te.Unary{Op: te.Not, X: y}, ok
	case *te.Binary:
		if !x.Op.IsComparison() && !x.Op.IsLogical() {
			return nil, false
		}
		a, okA := rewriteCond(x.X, leaf)
		b, okB := rewriteCond(x.Y, leaf)
		return &te.Binary{Op: x.Op, X: a, Y: b}, okA && okB
	}
	return leaf(c)
}

// KMaskOf returns the k mask of the contraction d: a Mask whose Live is a
// condition on the flat reduction coordinate K (and on the output
// coordinates and run-time scalars, as MaskOf's) that is false wherever a
// factor is exactly 0 (ZeroPast), so that a tile may skip those k, or nil
// when no factor has such a condition a tile can decide or the condition
// reads no run-time scalar (the positions of a decode step).
func KMaskOf(d Dims) *schedule.Mask {
	if d.Reduce == nil {
		return nil
	}
	mk := &schedule.Mask{
		M: &te.Var{Name: "m", Extent: max(d.M, 1)},
		N: &te.Var{Name: "n", Extent: max(d.N, 1)},
		B: &te.Var{Name: "b", Extent: max(d.Batch, 1)},
		K: &te.Var{Name: "k", Extent: max(d.K, 1)},
	}
	sub := map[*te.Var]te.Index{}
	flatten(sub, d.MAxes, mk.M)
	flatten(sub, d.NAxes, mk.N)
	flatten(sub, d.BatchAxes, mk.B)
	flatten(sub, d.Reduce.Axes, mk.K)
	batch := map[*te.Var]bool{}
	for _, a := range d.BatchAxes {
		batch[a] = true
	}
	for _, f := range []te.Expr{d.X, d.Y} {
		c, ok := ZeroPast(f)
		if !ok {
			continue
		}
		n := len(mk.Scalars)
		c, ok = substituteCond(mk, c, sub, batch)
		if !ok || !usesVar(c, mk.K) {
			mk.Scalars = mk.Scalars[:n]
			continue
		}
		if mk.Live == nil {
			mk.Live = c
		} else {
			mk.Live = &te.Binary{Op: te.And, X: mk.Live, Y: c}
		}
	}
	if mk.Live == nil || len(mk.Scalars) == 0 {
		return nil // a mask on indexes alone is left to the tiled path
	}
	return mk
}

// usesVar reports whether the condition c reads v.
func usesVar(c te.Expr, v *te.Var) bool {
	uses := false
	te.Walk(c, func(e te.Expr) bool {
		if x, ok := e.(*te.IndexExpr); ok && x.Index.Uses(v) {
			uses = true
		}
		return !uses
	})
	return uses
}
