package te

import "slices"

// Map returns e rebuilt bottom-up by f: the children of a node are mapped
// first, the node is rebuilt over them if any changed (else kept), and f's
// result for that node takes its place. Each distinct node is mapped once,
// so that a node shared in e (an inlined function's argument used twice,
// a reduction shared among its readers) stays one node, and f sees it
// once. The run-time indexes of a gather (Load.Gather) are children of
// its load; a reduction's axes are kept.
func Map(e Expr, f func(Expr) Expr) Expr {
	done := map[Expr]Expr{}
	var visit func(Expr) Expr
	visit = func(e Expr) Expr {
		if y, ok := done[e]; ok {
			return y
		}
		y := f(MapChildren(e, visit))
		done[e] = y
		return y
	}
	return visit(e)
}

// Replace returns e with its sub-expressions replaced top-down: where
// with returns an expression for a node, that expression takes the node's
// place and the node's children are not visited; where it returns nil,
// the node's children are replaced in turn and the node is rebuilt over
// them if any changed (else kept). A node shared in e is visited at each
// of its occurrences, so that with may give each its own replacement (a
// reduction copied into two places with fresh axes).
func Replace(e Expr, with func(Expr) Expr) Expr {
	var visit func(Expr) Expr
	visit = func(e Expr) Expr {
		if y := with(e); y != nil {
			return y
		}
		return MapChildren(e, visit)
	}
	return visit(e)
}

// MapChildren returns e with each child x replaced by f(x), or e itself
// if no child changes: the one step of Map and Replace, for a rewriter
// that needs more than they give (the original node, a memo of its own).
// The run-time indexes of a gather are a load's children, a reduction's
// body is its child, and its axes are kept.
func MapChildren(e Expr, f func(Expr) Expr) Expr {
	switch e := e.(type) {
	case *Load:
		if len(e.Gather) == 0 {
			return e
		}
		g := make([]Expr, len(e.Gather))
		changed := false
		for d, x := range e.Gather {
			if x != nil {
				g[d] = f(x)
				changed = changed || g[d] != x
			}
		}
		if changed {
			return &Load{Tensor: e.Tensor, Index: e.Index, Gather: g}
		}
	case *Unary:
		if x := f(e.X); x != e.X {
			return &Unary{Op: e.Op, X: x}
		}
	case *Binary:
		if x, y := f(e.X), f(e.Y); x != e.X || y != e.Y {
			return &Binary{Op: e.Op, X: x, Y: y}
		}
	case *Select:
		if c, a, b := f(e.Cond), f(e.Then), f(e.Else); c != e.Cond || a != e.Then || b != e.Else {
			return &Select{Cond: c, Then: a, Else: b}
		}
	case *Cast:
		if x := f(e.X); x != e.X {
			return &Cast{To: e.To, X: x}
		}
	case *Reduce:
		if b := f(e.Body); b != e.Body {
			return &Reduce{Op: e.Op, Axes: e.Axes, Body: b}
		}
	}
	return e
}

// Contains reports whether some node of e satisfies pred, visiting each
// distinct node at most once and stopping at the first that does.
func Contains(e Expr, pred func(Expr) bool) bool {
	seen := map[Expr]bool{}
	found := false
	Walk(e, func(x Expr) bool {
		if found || seen[x] {
			return false
		}
		seen[x] = true
		found = pred(x)
		return !found
	})
	return found
}

// HasReduce reports whether e contains a reduction.
func HasReduce(e Expr) bool {
	return Contains(e, func(x Expr) bool {
		_, ok := x.(*Reduce)
		return ok
	})
}

// TopReduces returns the distinct reductions of e that are not inside
// another reduction or a select, in order of first occurrence.
func TopReduces(e Expr) []*Reduce {
	var rs []*Reduce
	Walk(e, func(x Expr) bool {
		switch x := x.(type) {
		case *Reduce:
			if !slices.Contains(rs, x) { // a shared node is one reduction
				rs = append(rs, x)
			}
			return false
		case *Select:
			return false
		}
		return true
	})
	return rs
}

// InvariantReductions returns the distinct reductions nested in r's body,
// not inside another reduction, that use none of r's axes and load only
// in bounds, in order of first occurrence: each has one value at every
// point of r, so that code may compute it once before r's loops (even
// where a select in r's body would not choose it) instead of at every
// point. A flash-decoding merge's rescaling by the max over the chunks,
// nested in its sums over them, is one.
func InvariantReductions(r *Reduce) []*Reduce {
	var rs []*Reduce
	Walk(r.Body, func(x Expr) bool {
		n, ok := x.(*Reduce)
		if !ok {
			return true
		}
		if slices.Contains(rs, n) {
			return false
		}
		used := UsedVars(n)
		if !slices.ContainsFunc(r.Axes, func(a *Var) bool { return used[a] }) && LoadsInBounds(n) {
			rs = append(rs, n)
		}
		return false
	})
	return rs
}
