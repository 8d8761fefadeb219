package contraction

import (
	"tec/schedule"
	"tec/te"
)

// A masked contraction is a contraction inside a select on its output
// indexes, as users write a causal or padding mask:
//
//	sc[h, i, j] = select(j <= i, sum[e](q[h, i, e] * k[h, j, e]), -1e30)
//
// It is tiled like any contraction, and the select is applied per output
// element in the tile's epilogue, with the rest of the body. A tile whose
// output index ranges make a guard's condition take the other branch
// throughout computes no products: it only writes the other branch (causal
// attention skips the tiles above the diagonal, about half the work).

// A guard's condition may also read run-time scalars: i32 inputs or params
// at indexes that are plain index expressions (`t <= pos[b]`, the
// positions of a decode step). A tile can decide such a condition at run
// time when the scalar's indexes use only the contraction's batch axes,
// which a tile holds fixed: the test loads the scalar once per tile and
// compares it with the tile's ranges (MaskOf, Mask.Scalars). Past pos[b],
// attention's tiles then cost nothing, so the step is O(pos), not O(T).

// Guard is a select around a masked contraction: the contraction is the
// select's Then branch when Want is true, its Else branch otherwise, so
// that its products are needed only where Cond has the value Want.
type Guard struct {
	Cond te.Expr
	Want bool
}

// MaskedReduce returns the one reduction of e that may be a contraction:
// the reduction reached from e's root without entering another reduction
// or a select's condition, through the branches of selects. It returns the
// guards of the selects on the way whose conditions read no tensor (the
// ones a tile can decide from its index ranges), and whether the reduction
// lies under any select (masked), so that it is computed at output points
// where the body does not use it. ok is false unless exactly one
// reduction is found this way and none is in a select's condition. A
// reduction node that occurs more than once gets no guards.
func MaskedReduce(e te.Expr) (r *te.Reduce, guards []Guard, masked, ok bool) {
	count := 0
	bad := false
	var path []Guard
	var walk func(e te.Expr, under bool)
	walk = func(e te.Expr, under bool) {
		switch x := e.(type) {
		case *te.Reduce:
			switch {
			case r == nil:
				r, masked, guards = x, under, append([]Guard(nil), path...)
			case r != x:
				bad = true
			}
			count++
		case *te.Select:
			if te.Contains(x.Cond, isReduce) {
				bad = true
				return
			}
			indexOnly := !te.HasLoad(x.Cond) || readsOnlyScalars(x.Cond)
			for _, branch := range []struct {
				e    te.Expr
				want bool
			}{{x.Then, true}, {x.Else, false}} {
				if indexOnly {
					path = append(path, Guard{Cond: x.Cond, Want: branch.want})
				}
				walk(branch.e, true)
				if indexOnly {
					path = path[:len(path)-1]
				}
			}
		case *te.Unary:
			walk(x.X, under)
		case *te.Binary:
			walk(x.X, under)
			walk(x.Y, under)
		case *te.Cast:
			walk(x.X, under)
		}
	}
	walk(e, false)
	if bad || r == nil {
		return nil, nil, false, false
	}
	if count > 1 {
		guards = nil
	}
	return r, guards, masked, true
}

// readsOnlyScalars reports whether every load in c is a run-time scalar: an
// i32 input or param whose indexes read no tensor.
func readsOnlyScalars(c te.Expr) bool {
	ok := true
	te.Walk(c, func(x te.Expr) bool {
		switch x := x.(type) {
		case *te.Load:
			if !isScalarLoad(x) {
				ok = false
			}
		case *te.Reduce:
			ok = false
		}
		return ok
	})
	return ok
}

// isScalarLoad reports whether l loads an i32 input or param at plain
// index expressions.
func isScalarLoad(l *te.Load) bool {
	if l.Tensor.Kind == te.Compute || l.Tensor.DType != te.I32 || l.IsGather() {
		return false
	}
	return true
}

// MaskOf returns the mask of the contraction d, or nil if it has no
// guards.
func MaskOf(d Dims) *schedule.Mask {
	if len(d.Guards) == 0 {
		return nil
	}
	mk := &schedule.Mask{
		M: &te.Var{Name: "m", Extent: d.M},
		N: &te.Var{Name: "n", Extent: d.N},
		B: &te.Var{Name: "b", Extent: d.Batch},
	}
	sub := map[*te.Var]te.Index{}
	flatten(sub, d.MAxes, mk.M)
	flatten(sub, d.NAxes, mk.N)
	flatten(sub, d.BatchAxes, mk.B)
	batch := map[*te.Var]bool{}
	for _, a := range d.BatchAxes {
		batch[a] = true
	}
	for _, g := range d.Guards {
		n := len(mk.Scalars)
		c, ok := substituteCond(mk, g.Cond, sub, batch)
		if !ok {
			mk.Scalars = mk.Scalars[:n]
			continue
		}
		if !g.Want {
			c = &te.Unary{Op: te.Not, X: c}
		}
		if mk.Live == nil {
			mk.Live = c
		} else {
			mk.Live = &te.Binary{Op: te.And, X: mk.Live, Y: c}
		}
	}
	if mk.Live == nil {
		return nil
	}
	return mk
}

// flatten maps each of axes to its digit of the row-major flat index v.
func flatten(sub map[*te.Var]te.Index, axes []*te.Var, v *te.Var) {
	stride := 1
	for i := len(axes) - 1; i >= 0; i-- {
		a := axes[i]
		x := te.VarIndex(v).Div(stride)
		if i > 0 {
			x = x.Mod(a.Extent)
		}
		sub[a] = x
		stride *= a.Extent
	}
}

// substituteCond rewrites the condition c over the flat coordinates, each
// run-time scalar as a variable of mk.Scalars, and reports false for a
// node a tile cannot decide (a scalar indexed by other than batch axes,
// which varies within a tile).
func substituteCond(mk *schedule.Mask, c te.Expr, sub map[*te.Var]te.Index, batch map[*te.Var]bool) (te.Expr, bool) {
	return rewriteCond(c, func(leaf te.Expr) (te.Expr, bool) {
		switch x := leaf.(type) {
		case *te.Load:
			if !isScalarLoad(x) {
				return nil, false
			}
			for _, ix := range x.Index {
				for _, v := range ix.Vars() {
					if !batch[v] {
						return nil, false
					}
				}
			}
			v := &te.Var{Name: x.Tensor.Name, Extent: 1 << 30}
			mk.Scalars = append(mk.Scalars, schedule.Scalar{Var: v, Load: x})
			return &te.IndexExpr{Index: te.VarIndex(v)}, true
		case *te.ConstExpr:
			return x, true
		case *te.IndexExpr:
			return &te.IndexExpr{Index: x.Index.Simplify().Substitute(func(v *te.Var) (te.Index, bool) {
				s, ok := sub[v]
				return s, ok
			})}, true
		}
		return nil, false
	})
}
