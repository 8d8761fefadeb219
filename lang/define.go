package lang

import (
	"tec/lang/syntax"
	"tec/te"
)

// defineTensor lowers y[i, j] = body where ...: the indices are fresh index
// variables, the body an element expression; ranges are inferred, every access
// proven in bounds, and y bound to the new tensor.
func (c *checker) defineTensor(sc *scope, s *syntax.AssignStmt) {
	ec := newElemCtx()
	ok := c.whereRanges(sc, ec, s.Where)
	c.defineRest(sc, sc.child(), ec, s, ok)
}

// whereRanges records the ranges that where clauses state in ec, and
// reports whether they are all well formed.
func (c *checker) whereRanges(sc *scope, ec *elemCtx, where []*syntax.WhereClause) bool {
	file := sc.path
	ok := true
	for _, w := range where {
		if prev, dup := ec.where[w.Var.Name]; dup {
			d := c.errorAt(file, w.Var.Span, "redefined", "", "the range of %s is given twice", w.Var.Name)
			related(d, file, prev.span, "first given here")
			ok = false
			continue
		}
		lo, hi, good := c.evalRange(sc, w.Range)
		if !good {
			ok = false
			continue
		}
		switch {
		case lo != 0:
			c.errorAt(file, w.Range.Lo.NodeSpan(), "range", "write the offset into the index instead, e.g. x[i + 2]",
				"a where range must start at 0, but %s starts at %d", c.text(file, w.Range.Span), lo)
			ok = false
			continue
		case hi <= 0:
			c.errorAt(file, w.Range.Span, "range", "", "the range %s is empty: %s must be positive", c.text(file, w.Range.Span), c.text(file, w.Range.Hi.NodeSpan()))
			ok = false
			continue
		}
		ec.where[w.Var.Name] = &whereRange{name: w.Var.Name, extent: hi, file: file, span: w.Var.Span}
	}
	return ok
}

// defineRest is the part of defineTensor after the where clauses.
func (c *checker) defineRest(sc, ds *scope, ec *elemCtx, s *syntax.AssignStmt, ok bool) {
	file := sc.path
	t := s.Targets[0]
	axes := make([]*te.Var, 0, len(t.Indices))
	for _, ie := range t.Indices {
		n, isName := ie.(*syntax.Name)
		if !isName {
			c.errorAt(file, ie.NodeSpan(), "type", "write a fresh name per dimension, y[i, j] = ..., and put offsets into the body's indexes",
				"the indices of a tensor definition must be fresh names, but %s is not a name", c.text(file, ie.NodeSpan()))
			ok = false
			continue
		}
		if prev, dup := ds.vars[n.Name]; dup {
			d := c.errorAt(file, n.Span, "redefined", "give each dimension its own index variable", "index variable %s is used twice in %s", n.Name, c.text(file, t.Span))
			related(d, file, prev.def, "first used here")
			ok = false
			continue
		}
		iv := &indexVar{v: te.NewVar(n.Name, 0), name: n.Name, file: file, span: n.Span}
		if w := ec.where[n.Name]; w != nil {
			iv.where, w.used = w, true
		}
		ec.addVar(iv)
		ds.bind(n.Name, iv, n.Span, nil)
		c.noteIndexVar(file, n.Ident, iv)
		axes = append(axes, iv.v)
	}
	body := c.lowerElem(ec, ds, s.Value)
	for _, w := range s.Where {
		if r := ec.where[w.Var.Name]; r != nil && r.span == w.Var.Span {
			for _, iv := range ec.vars {
				if iv.where == r {
					c.noteWhere(file, w.Var, iv)
					break
				}
			}
		}
	}
	for _, w := range s.Where {
		if r := ec.where[w.Var.Name]; r != nil && !r.used && r.span == w.Var.Span {
			c.errorAt(file, w.Var.Span, "undefined", suggest(w.Var.Name, varNames(ec)),
				"where gives the range of %s, which is not an index variable or reduction axis of this statement", w.Var.Name)
			ok = false
		}
	}
	if body.k == sBad || !ok {
		c.assignLocal(sc, t.Name, poison{})
		return
	}
	if !c.resolveRanges(ec) {
		c.assignLocal(sc, t.Name, poison{})
		return
	}
	c.checkBounds(ec)
	tv := c.compute(file, s.Span, axes, body, c.stmtName())
	c.prog.bound[tv.t] = true
	c.assignLocal(sc, t.Name, tv)
}

func varNames(ec *elemCtx) []string {
	var ns []string
	for _, iv := range ec.vars {
		ns = append(ns, iv.name)
	}
	return ns
}
