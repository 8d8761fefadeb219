package transform

import "tec/te"

// A rewriter copies an expression (expr) with every variable v that sub
// maps replaced by sub[v], loads redirected by load, and the axes of reductions renamed to
// fresh variables (so that an expression copied into two places keeps its
// reductions apart). load may return a replacement for a load whose indexes
// have already been substituted, or nil to keep it.
type rewriter struct {
	sub  map[*te.Var]te.Index
	load func(l *te.Load) te.Expr
	// bound holds the (fresh) axes of the reductions around the expression
	// being rewritten, innermost last.
	bound []*te.Var
}

func (r *rewriter) index(x te.Index) te.Index {
	if len(r.sub) == 0 {
		return x
	}
	return x.Substitute(func(v *te.Var) (te.Index, bool) {
		y, ok := r.sub[v]
		return y, ok
	})
}

// expr returns the rewriting of e (te.Replace): index expressions, loads
// and reductions are made anew, the other nodes rebuilt over them.
func (r *rewriter) expr(e te.Expr) te.Expr {
	return te.Replace(e, r.replace)
}

// replace returns the rewriting of e if e is an index expression, a load
// or a reduction, else nil.
func (r *rewriter) replace(e te.Expr) te.Expr {
	switch e := e.(type) {
	case *te.IndexExpr:
		return &te.IndexExpr{Index: r.index(e.Index)}
	case *te.Load:
		l := &te.Load{Tensor: e.Tensor, Index: make([]te.Index, len(e.Index))}
		for d, x := range e.Index {
			l.Index[d] = r.index(x)
		}
		if e.Gather != nil {
			l.Gather = make([]te.Expr, len(e.Gather))
			for d, g := range e.Gather {
				if g != nil {
					l.Gather[d] = r.expr(g)
				}
			}
		}
		if r.load != nil {
			if y := r.load(l); y != nil {
				return y
			}
		}
		return l
	case *te.Reduce:
		axes := make([]*te.Var, len(e.Axes))
		saved := make([]te.Index, len(e.Axes))
		had := make([]bool, len(e.Axes))
		if r.sub == nil {
			r.sub = map[*te.Var]te.Index{}
		}
		for i, a := range e.Axes {
			axes[i] = te.NewVar(a.Name, a.Extent)
			saved[i], had[i] = r.sub[a]
			r.sub[a] = te.VarIndex(axes[i])
		}
		r.bound = append(r.bound, axes...)
		body := r.expr(e.Body)
		r.bound = r.bound[:len(r.bound)-len(axes)]
		for i, a := range e.Axes {
			if had[i] {
				r.sub[a] = saved[i]
			} else {
				delete(r.sub, a)
			}
		}
		return &te.Reduce{Op: e.Op, Axes: axes, Body: body}
	}
	return nil
}

// size counts the nodes of e.
func size(e te.Expr) int {
	n := 0
	te.Walk(e, func(te.Expr) bool { n++; return true })
	return n
}

// ops counts the arithmetic nodes of e outside reductions.
func ops(e te.Expr) int {
	n := 0
	te.Walk(e, func(x te.Expr) bool {
		switch x.(type) {
		case *te.Unary, *te.Binary, *te.Select:
			n++
		case *te.Reduce:
			n += 1 << 20
			return false
		}
		return true
	})
	return n
}

// rebuild returns the program of tensors ts (in a valid order after
// sorting: every tensor after those it loads), keeping those that outputs
// need, with IDs renumbered.
func rebuild(name string, ts []*te.Tensor, outputs []*te.Tensor) *te.Program {
	live := map[*te.Tensor]bool{}
	for _, t := range outputs {
		live[t] = true
	}
	for _, t := range ts {
		if t.Update != nil { // an in-place update is a result of its own
			live[t] = true
		}
	}
	for i := len(ts) - 1; i >= 0; i-- {
		t := ts[i]
		if live[t] && t.Body != nil {
			for _, u := range te.Inputs(t.Body) {
				live[u] = true
			}
		}
	}
	p := &te.Program{Name: name, Outputs: outputs}
	// Keep every placeholder (the caller feeds them all) and the live
	// computes, each after what it loads.
	placed := map[*te.Tensor]bool{}
	var visit func(t *te.Tensor)
	visit = func(t *te.Tensor) {
		if placed[t] {
			return
		}
		placed[t] = true
		if t.Body != nil {
			for _, u := range te.Inputs(t.Body) {
				visit(u)
			}
		}
		t.ID = len(p.Tensors)
		p.Tensors = append(p.Tensors, t)
	}
	for _, t := range ts {
		if t.Kind != te.Compute || live[t] {
			visit(t)
		}
	}
	return p
}

// relinked returns a copy of t with its body, and the run-time index parts
// of its in-place update, rewritten by r.
func relinked(t *te.Tensor, r *rewriter) *te.Tensor {
	u := copyTensor(t, r.expr(t.Body))
	if u.Update != nil {
		u.Update = relinkUpdate(u.Update, r)
	}
	return u
}

// copyTensor returns a shallow copy of t with a new body.
func copyTensor(t *te.Tensor, body te.Expr) *te.Tensor {
	u := *t
	u.Body = body
	return &u
}
