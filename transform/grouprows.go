package transform

import (
	"slices"

	"tec/te"
)

// Grouped rows: in a contraction whose one factor reads an axis n of the
// output plainly and the other only as n / G,
//
//	sc[b, n, t] = sum[e](q[b, n, e] * k[b, n / G, t, e])
//
// (grouped-query attention's scores: G query heads share a key head),
// the G points n of a group read the same elements of the second factor.
// Split n into n / G and n % G, adjacent,
//
//	sc[b, g, h, t] = sum[e](q[b, g*G + h, e] * k[b, g, t, e])
//
// and h is read by the first factor alone: a row of the contraction (its
// M), so that a matrix-vector tile takes the group's G rows and loads each
// element of k once for all of them, where a tile per head loaded it G
// times. The tensor's elements keep their places in memory (n = g*G + h),
// and its readers load [..., x / G, x % G, ...] where they loaded
// [..., x, ...].

// maxRowGroup bounds the rows that grouping gives a contraction (the
// partitioner's matrix-vector tiles take at most 8 rows, 16 on tensor
// cores).
const maxRowGroup = 8

// SharedRows returns the position of an axis n of the contraction t and a
// group size G > 1 such that every load in t's sum that uses n reads it as
// n itself or only as n / G, at least one of each, and G divides n's
// extent: the G points of each group read the latter loads' elements in
// common (see the note above). It returns 0, 0 when there is none, and for
// a tensor that is not a computed sum (an input, an in-place update).
func SharedRows(t *te.Tensor) (int, int) {
	return sharedAxis(t, maxRowGroup)
}

// sharedAxis is SharedRows for groups of at most maxGroup points.
func sharedAxis(t *te.Tensor, maxGroup int) (int, int) {
	if t.Kind != te.Compute || t.Update != nil {
		return 0, 0
	}
	var reds []*te.Reduce
	te.Walk(t.Body, func(x te.Expr) bool {
		r, isReduce := x.(*te.Reduce)
		if isReduce {
			reds = append(reds, r)
		}
		return !isReduce
	})
	if len(reds) != 1 || reds[0].Op != te.Sum {
		return 0, 0
	}
	for ai, a := range t.Axes {
		if g := sharedBy(reds[0].Body, a); g > 1 && g <= maxGroup && a.Extent%g == 0 {
			return ai, g
		}
	}
	return 0, 0
}

// sharedBy returns G when every load in e that uses a reads it either as
// a alone in some dimension (a direct load) or only as a / G (a shared
// load), and e has loads of both kinds; 0 otherwise.
func sharedBy(e te.Expr, a *te.Var) int {
	g, direct, shared, ok := 0, false, false, true
	te.Walk(e, func(x te.Expr) bool {
		l, isLoad := x.(*te.Load)
		if !isLoad || !ok {
			return ok
		}
		plain, quotient := false, false
		for _, ix := range l.Index {
			if !ix.Uses(a) {
				continue
			}
			if v, isVar := ix.AsVar(); isVar && v == a {
				plain = true
				continue
			}
			for _, t := range ix.Terms {
				switch {
				case t.Atom.Op == te.AtomDiv && t.Atom.Arg.Equal(te.VarIndex(a)) && (g == 0 || g == t.Atom.Divisor):
					g, quotient = t.Atom.Divisor, true
				case t.Atom.Op == te.AtomVar && t.Atom.Var != a, t.Atom.Op != te.AtomVar && !t.Atom.Arg.Uses(a):
				default:
					ok = false
				}
			}
		}
		for _, x := range l.Gather {
			if x != nil && te.UsedVars(x)[a] {
				ok = false
			}
		}
		direct = direct || plain && !quotient
		shared = shared || quotient && !plain
		if plain && quotient {
			ok = false
		}
		return ok
	})
	if !ok || !direct || !shared {
		return 0
	}
	return g
}

// GroupRows returns p with the axis that SharedRows finds split in each
// tensor that group accepts (see the note above); tensors without such an
// axis stay as they are. An output of p keeps its name and shape: it is
// computed grouped, as NAME/rows, and copied back. p is not modified.
func GroupRows(p *te.Program, group func(*te.Tensor) bool) *te.Program {
	q, _ := groupRows(p, func(t *te.Tensor) (int, int) {
		if !group(t) {
			return 0, 0
		}
		return SharedRows(t)
	})
	return q
}

// groupRows returns p with the axis at dim of each tensor t for which
// find returns dim, g with g > 1 split into groups of g (GroupRows), and
// the tensor of the new program that each compute tensor of p became.
func groupRows(p *te.Program, find func(*te.Tensor) (dim, g int)) (*te.Program, map[*te.Tensor]*te.Tensor) {
	splits := map[*te.Tensor]axisSplit{}
	for _, t := range p.Tensors {
		if dim, g := find(t); g > 1 {
			splits[t] = axisSplit{dim: dim, g: g}
		}
	}
	return splitAxes(p, splits)
}

// axisSplit is the axis at dim of a tensor split into groups of g.
type axisSplit struct{ dim, g int }

// splitAxes returns p with the axis of each tensor in splits split into
// its groups (see groupRows), and the tensor of the new program that each
// compute tensor of p became.
func splitAxes(p *te.Program, splits map[*te.Tensor]axisSplit) (*te.Program, map[*te.Tensor]*te.Tensor) {
	nu := map[*te.Tensor]*te.Tensor{}
	relink := func(l *te.Load) te.Expr {
		s, isSplit := splits[l.Tensor]
		if n := nu[l.Tensor]; n != nil {
			l.Tensor = n
		}
		for d, x := range l.Index {
			// (n·G + h) / G is n in a grouped tensor's own loads
			l.Index[d] = x.Simplify()
		}
		if isSplit {
			x := l.Index[s.dim]
			l.Index = slices.Replace(l.Index, s.dim, s.dim+1, x.Div(s.g).Simplify(), x.Mod(s.g).Simplify())
		}
		return nil
	}
	ts := make([]*te.Tensor, 0, len(p.Tensors))
	for _, t := range p.Tensors {
		if t.Kind != te.Compute {
			ts = append(ts, t)
			continue
		}
		r := rewriter{load: relink}
		var u *te.Tensor
		if s, isSplit := splits[t]; isSplit {
			u = groupedRows(t, s.dim, s.g, &r)
		} else {
			u = relinked(t, &r)
		}
		nu[t] = u
		ts = append(ts, u)
	}
	outs := make([]*te.Tensor, len(p.Outputs))
	for i, t := range p.Outputs {
		outs[i] = nu[t]
		if s, isSplit := splits[t]; isSplit {
			outs[i] = copiedBack(t, outs[i], s.dim, s.g)
			outs[i].Name, nu[t].Name = t.Name, t.Name+"/rows"
			ts = append(ts, outs[i])
		}
		if outs[i] == nil {
			outs[i] = t
		}
	}
	return rebuild(p.Name, ts, outs), nu
}

// groupedRows returns t with its axis at dim split into the group and the
// row in it, of g rows, its body rewritten by r over them.
func groupedRows(t *te.Tensor, dim, g int, r *rewriter) *te.Tensor {
	axes, sub := freshAxes(t.Axes)
	a := t.Axes[dim]
	outer, row := te.NewVar(a.Name, a.Extent/g), te.NewVar(a.Name+"_g", g)
	sub[a] = te.VarIndex(outer).Scale(g).Add(te.VarIndex(row))
	r.sub = sub
	u := copyTensor(t, r.expr(t.Body))
	u.Axes = slices.Replace(axes, dim, dim+1, outer, row)
	u.Shape = slices.Replace(slices.Clone(t.Shape), dim, dim+1, a.Extent/g, g)
	return u
}

// relinkUpdate returns u with its run-time index parts rewritten by r (they
// may load a tensor whose rows were grouped).
func relinkUpdate(u *te.Update, r *rewriter) *te.Update {
	if u.Gather == nil {
		return u
	}
	v := *u
	v.Gather = make([]te.Expr, len(u.Gather))
	for d, x := range u.Gather {
		if x != nil {
			v.Gather[d] = r.expr(x)
		}
	}
	return &v
}

// copiedBack returns a tensor of t's shape whose element [..., x, ...]
// is u's [..., x / g, x % g, ...]: the output t, computed grouped as u.
func copiedBack(t, u *te.Tensor, dim, g int) *te.Tensor {
	axes, _ := freshAxes(t.Axes)
	idx := varIndexes(axes)
	x := idx[dim]
	idx = slices.Replace(idx, dim, dim+1, x.Div(g), x.Mod(g))
	c := copyTensor(t, &te.Load{Tensor: u, Index: idx})
	c.Axes = axes
	return c
}
