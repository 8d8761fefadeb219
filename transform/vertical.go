package transform

import "tec/te"

// Limits of the vertical transform.
const (
	// inlineOps bounds the arithmetic of a one-relies-on-one producer that is
	// inlined wherever it is read, however often (index remaps — reshape,
	// transpose, slice, window partition, roll — cost nothing).
	inlineOps = 8
	// inlineOpsReread bounds it where the consumer reads each of its
	// elements more than maxReread times (a variable of the consumer's
	// iteration space with a larger extent does not appear in the load's
	// indexes), since inlining recomputes it at every read.
	inlineOpsReread = 1
	maxReread       = 64
	// maxBody bounds the size of a body after inlining.
	maxBody = 400
)

// Vertical returns p with chains of one-relies-on-one TEs inlined (paper
// §6.2): a producer is substituted into the loads of its consumers, its
// axes replaced by the consumers' quasi-affine indexes, so that the
// composed map reads the producer's own inputs directly and no intermediate
// tensor is written. Two kinds of producer are inlined:
//
//   - a TE without reductions (element-wise, reshape, transpose, slice,
//     window partition, roll, padding) that is cheap (at most 8 arithmetic
//     operations per element), into every consumer;
//   - a TE with reductions (a contraction or a reduction) whose only
//     consumer reads it, outside any reduction or select, at the
//     consumer's own index only, the consumer having no reduction of its
//     own (all its loads become one shared node, computed once):
//     the consumer becomes the producer's epilogue (of one producer only,
//     so that the result has one reduction and keeps its tiling).
//
// Program outputs are never inlined away, and a consumer whose body would
// grow beyond 400 nodes keeps its loads.
//
// An inlined producer yields what it would have stored: where its dtype
// rounds (f16, bf16) or differs from its body's type (full(f16[n], 0.3) has
// an f32 body), the substituted body is cast to the producer's dtype, so
// that the consumer reads 0.300048828, not 0.3.
//
// Substitution can decide a select: select(i < 3, a[i], b[i - 3]) read at
// i = 1 becomes a[1], and its other branch, out of bounds there, is dropped
// (te.FoldSelects).
func Vertical(p *te.Program) (*te.Program, error) {
	outputs := map[*te.Tensor]bool{}
	for _, t := range p.Outputs {
		outputs[t] = true
	}
	consumers := map[*te.Tensor]int{}
	for _, t := range p.Tensors {
		if t.Body != nil {
			for _, u := range te.Inputs(t.Body) {
				consumers[u]++
			}
		}
	}
	nu := map[*te.Tensor]*te.Tensor{}
	var ts []*te.Tensor
	for _, t := range p.Tensors {
		if t.Kind != te.Compute {
			nu[t] = t
			ts = append(ts, t)
			continue
		}
		body := inlineInto(t, nu, outputs, consumers, true)
		if size(body) > maxBody {
			body = inlineInto(t, nu, outputs, consumers, false)
		}
		body = te.FoldSelects(body)
		u := copyTensor(t, body)
		nu[t] = u
		ts = append(ts, u)
	}
	outs := make([]*te.Tensor, len(p.Outputs))
	for i, t := range p.Outputs {
		outs[i] = nu[t]
	}
	return rebuild(p.Name, ts, outs), nil
}

// inlineInto returns t's body with its loads pointed at the transformed
// tensors nu and, if inline is set, the inlinable producers substituted.
func inlineInto(t *te.Tensor, nu map[*te.Tensor]*te.Tensor, outputs map[*te.Tensor]bool, consumers map[*te.Tensor]int, inline bool) te.Expr {
	epilogue := map[*te.Tensor]bool{}
	if inline && !te.HasReduce(t.Body) {
		for _, u := range te.Inputs(t.Body) {
			if v := nu[u]; v != nil && v.Kind == te.Compute && te.HasReduce(v.Body) && !outputs[u] && consumers[u] == 1 && readOnceAtOwnIndex(t, u) {
				epilogue[u] = true
				break // one producer per consumer: its reduction stays the only one
			}
		}
	}
	r := &rewriter{}
	shared := map[*te.Tensor]te.Expr{} // epilogue producers' inlined bodies
	r.load = func(l *te.Load) te.Expr {
		old := l.Tensor
		v := nu[old]
		if v == nil {
			return nil
		}
		// A gather's table is never inlined: its gathered axes would take
		// run-time values, which an index cannot hold.
		if inline && !l.IsGather() && v.Kind == te.Compute && !outputs[old] && (epilogue[old] || (!te.HasReduce(v.Body) && ops(v.Body) <= limit(rereads(l, t.Axes, r.bound)))) {
			if e, ok := shared[old]; ok {
				return e
			}
			sub := map[*te.Var]te.Index{}
			for d, a := range v.Axes {
				sub[a] = l.Index[d]
			}
			e := asStored(v, (&rewriter{sub: sub}).expr(v.Body))
			if epilogue[old] {
				shared[old] = e
			}
			return e
		}
		return &te.Load{Tensor: v, Index: l.Index, Gather: l.Gather}
	}
	return r.expr(t.Body)
}

// asStored returns e, producer v's body, rounded as storing it in v would
// round it.
func asStored(v *te.Tensor, e te.Expr) te.Expr {
	if v.DType == te.F16 || v.DType == te.BF16 || te.TypeOf(e) != v.DType {
		return &te.Cast{To: v.DType, X: e}
	}
	return e
}

func limit(rereads int) int {
	if rereads > maxReread {
		return inlineOpsReread
	}
	return inlineOps
}

// rereads bounds how often the consumer reads each element that l loads:
// the product of the extents of the iteration variables (axes and the
// reduction axes bound around l) that l's indexes do not use.
func rereads(l *te.Load, axes, bound []*te.Var) int {
	used := map[*te.Var]bool{}
	for _, x := range l.Index {
		for _, v := range x.Vars() {
			used[v] = true
		}
	}
	n := 1
	for _, vs := range [][]*te.Var{axes, bound} {
		for _, v := range vs {
			if !used[v] {
				n *= v.Extent
			}
		}
	}
	return n
}

// readOnceAtOwnIndex reports whether t's body loads u only outside
// reductions and selects and only at t's own output index (u and t having
// the same shape), so that one computation of u's element serves them all.
func readOnceAtOwnIndex(t, u *te.Tensor) bool {
	if len(t.Shape) != len(u.Shape) {
		return false
	}
	for d := range t.Shape {
		if t.Shape[d] != u.Shape[d] {
			return false
		}
	}
	n, ok := 0, true
	var walk func(e te.Expr, guarded bool)
	walk = func(e te.Expr, guarded bool) {
		te.Walk(e, func(x te.Expr) bool {
			switch x := x.(type) {
			case *te.Load:
				if x.Tensor != u {
					return true
				}
				n++
				if guarded || x.IsGather() {
					ok = false
				}
				for d, ix := range x.Index {
					if v, isVar := ix.AsVar(); !isVar || v != t.Axes[d] {
						ok = false
					}
				}
			case *te.Reduce:
				walk(x.Body, true)
				return false
			case *te.Select:
				walk(x.Cond, guarded)
				walk(x.Then, true)
				walk(x.Else, true)
				return false
			}
			return true
		})
	}
	walk(t.Body, false)
	return ok && n >= 1
}
