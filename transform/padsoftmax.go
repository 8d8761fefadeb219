package transform

import (
	"slices"

	"tec/te"
)

// Padded softmax axes: the weighted sum of a softmax site,
//
//	ctx[r, e] = sum[t](pr[r, t] * v[r, t, e]) / den[r]
//
// is a contraction over t whose first factor, pr = exp(sc - mx), is read
// along t. Where t has T positions and T is not a multiple of 8 (Swin's
// windows of 7×7 = 49), a row of the scores does not start 16 bytes after
// the last, and the factor is staged 2 bytes at a time. PadSoftmax pads
// the axis to T' positions, a multiple of 8:
//
//	sc'[r, t] = select(t < T, sc[r, t], -inf)
//	mx[r] = max[t](sc'[r, t])
//	pr'[r, t] = exp(sc'[r, t] - mx[r])
//	den[r] = sum[t](pr'[r, t])
//	ctx[r, e] = sum[t](pr'[r, t] * select(t < T, v[r, t, e], 0)) / den[r]
//
// every t < T'. Each padded score is -inf, which leaves the max as it
// is; its weight is exp(-inf - mx) = 0 exactly, and its terms of the
// sums 0 and 0 · 0: the results are the same numbers, the scores' and
// the weights' rows T' elements apart, every reader of them reading whole
// rows. Nothing past T is loaded: a sum's factor (the values) is read
// under its select whatever it is, a load of the scores' epilogue (a
// table they add) under a select of its own where the wider axis would
// take it out of bounds, and an operand of the scores' own contraction at
// t % T, in bounds, its products masked by the -inf (a plain load keeps
// the operand's cp.async copies).

// vectorPositions is the positions a padded axis is a multiple of: 16
// bytes of halves.
const vectorPositions = 8

// PaddedLength returns the length the site's axis is padded to by
// PadSoftmax, a multiple of 8 positions, or 0 where the site is not padded:
// its scores are not halves (f16 or bf16), its length is a multiple of 8
// already (or under 8), its scores are read by others than the site or
// computed in place, or none of its sums weights a factor (a contraction
// that the padding would give aligned rows).
func (s *SoftmaxSite) PaddedLength() int {
	if s.Scores.DType.Size() != 2 || s.Length < vectorPositions || s.Length%vectorPositions == 0 || !s.OwnScores {
		return 0
	}
	if s.Scores.Axes[s.dim] == nil || s.Scores.Shape[s.dim] != s.Length {
		return 0
	}
	for _, u := range s.Sums {
		if sh := s.sums[u]; sh.reduce.Body != te.Expr(sh.w) {
			return te.CeilDiv(s.Length, vectorPositions) * vectorPositions
		}
	}
	return 0
}

// PadSoftmax returns p with the axis of each softmax site that pad chooses
// (among those with a PaddedLength) padded to that length (see the note
// above), and the sites it padded. A padded site is a site of the new
// program too, of a length PadSoftmax leaves as it is.
func PadSoftmax(p *te.Program, pad func(*SoftmaxSite) bool) (*te.Program, []*SoftmaxSite) {
	var padded []*SoftmaxSite
	declined := map[string]bool{} // by the max's name, which a padding keeps
	for {
		var next *SoftmaxSite
		for _, s := range SoftmaxSites(p) {
			if s.PaddedLength() == 0 || declined[s.Max.Name] {
				continue
			}
			if !pad(s) {
				declined[s.Max.Name] = true
				continue
			}
			next = s
			break
		}
		if next == nil {
			return p, padded
		}
		// A padding rebuilds the program, and its tensors: the next site
		// is found in the new one.
		p = padSite(p, next)
		padded = append(padded, next)
	}
}

// padSite returns p with site s's axis padded to s.PaddedLength().
func padSite(p *te.Program, s *SoftmaxSite) *te.Program {
	n := s.PaddedLength()
	nu := map[*te.Tensor]*te.Tensor{}
	relink := func(l *te.Load) te.Expr {
		if u := nu[l.Tensor]; u != nil {
			l.Tensor = u
		}
		return nil
	}
	ts := make([]*te.Tensor, 0, len(p.Tensors))
	for _, t := range p.Tensors {
		var u *te.Tensor
		switch {
		case t.Kind != te.Compute:
			u = t
		case t == s.Scores:
			u = padScores(t, s.dim, s.Length, n, relink)
		case t == s.Max:
			u = padReduce(t, t.Body.(*te.Reduce), nil, s.Length, n, relink)
		case s.weights[t] != nil:
			u = padWeight(t, s.weights[t], n, relink)
		case s.sums[t] != nil:
			u = padReduce(t, s.sums[t].reduce, s.sums[t].w, s.Length, n, relink)
		default:
			u = relinked(t, &rewriter{load: relink})
		}
		nu[t] = u
		ts = append(ts, u)
	}
	outs := make([]*te.Tensor, len(p.Outputs))
	for i, t := range p.Outputs {
		outs[i] = nu[t]
	}
	return rebuild(p.Name, ts, outs)
}

// padScores returns the scores t with the axis at dim padded from length
// to n positions, -inf past length.
func padScores(t *te.Tensor, dim, length, n int, relink func(*te.Load) te.Expr) *te.Tensor {
	axes, sub := freshAxes(t.Axes)
	a := te.NewVar(t.Axes[dim].Name, n)
	axes[dim] = a
	sub[t.Axes[dim]] = te.VarIndex(a)
	r := rewriter{sub: sub}
	guard := guarded(a, length, relink)
	r.load = func(l *te.Load) te.Expr {
		if len(r.bound) == 0 {
			return guard(l)
		}
		// An operand of the scores' own sum: past length its value is
		// masked to -inf whatever it is, so it is read at a % length
		// (a plain load, still copied 16 bytes at a time) rather than
		// under a select.
		relink(l)
		if !te.LoadsInBounds(l) {
			wrap := func(v *te.Var) (te.Index, bool) {
				if v == a {
					return te.VarIndex(a).Mod(length), true
				}
				return te.Index{}, false
			}
			for d, x := range l.Index {
				l.Index[d] = x.Substitute(wrap).Simplify()
			}
		}
		return nil
	}
	u := copyTensor(t, &te.Select{Cond: below(a, length), Then: r.expr(t.Body), Else: negInf()})
	u.Axes = axes
	u.Shape = slices.Clone(t.Shape)
	u.Shape[dim] = n
	return u
}

// padWeight returns the weight t = exp(scores - max) with its axis along
// the scores' padded to n positions.
func padWeight(t *te.Tensor, w *weight, n int, relink func(*te.Load) te.Expr) *te.Tensor {
	axes, sub := freshAxes(t.Axes)
	i := slices.Index(t.Axes, w.axis)
	axes[i] = te.NewVar(w.axis.Name, n)
	sub[w.axis] = te.VarIndex(axes[i])
	r := rewriter{sub: sub, load: relink}
	u := copyTensor(t, r.expr(t.Body))
	u.Axes = axes
	u.Shape = slices.Clone(t.Shape)
	u.Shape[i] = n
	return u
}

// padReduce returns t with its reduction r (the max over the scores, or
// a sum of the weights, w its load of them) over n positions; where r
// sums the weight times a factor, the factor is read under t < length, 0
// past it, whatever it is (its loads may fall out of bounds there, its
// values be infinite): past length the max reads -inf and the sums add 0
// and 0 · 0.
func padReduce(t *te.Tensor, r *te.Reduce, w *te.Load, length, n int, relink func(*te.Load) te.Expr) *te.Tensor {
	outer := rewriter{load: relink}
	body := te.Replace(t.Body, func(x te.Expr) te.Expr {
		if x != te.Expr(r) {
			return outer.replace(x)
		}
		k := te.NewVar(r.Axes[0].Name, n)
		inner := rewriter{sub: map[*te.Var]te.Index{r.Axes[0]: te.VarIndex(k)}, load: relink}
		term := r.Body
		if m, ok := r.Body.(*te.Binary); ok && w != nil && r.Body != te.Expr(w) {
			zero := func(f te.Expr) te.Expr {
				return &te.Select{Cond: below(k, length), Then: f, Else: &te.ConstExpr{Value: 0, DType: te.TypeOf(f)}}
			}
			if m.X == te.Expr(w) {
				term = &te.Binary{Op: te.Mul, X: m.X, Y: zero(m.Y)}
			} else {
				term = &te.Binary{Op: te.Mul, X: zero(m.X), Y: m.Y}
			}
		}
		return &te.Reduce{Op: r.Op, Axes: []*te.Var{k}, Body: inner.expr(term)}
	})
	return copyTensor(t, body)
}

// guarded returns a load rewrite that relinks a load and reads it under
// a < length where it may fall out of its tensor's bounds (a ranging up
// to its padded extent), 0 past it.
func guarded(a *te.Var, length int, relink func(*te.Load) te.Expr) func(*te.Load) te.Expr {
	return func(l *te.Load) te.Expr {
		relink(l)
		if te.LoadsInBounds(l) {
			return nil
		}
		return &te.Select{Cond: below(a, length), Then: l, Else: &te.ConstExpr{Value: 0, DType: te.TypeOf(l)}}
	}
}

// below returns the condition a < n.
func below(a *te.Var, n int) te.Expr {
	return &te.Binary{Op: te.Lt, X: &te.IndexExpr{Index: te.VarIndex(a)}, Y: &te.ConstExpr{Value: float64(n), DType: te.I32}}
}
