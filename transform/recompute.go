package transform

import "tec/te"

// recomputeMaxRows bounds the elements of a row reduction that a consumer
// recomputes (each of its tiles computes all of them, before it stages its
// rows): a matrix-vector product's few rows.
const recomputeMaxRows = 8

// RecomputePays decides whether consumer old, rewritten as nu with the
// producers removed recomputed in it, is worth it: the cost model's
// answer (partition.RecomputePays), given the redundant work against the
// barriers and stages saved.
type RecomputePays func(old, nu *te.Tensor, removed []*te.Tensor) bool

// Recompute returns p with cheap producers of reductions recomputed in
// their consumers where pays says so, instead of being stored by one stage
// and read by another after a grid-wide barrier (Souffle's redundant
// computation instead of a global synchronisation). A producer qualifies
// when the consumer is its only reader, it is no output, it reads it inside
// the consumer's reductions and not as a gather's table, and it is
//
//   - element-wise (no reduction): SwiGLU's gate·sigmoid(gate)·up read by
//     the down projection, or RMSNorm's x·rsqrt(ms + eps)·g read by the
//     projections after it; or
//   - a reduction of at most 8 elements (RMSNorm's mean of squares) read
//     only by the consumer or by such an element-wise producer: it is
//     inlined, so that the consumer's body holds a reduction nested in its
//     own, which uses none of the consumer's reduction axes.
//
// The vertical transform leaves these producers alone because its
// consumers reread each element thousands of times (the columns of a
// matrix-vector product); a matrix-vector tile stages its rows once per
// tile, and hoists a nested reduction into a prologue computed once per
// tile (backend/lower), so that the redundant work is a tile's, which the
// cost model prices. Each substituted producer yields what it would have
// stored (see Vertical).
func Recompute(p *te.Program, pays RecomputePays) (*te.Program, error) {
	outputs := map[*te.Tensor]bool{}
	for _, t := range p.Outputs {
		outputs[t] = true
	}
	readers := map[*te.Tensor][]*te.Tensor{}
	for _, t := range p.Tensors {
		if t.Body == nil {
			continue
		}
		for _, u := range te.Inputs(t.Body) {
			readers[u] = append(readers[u], t)
		}
	}
	// only reports whether t is a compute tensor, no output, read by r
	// alone.
	only := func(t, r *te.Tensor) bool {
		rs := readers[t]
		return t.Kind == te.Compute && t.Update == nil && !outputs[t] && len(rs) == 1 && rs[0] == r
	}
	nu := map[*te.Tensor]*te.Tensor{}
	var ts []*te.Tensor
	for _, t := range p.Tensors {
		if t.Kind != te.Compute {
			nu[t] = t
			ts = append(ts, t)
			continue
		}
		u := t
		if body := relink(t.Body, pointAt(nu)); body != t.Body {
			u = copyTensor(t, body)
		}
		if te.HasReduce(t.Body) {
			if v, removed := recomputed(t, u, nu, only); v != nil && pays(u, v, removed) {
				u = v
			}
		}
		nu[t] = u
		ts = append(ts, u)
	}
	outs := make([]*te.Tensor, len(p.Outputs))
	for i, t := range p.Outputs {
		outs[i] = nu[t]
	}
	return rebuild(p.Name, ts, outs), nil
}

// pointAt returns a load hook that points loads at the rewritten tensors nu.
func pointAt(nu map[*te.Tensor]*te.Tensor) func(*te.Load) te.Expr {
	return func(l *te.Load) te.Expr {
		if v := nu[l.Tensor]; v != nil && v != l.Tensor {
			return &te.Load{Tensor: v, Index: l.Index, Gather: l.Gather}
		}
		return nil
	}
}

// recomputed returns t's rewritten form u (its loads pointed at the
// rewritten tensors nu) with the producers that qualify
// (see Recompute) substituted, and those producers, or nil if none does.
// only(x, r) reports whether x is a compute tensor read by r alone.
func recomputed(t, u *te.Tensor, nu map[*te.Tensor]*te.Tensor, only func(x, r *te.Tensor) bool) (*te.Tensor, []*te.Tensor) {
	var removed []*te.Tensor
	inlined := map[*te.Tensor]te.Expr{} // producer → its body with its reductions inlined
	outside := loadedOutsideReductions(t.Body)
	for _, x := range te.Inputs(t.Body) {
		if !only(x, t) || outside[x] {
			continue
		}
		body, rs, ok := elementwise(x, only)
		if small(x) {
			body, rs, ok = x.Body, nil, true // a small reduction read directly
		}
		if !ok || !inBoundsEverywhere(t.Body, x, body) {
			continue
		}
		removed = append(removed, x)
		removed = append(removed, rs...)
		inlined[x] = body
	}
	if len(removed) == 0 {
		return nil, nil
	}
	inline := func(l *te.Load) te.Expr {
		body, ok := inlined[l.Tensor]
		if !ok || l.IsGather() {
			return nil
		}
		return substitute(l.Tensor, body, l.Index)
	}
	// The substituted bodies load the original tensors: point them, and
	// t's other loads, at the rewritten ones.
	body := relink(relink(t.Body, inline), pointAt(nu))
	return copyTensor(u, te.FoldSelects(body)), removed
}

// elementwise returns x's body with the small reductions it reads (at most
// recomputeMaxRows elements) inlined, if x itself has no reduction and
// is the only reader of each; and those reductions.
func elementwise(x *te.Tensor, only func(x, r *te.Tensor) bool) (te.Expr, []*te.Tensor, bool) {
	if te.HasReduce(x.Body) {
		return nil, nil, false
	}
	var rs []*te.Tensor
	ok := true
	r := &rewriter{}
	r.load = func(l *te.Load) te.Expr {
		y := l.Tensor
		if !small(y) {
			return nil // read as it is stored
		}
		if !only(y, x) || l.IsGather() {
			ok = false
			return nil
		}
		rs = append(rs, y)
		return substitute(y, y.Body, l.Index)
	}
	body := r.expr(x.Body)
	return body, dedupe(rs), ok
}

// small reports whether x is a reduction of at most recomputeMaxRows
// elements, which a consumer's tile recomputes whole.
func small(x *te.Tensor) bool {
	return x.Kind == te.Compute && te.HasReduce(x.Body) && x.NumElements() <= recomputeMaxRows
}

// substitute returns producer v's body (or body, a rewriting of it over
// the same axes) at index idx, as storing it in v would round it.
func substitute(v *te.Tensor, body te.Expr, idx []te.Index) te.Expr {
	sub := map[*te.Var]te.Index{}
	for d, a := range v.Axes {
		sub[a] = idx[d]
	}
	return asStored(v, (&rewriter{sub: sub}).expr(body))
}

// loadedOutsideReductions returns the tensors that e loads outside its
// reductions: e's inputs that it does not read only inside reductions. One
// walk for all of them, since a horizontal concatenation of T steps has T
// inputs and a body as long (an unrolled scan's per-step build time grew
// with T when each input walked the body).
func loadedOutsideReductions(e te.Expr) map[*te.Tensor]bool {
	outside := map[*te.Tensor]bool{}
	te.Walk(e, func(y te.Expr) bool {
		switch y := y.(type) {
		case *te.Reduce:
			return false
		case *te.Load:
			outside[y.Tensor] = true
		}
		return true
	})
	return outside
}

func dedupe(ts []*te.Tensor) []*te.Tensor {
	seen := map[*te.Tensor]bool{}
	var out []*te.Tensor
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// relink returns e with each load replaced by what load returns for it (its
// gathered indexes relinked first), or kept where load returns nil. Nodes
// that nothing under them changes are kept, and a node that occurs more
// than once in e (a reduction the vertical transform shares among its
// readers) is rewritten once, so that it stays one node (te.Map).
func relink(e te.Expr, load func(*te.Load) te.Expr) te.Expr {
	return te.Map(e, func(x te.Expr) te.Expr {
		if l, ok := x.(*te.Load); ok {
			if y := load(l); y != nil {
				return y
			}
		}
		return x
	})
}

// inBoundsEverywhere reports whether body, substituted for each load of x
// in e, loads only in bounds for every value of the variables, as a
// matrix-vector tile evaluates it: for all its rows, also those where a
// select of e would not choose the load (a horizontal concatenation of
// two projections with different rows reads x at b - 2 only where b >= 2).
func inBoundsEverywhere(e te.Expr, x *te.Tensor, body te.Expr) bool {
	ok := true
	te.Walk(e, func(y te.Expr) bool {
		if l, isLoad := y.(*te.Load); isLoad && l.Tensor == x {
			ok = ok && !l.IsGather() && te.LoadsInBounds(substitute(x, body, l.Index))
		}
		return ok
	})
	return ok
}
