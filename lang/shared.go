package lang

import (
	"tec/lang/syntax"
	"tec/te"
)

// A scalar function's parameter is replaced by its argument's expression
// wherever the function's expression uses it, so swish(v) = v * sigmoid(v)
// applied to sum[d](x[i, d] * w[d]) + b[i] holds that sum twice: as one
// shared node, but every later stage walks expressions as trees and would
// compute the sum twice (and nested calls, gelu(gelu(...)), grow
// exponentially). An argument that the function uses more than once is
// therefore bound once when it is worth it — it contains a reduction, or is
// an expression of at least bindOnceCost nodes: inlining notes it
// (noteBindOnce), and once the ranges of the definition are known, compute
// makes it a tensor of its own over the variables it uses, loaded where the
// argument was (bindShared). An argument whose loads are proven in bounds
// only under the conditions of the selects around the call is computed
// under those conditions, select(c, arg, 0): as a tensor it is evaluated
// for every value of its variables. Where the conditions name variables
// the argument does not use, or do not prove its loads, it stays inlined.

// bindOnceCost is the size, in expression nodes, from which an argument
// that a scalar function uses more than once is bound once even without a
// reduction.
const bindOnceCost = 256

// maxCost caps scalar.cost, so that it cannot overflow.
const maxCost = 1 << 30

// noteBindOnce records the arguments of a call of the scalar function fn
// that are to be bound once: those fn uses more than once that contain a
// reduction or are expensive. The tensor of such an argument is named
// after the call and the parameter, path/v.
func (c *checker) noteBindOnce(ec *elemCtx, fn *fnDecl, args []scalar, path string) {
	if ec.dead {
		return
	}
	for i, p := range fn.decl.Params {
		a := args[i]
		if a.k != sExpr || !a.reduces && a.cost < bindOnceCost {
			continue
		}
		if _, noted := c.bindOnce[a.expr]; noted || countUses(fn.decl.Expr, p.Name.Name) < 2 {
			continue
		}
		if c.bindOnce == nil {
			c.bindOnce = map[te.Expr]bindSite{}
		}
		c.bindOnce[a.expr] = bindSite{name: joinName(path, p.Name.Name), facts: ec.facts}
	}
}

// bindSite is an argument to be bound once: the name of its tensor and the
// facts of the selects around the call, under which its loads are proven.
type bindSite struct {
	name  string
	facts *factList
}

// countUses returns the number of times e names name, stopping at two.
func countUses(e syntax.Expr, name string) int {
	n := 0
	var walk func(e syntax.Expr)
	walk = func(e syntax.Expr) {
		if n >= 2 || e == nil {
			return
		}
		switch e := e.(type) {
		case *syntax.Name:
			if e.Name == name {
				n++
			}
		case *syntax.Unary:
			walk(e.X)
		case *syntax.Binary:
			walk(e.X)
			walk(e.Y)
		case *syntax.Paren:
			walk(e.X)
		case *syntax.Call:
			walk(e.Fun)
			for _, a := range e.Args {
				walk(a)
			}
		case *syntax.IndexExpr:
			walk(e.X)
			for _, a := range e.Indices {
				walk(a)
			}
		case *syntax.Reduce:
			walk(e.Body)
		case *syntax.ListExpr:
			for _, a := range e.Elems {
				walk(a)
			}
		case *syntax.Comprehension:
			walk(e.Elem)
			walk(e.Range)
		case *syntax.RangeExpr:
			walk(e.Lo)
			walk(e.Hi)
		}
	}
	walk(e)
	return n
}

// bindShared returns body with every node that noteBindOnce recorded made
// a tensor of its own and loaded in its place, where that is sound: its
// loads are in bounds for every value of the variables it uses, and the
// tensor is within te.MaxElements. Nodes that are shared stay shared.
func (c *checker) bindShared(file string, span syntax.Span, body te.Expr) te.Expr {
	if len(c.bindOnce) == 0 {
		return body
	}
	done := map[te.Expr]te.Expr{}
	var rebuild func(e te.Expr) te.Expr
	rebuild = func(e te.Expr) te.Expr {
		if r, ok := done[e]; ok {
			return r
		}
		r := te.MapChildren(e, rebuild)
		if site, ok := c.bindOnce[e]; ok {
			if l := c.hoist(file, span, r, site); l != nil {
				r = l
			}
		}
		done[e] = r
		return r
	}
	return rebuild(body)
}

// hoist makes e a compute tensor over the variables it uses freely, named
// and guarded as site says, and returns the load of it that replaces e, or
// nil if that is not sound.
func (c *checker) hoist(file string, span syntax.Span, e te.Expr, site bindSite) te.Expr {
	free := freeVars(e)
	size := 1
	for _, v := range free {
		if v.Extent <= 0 || size > te.MaxElements/v.Extent {
			return nil
		}
		size *= v.Extent
	}
	if !loadsInBounds(e) {
		if e = guarded(e, free, site.facts); e == nil {
			return nil
		}
	}
	axes := make([]*te.Var, len(free))
	sub := make(map[*te.Var]te.Index, len(free))
	ix := make([]te.Index, len(free))
	for d, v := range free {
		axes[d] = te.NewVar(v.Name, v.Extent)
		sub[v] = te.VarIndex(axes[d])
		ix[d] = te.VarIndex(v)
	}
	body := substituteVars(e, sub)
	dt := dagType(body)
	if cast, ok := body.(*te.Cast); ok {
		dt = cast.To
	}
	shape := make([]int, len(axes))
	for d, v := range axes {
		shape[d] = v.Extent
	}
	t := c.prog.add(&te.Tensor{Kind: te.Compute, DType: dt, Shape: shape, Axes: axes, Body: body}, site.name, file, span)
	return &te.Load{Tensor: t, Index: ix}
}

// guarded returns select(c, e, 0) with c the conjunction of the facts that
// use only the variables in free, when those prove every load of e in
// bounds, or nil. e is a number (a bool stays inlined).
func guarded(e te.Expr, free []*te.Var, facts *factList) te.Expr {
	uses := map[*te.Var]bool{}
	for _, v := range free {
		uses[v] = true
	}
	var cond te.Expr
	var kept *factList
next:
	for f := facts; f != nil; f = f.next {
		for _, v := range f.f.ix.Vars() {
			if !uses[v] {
				continue next // a variable the tensor does not have
			}
		}
		kept = &factList{f: f.f, next: kept}
		x := &te.Binary{Op: binaryOps[f.f.op], X: &te.IndexExpr{Index: f.f.ix}, Y: &te.ConstExpr{Value: 0, DType: te.I32}}
		if cond == nil {
			cond = x
		} else {
			cond = &te.Binary{Op: te.And, X: cond, Y: x}
		}
	}
	dt := dagType(e)
	if cond == nil || dt == te.Bool {
		return nil
	}
	ok := true
	walkDAG(e, func(x te.Expr) {
		l, isLoad := x.(*te.Load)
		if !isLoad || !ok {
			return
		}
		if l.IsGather() {
			ok = false
			return
		}
		for d, ix := range l.Index {
			if r, dead := indexRange(ix, kept); !dead && (r.lo < 0 || r.hi >= l.Tensor.Shape[d]) {
				ok = false
			}
		}
	})
	if !ok {
		return nil
	}
	return &te.Select{Cond: cond, Then: e, Else: &te.ConstExpr{Value: 0, DType: dt}}
}

// walkDAG calls f once for every distinct node of e, parents first, in
// the order of a depth-first walk. The walk keeps its own stack, not Go's:
// a sum of millions of terms is a tree that deep.
func walkDAG(e te.Expr, f func(te.Expr)) {
	seen := map[te.Expr]bool{}
	stack := []te.Expr{e}
	var children []te.Expr
	for len(stack) > 0 {
		e := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[e] {
			continue
		}
		seen[e] = true
		f(e)
		children = children[:0]
		te.MapChildren(e, func(x te.Expr) te.Expr {
			children = append(children, x)
			return x
		})
		for i := len(children) - 1; i >= 0; i-- { // the first child on top
			stack = append(stack, children[i])
		}
	}
}

// freeVars returns the variables that e uses and does not reduce over, in
// order of first use.
func freeVars(e te.Expr) []*te.Var {
	bound := map[*te.Var]bool{}
	walkDAG(e, func(x te.Expr) {
		if r, ok := x.(*te.Reduce); ok {
			for _, v := range r.Axes {
				bound[v] = true
			}
		}
	})
	var free []*te.Var
	seen := map[*te.Var]bool{}
	use := func(ix te.Index) {
		for _, v := range ix.Vars() {
			if !bound[v] && !seen[v] {
				seen[v] = true
				free = append(free, v)
			}
		}
	}
	walkDAG(e, func(x te.Expr) {
		switch x := x.(type) {
		case *te.Load:
			for _, ix := range x.Index {
				use(ix)
			}
		case *te.IndexExpr:
			use(x.Index)
		}
	})
	return free
}

// loadsInBounds reports, as te.LoadsInBounds, whether every load of e is in
// bounds for every value of its variables, visiting shared nodes once.
func loadsInBounds(e te.Expr) bool {
	ok := true
	walkDAG(e, func(x te.Expr) {
		if l, isLoad := x.(*te.Load); isLoad && ok {
			ok = te.LoadsInBounds(l) // false for a gather
		}
	})
	return ok
}

// substituteVars returns e with the variables of sub replaced in every
// index, keeping shared nodes shared (te.Map).
func substituteVars(e te.Expr, sub map[*te.Var]te.Index) te.Expr {
	subst := func(ix te.Index) te.Index {
		return ix.Substitute(func(v *te.Var) (te.Index, bool) {
			r, ok := sub[v]
			return r, ok
		})
	}
	return te.Map(e, func(x te.Expr) te.Expr {
		switch x := x.(type) {
		case *te.Load:
			ix := make([]te.Index, len(x.Index))
			for d, i := range x.Index {
				ix[d] = subst(i)
			}
			return &te.Load{Tensor: x.Tensor, Index: ix, Gather: x.Gather}
		case *te.IndexExpr:
			return &te.IndexExpr{Index: subst(x.Index)}
		}
		return x
	})
}

// dagType returns te.TypeOf(e), typing each distinct node once.
func dagType(e te.Expr) te.DType {
	types := map[te.Expr]te.DType{}
	var typeOf func(x te.Expr) te.DType
	typeOf = func(x te.Expr) te.DType {
		if t, ok := types[x]; ok {
			return t
		}
		t := te.NodeType(x, typeOf)
		types[x] = t
		return t
	}
	return typeOf(e)
}
