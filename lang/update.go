package lang

import (
	"fmt"

	"tec/lang/syntax"
	"tec/te"
)

// updateSite is an in-place update already lowered, for proving that the
// updates of one input write disjoint slots.
type updateSite struct {
	target *te.Tensor
	dest   *te.Load
	file   string
	span   syntax.Span
}

// execUpdate lowers `update x[i, pos[b], j] = body where ...`: the names in
// brackets that are not defined in scope (and those of the where clauses)
// are fresh index variables, the other indices expressions over them, a
// run-time part read from an i32 tensor included; the body is an element
// expression. The result is a compute tensor over the fresh variables
// whose elements are written into the input x (te.Update).
func (c *checker) execUpdate(sc *scope, s *syntax.AssignStmt) {
	file := sc.path
	t := s.Targets[0]
	c.enterStmt(t.Name.Name+"/update", s.Value)
	tv, ok := c.updateTarget(sc, t)
	if !ok {
		return
	}
	ec := newElemCtx()
	ok = c.whereRanges(sc, ec, s.Where)
	ds := sc.child()
	var axes []*te.Var
	fresh := func(n syntax.Ident) {
		iv := &indexVar{v: te.NewVar(n.Name, 0), name: n.Name, file: file, span: n.Span}
		if w := ec.where[n.Name]; w != nil {
			iv.where, w.used = w, true
		}
		ec.addVar(iv)
		ds.bind(n.Name, iv, n.Span, nil)
		c.noteIndexVar(file, n, iv)
		axes = append(axes, iv.v)
	}
	for _, ie := range t.Indices {
		if n, isName := ie.(*syntax.Name); isName && ds.lookupLocal(n.Name) == nil && !c.defined(sc, n.Name) {
			fresh(n.Ident)
		}
	}
	for _, w := range s.Where {
		if r := ec.where[w.Var.Name]; r != nil && !r.used && r.span == w.Var.Span && ds.lookupLocal(w.Var.Name) == nil {
			fresh(w.Var)
		}
	}
	name := c.text(file, t.Name.Span)
	n := len(ec.loads)
	dest := c.access(ec, ds, tv, t.Indices, t.Span, name)
	if len(ec.loads) > n { // the slot's access comes after its indexes'
		ec.loads[len(ec.loads)-1].write = true
	}
	body := c.lowerElem(ec, ds, s.Value)
	if dest.k == sBad || body.k == sBad || !ok || !c.resolveRanges(ec) {
		return
	}
	c.checkBounds(ec)
	l, isLoad := dest.expr.(*te.Load)
	if dest.k != sExpr || !isLoad {
		return
	}
	if u := computedIndex(l); u != nil {
		c.errorAt(file, t.Span, "update", "write the index from the inputs it is computed from, e.g. pos[b] + 1",
			"the run-time index of update %s reads %s, a computed tensor; an update's index may read only inputs and params", c.text(file, t.Span), u.Name)
		return
	}
	if v := undetermined(axes, l); v != nil {
		c.errorAt(file, t.Span, "update", fmt.Sprintf("write %s alone as one of the indices, so that each element has a slot of its own", v.Name),
			"update %s writes some slots more than once: the slot does not determine %s", c.text(file, t.Span), v.Name)
		return
	}
	site := &updateSite{target: tv.t, dest: l, file: file, span: t.Span}
	for _, prev := range c.prog.updates {
		if prev.target == tv.t && !disjoint(prev.dest, l) {
			d := c.errorAt(file, t.Span, "update", "update each slot once per step: make a compile-time index differ",
				"update %s may write a slot of %s that an earlier update writes", c.text(file, t.Span), tv.t.Name)
			related(d, prev.file, prev.span, "the earlier update")
			return
		}
	}
	c.prog.updates = append(c.prog.updates, site)
	u := c.compute(file, s.Span, axes, body, c.stmtName())
	u.t.Update = &te.Update{Target: tv.t, Index: l.Index, Gather: l.Gather}
	c.prog.bound[u.t] = true
	c.prog.updated(tv.t)
}

// updateTarget returns the tensor an update writes: an input, or a view of
// one.
func (c *checker) updateTarget(sc *scope, t *syntax.Target) (*tensorVal, bool) {
	file := sc.path
	v := c.lookup(sc, t.Name)
	switch v := v.(type) {
	case poison:
		return nil, false
	case *tensorVal:
		if v.t.Kind == te.Input {
			return v, true
		}
		kind := "a computed tensor"
		if v.t.Kind == te.Param {
			kind = "a param"
		}
		d := c.errorAt(file, t.Name.Span, "update", "only an input is updated in place: declare it 'input "+v.t.Name+": ...'",
			"update %s: %s is %s, not an input", t.Name.Name, t.Name.Name, kind)
		if p := c.prog.placeholders[v.t.Name]; p != nil && p.t == v.t {
			related(d, p.file, p.span, "%s is declared here", v.t.Name)
		}
	default:
		c.errorAt(file, t.Name.Span, "update", "", "update %s: %s is %s, not an input", t.Name.Name, t.Name.Name, describe(v))
	}
	return nil, false
}

// defined reports whether name is bound in sc or declared at the top level
// of its file, so that it is not a fresh index variable of an update.
func (c *checker) defined(sc *scope, name string) bool {
	if sc.lookupLocal(name) != nil {
		return true
	}
	if sc.file != nil && sc.file.lookupTop(name) != nil {
		return true
	}
	return lookupBuiltin(name) != nil
}

// undetermined returns an axis that no dimension of the slot l determines
// (an index a·v + c with a != 0, known at compile time), or nil when the
// slot determines every axis, so that no two elements share a slot.
func undetermined(axes []*te.Var, l *te.Load) *te.Var {
	for _, v := range axes {
		found := false
		for d, x := range l.Index {
			if l.Gathered(d) != nil {
				continue
			}
			x = x.Simplify()
			if len(x.Terms) == 1 && x.Terms[0].Atom.Op == te.AtomVar && x.Terms[0].Atom.Var == v && x.Terms[0].Coef != 0 {
				found = true
				break
			}
		}
		if !found {
			return v
		}
	}
	return nil
}

// computedIndex returns a computed tensor that a run-time index of the
// slot l reads, or nil when they read only placeholders: the updates are
// applied after every kernel of the step, when a computed index may be
// gone (inlined into its readers).
func computedIndex(l *te.Load) *te.Tensor {
	var found *te.Tensor
	for _, g := range l.Gather {
		if g == nil {
			continue
		}
		for _, u := range te.Inputs(g) {
			if u.Kind == te.Compute && found == nil {
				found = u
			}
		}
	}
	return found
}

// disjoint reports whether two updates of one input provably write
// different slots: some dimension has a different compile-time index in
// each.
func disjoint(a, b *te.Load) bool {
	for d := range a.Index {
		if a.Gathered(d) != nil || b.Gathered(d) != nil {
			continue
		}
		x, xc := a.Index[d].Simplify().IsConst()
		y, yc := b.Index[d].Simplify().IsConst()
		if xc && yc && x != y {
			return true
		}
	}
	return false
}
