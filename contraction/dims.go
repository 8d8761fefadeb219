// Package contraction recognises the contractions of a TE program, out =
// f(sum[k](X * Y)) over two factors that each miss some of the output's
// axes (matrix and matrix-vector products, batched, convolutions): their
// dimensions (Of, Dims), the selects that mask them (MaskedReduce, MaskOf)
// and the k their factors make zero (ZeroPast, KMaskOf), the reductions
// nested in a factor that a tile hoists (HoistedReductions), and whether
// their operands suit tensor cores (TensorCoreType) and how a tile stages
// them (StagingOf). The
// planner (package partition) and the lowering (backend/lower) both read
// a contraction through it.
package contraction

import "tec/te"

// Dims are the sizes of a contraction out = f(sum[k](X * Y)): M counts the
// output points that X uses and Y does not, N those that Y uses and X does
// not, Batch the rest, K the reduction's points.
type Dims struct {
	M, N, K, Batch int
	Reduce         *te.Reduce
	// Masked says that the sum lies under a select (see MaskedReduce), and
	// Guards are those selects that a tile can decide.
	Masked bool
	Guards []Guard
	// MAxes, NAxes and BatchAxes partition t's axes.
	MAxes, NAxes, BatchAxes []*te.Var
	X, Y                    te.Expr
}

// Of reports whether t is a contraction worth tiling (a single
// top-level f32 sum of a product of two factors, with N ≥ 8, or 4 in a
// batch of several — a grouped convolution's groups of 4 channels —, and
// K ≥ 4; M may be 1, a matrix-vector product; a reduction nested in the factors must
// not use the sum's axes, see HoistedReductions) and returns its
// dimensions. The sum may lie under selects (a masked contraction, see
// MaskedReduce) if its factors load in bounds at every output point, where
// the tiles compute them whether the select uses them or not.
func Of(t *te.Tensor) (Dims, bool) {
	r, guards, masked, ok := MaskedReduce(t.Body)
	if !ok {
		return Dims{}, false
	}
	if r.Op != te.Sum || te.TypeOf(r) != te.F32 || !nestedInvariant(r) || masked && !te.LoadsInBounds(r.Body) {
		return Dims{}, false
	}
	others := false
	te.Walk(t.Body, func(x te.Expr) bool {
		if rr, ok := x.(*te.Reduce); ok && rr != r {
			others = true
		}
		return x != te.Expr(r)
	})
	if others {
		return Dims{}, false
	}
	X, Y, ok := Factors(r)
	if !ok {
		return Dims{}, false
	}
	ux, uy := te.UsedVars(X), te.UsedVars(Y)
	d := Dims{Reduce: r, X: X, Y: Y, K: Points(r.Axes), Masked: masked, Guards: guards}
	for _, a := range t.Axes {
		switch {
		case ux[a] && !uy[a]:
			d.MAxes = append(d.MAxes, a)
		case uy[a] && !ux[a]:
			d.NAxes = append(d.NAxes, a)
		default:
			d.BatchAxes = append(d.BatchAxes, a)
		}
	}
	d.M, d.N, d.Batch = Points(d.MAxes), Points(d.NAxes), Points(d.BatchAxes)
	if d.M*d.N < 8 || d.N < 8 && !(d.Batch > 1 && d.N >= 4) || d.K < 4 {
		return Dims{}, false
	}
	return d, true
}

// Factors splits the body of a contraction into its two factors: X * Y, or
// select(c, X * Y, 0) where c guards X only (padding) and Y loads in bounds
// everywhere, which is select(c, X, 0) * Y.
func Factors(r *te.Reduce) (x, y te.Expr, ok bool) {
	if m, isMul := r.Body.(*te.Binary); isMul && m.Op == te.Mul {
		return m.X, m.Y, true
	}
	s, isSel := r.Body.(*te.Select)
	if !isSel {
		return nil, nil, false
	}
	m, isMul := s.Then.(*te.Binary)
	zero, isConst := s.Else.(*te.ConstExpr)
	if !isMul || m.Op != te.Mul || !isConst || zero.Value != 0 || te.HasLoad(s.Cond) {
		return nil, nil, false
	}
	xs := te.UsedVars(m.X)
	for _, v := range r.Axes {
		xs[v] = true
	}
	for v := range te.UsedVars(s.Cond) {
		if !xs[v] {
			return nil, nil, false
		}
	}
	if !te.LoadsInBounds(m.Y) {
		return nil, nil, false
	}
	return &te.Select{Cond: s.Cond, Then: m.X, Else: &te.ConstExpr{Value: 0, DType: te.F32}}, m.Y, true
}

// Points returns the points of a nest of axes: the product of their
// extents.
func Points(axes []*te.Var) int {
	n := 1
	for _, a := range axes {
		n *= a.Extent
	}
	return n
}

// isReduce reports whether e is a reduction.
func isReduce(e te.Expr) bool {
	_, ok := e.(*te.Reduce)
	return ok
}
