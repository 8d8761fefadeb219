package te

// Work estimates the scalar operations that evaluating a program takes, so
// that a caller can refuse (or announce) a run that would take hours before
// it starts. It is computed in float64, so that no shape or extent can
// overflow it, in time linear in the size of the program.
type Work struct {
	// Scalar is the operations evaluated one at a time: every tensor counts
	// its elements once (a placeholder's are read or filled, a compute
	// tensor's written), and a compute tensor adds, per element, one
	// operation per node of its body, a reduction's body counted once per
	// point of its axes and both branches of a select counted.
	Scalar float64
	// Contraction is the part of the operations in contractions, sums of
	// products of two loads not nested in another reduction, which the
	// reference evaluator hands to BLAS at a far higher rate (four
	// operations per multiply-add, as Scalar would count them).
	Contraction float64
}

// Total is all the operations, however they are evaluated.
func (w Work) Total() float64 { return w.Scalar + w.Contraction }

// Work returns the estimated work of evaluating p (see Work). Devices that
// recompute inlined producers (the simulator at higher levels) may do more.
func (p *Program) Work() Work {
	var w Work
	for _, t := range p.Tensors {
		n := 1.0
		for _, d := range t.Shape {
			n *= float64(d)
		}
		per := Work{Scalar: 1}
		if t.Kind == Compute && t.Body != nil {
			per.add(exprWork(t.Body, true))
		}
		w.Scalar += n * per.Scalar
		w.Contraction += n * per.Contraction
	}
	return w
}

func (w *Work) add(v Work) {
	w.Scalar += v.Scalar
	w.Contraction += v.Contraction
}

// exprWork returns the work of one evaluation of e; top says that e is not
// inside a reduction.
func exprWork(e Expr, top bool) Work {
	w := Work{Scalar: 1}
	switch e := e.(type) {
	case *Unary:
		w.add(exprWork(e.X, top))
	case *Binary:
		w.add(exprWork(e.X, top))
		w.add(exprWork(e.Y, top))
	case *Select:
		w.add(exprWork(e.Cond, top))
		w.add(exprWork(e.Then, top))
		w.add(exprWork(e.Else, top))
	case *Cast:
		w.add(exprWork(e.X, top))
	case *Reduce:
		points := 1.0
		for _, a := range e.Axes {
			points *= float64(a.Extent)
		}
		if top && isContraction(e) {
			return Work{Scalar: 1, Contraction: points * 4}
		}
		body := exprWork(e.Body, false)
		w.Scalar += points * (1 + body.Scalar)
	}
	return w
}

// isContraction reports whether r is a sum of products of two f32 loads,
// the form the reference evaluator may evaluate with BLAS.
func isContraction(r *Reduce) bool {
	mul, ok := r.Body.(*Binary)
	if r.Op != Sum || !ok || mul.Op != Mul || TypeOf(mul) != F32 {
		return false
	}
	_, a := mul.X.(*Load)
	_, b := mul.Y.(*Load)
	return a && b
}
