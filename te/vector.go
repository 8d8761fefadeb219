package te

import "slices"

// Contiguous reports whether load l, where along takes the values
// n·q, ..., n·q + n-1 of a vector, reads n consecutive elements from a
// multiple of n, whatever q and the other variables are: its flat offset
// is along (coefficient 1) plus terms that stay multiples of n (or
// variables of one point, always 0), where a term floor((along + a) / d)
// is constant over the vector and (along + a) mod d moves with it when n
// divides a's coefficients and d (a reshape's index map). Since every buffer starts 16-byte aligned,
// such a vector is an aligned access of n elements: one 16-byte load
// for n = 16 / element size.
func (l *Load) Contiguous(along *Var, n int) bool {
	if l.IsGather() || len(l.Index) != len(l.Tensor.Shape) {
		return false
	}
	var flat Index
	stride := 1
	for d := len(l.Index) - 1; d >= 0; d-- {
		flat = flat.Add(l.Index[d].Simplify().Scale(stride))
		stride *= l.Tensor.Shape[d]
	}
	flat = mergeDivMod(flat)
	if flat.Const%n != 0 {
		return false
	}
	unit, ok := unitAlong(flat, along, n)
	return ok && unit == 1
}

// unitAlong returns x's coefficient on the position in an aligned vector
// of n elements along along (along = n·q, ..., n·q + n-1), and reports
// whether every other term of x stays a multiple of n over the vector:
// a multiple of n times a variable or an atom that does not use along, a
// variable of one point (always 0), or floor((along + a) / d) with n
// dividing d and a's coefficients (constant over the vector), whose
// (along + a) mod d moves with it.
func unitAlong(x Index, along *Var, n int) (int, bool) {
	unit := 0
	for _, t := range x.Terms {
		a := t.Atom
		switch {
		case a.Op == AtomVar && a.Var == along:
			unit += t.Coef
		case a.Op == AtomVar && a.Var.Extent == 1:
			// always 0 (a 1×1 convolution's window)
		case a.Op == AtomVar || !a.Arg.Uses(along):
			if t.Coef%n != 0 {
				return 0, false
			}
		case constantOver(*a.Arg, along, n):
			// An atom of an index that is constant over the vector
			// (the kernel row of an im2col, floor(k/4) mod 4 for n = 4):
			// constant too, and a multiple of n keeps the vector aligned.
			if t.Coef%n != 0 {
				return 0, false
			}
		default:
			if a.Divisor%n != 0 || !alongPlusMultiple(*a.Arg, along, n) {
				return 0, false
			}
			if a.Op == AtomMod {
				unit += t.Coef
			} else if t.Coef%n != 0 {
				return 0, false
			}
		}
	}
	return unit, true
}

// constantOver reports whether x has one value on the n elements of every
// aligned vector along along (along = n·q, ..., n·q + n-1): each of its
// terms does not use along, or is floor((along + a)/d) with n dividing d
// and a as alongPlusMultiple allows, or an atom of an index that is
// itself constant over the vector.
func constantOver(x Index, along *Var, n int) bool {
	for _, t := range x.Terms {
		a := t.Atom
		switch {
		case a.Op == AtomVar:
			if a.Var == along && along.Extent > 1 {
				return false
			}
		case !a.Arg.Uses(along):
		case a.Op == AtomDiv && a.Divisor%n == 0 && alongPlusMultiple(*a.Arg, along, n):
		case !constantOver(*a.Arg, along, n):
			return false
		}
	}
	return true
}

// alongPlusMultiple reports whether x is along + a, where a does not use
// along and every coefficient of a, and its constant, are multiples of n.
func alongPlusMultiple(x Index, along *Var, n int) bool {
	if x.Const%n != 0 {
		return false
	}
	seen := false
	for _, t := range x.Terms {
		if t.Atom.Op == AtomVar && t.Atom.Var == along {
			seen = t.Coef == 1
			if !seen {
				return false
			}
			continue
		}
		if t.Atom.Op == AtomVar && t.Atom.Var.Extent == 1 {
			continue
		}
		if t.Coef%n != 0 || t.Atom.Op != AtomVar && t.Atom.Arg.Uses(along) {
			return false
		}
	}
	return seen
}

// mergeDivMod rewrites x's pairs of terms that a row-major reshape splits
// back into one: b·d·floor(y/d) + b·(y mod d) is b·y, and
// b·d·(floor(y/d) mod e) + b·(y mod d) is b·(y mod d·e) (the offset of a
// pixel oh·W + ow, where oh and ow are a flat index's digits).
func mergeDivMod(x Index) Index {
	for {
		y, i, j, ok := divModPair(x)
		if !ok {
			return x
		}
		var rest []Term
		for k, t := range x.Terms {
			if k != i && k != j {
				rest = append(rest, t)
			}
		}
		x = Index{Terms: rest, Const: x.Const}.Add(y)
	}
}

// divModPair finds in x a term b·(y mod d) (i) and a term that, with it,
// makes a multiple of y or of y mod d·e (j), and returns their sum.
func divModPair(x Index) (sum Index, i, j int, ok bool) {
	for i, ti := range x.Terms {
		if ti.Atom.Op != AtomMod {
			continue
		}
		y, d, b := *ti.Atom.Arg, ti.Atom.Divisor, ti.Coef
		for j, tj := range x.Terms {
			if j == i || tj.Coef != b*d {
				continue
			}
			a := tj.Atom
			switch {
			case a.Op == AtomDiv && a.Divisor == d && a.Arg.Equal(y):
				return y.Scale(b), i, j, true
			case a.Op == AtomMod && isDivOf(*a.Arg, y, d):
				return y.Mod(d * a.Divisor).Scale(b), i, j, true
			}
		}
	}
	return Index{}, 0, 0, false
}

// isDivOf reports whether x is floor(y / d).
func isDivOf(x, y Index, d int) bool {
	if x.Const != 0 || len(x.Terms) != 1 || x.Terms[0].Coef != 1 {
		return false
	}
	a := x.Terms[0].Atom
	return a.Op == AtomDiv && a.Divisor == d && a.Arg.Equal(y)
}

// FlatAxes returns a variable of the ext points of axes, row-major, and
// the substitution of each axis by its index in it (an axis alone is
// itself).
func FlatAxes(axes []*Var, ext int) (*Var, func(*Var) (Index, bool)) {
	if len(axes) == 1 {
		return axes[0], func(*Var) (Index, bool) { return Index{}, false }
	}
	f := &Var{Name: "flat", Extent: ext}
	at := map[*Var]Index{}
	stride := 1
	for i := len(axes) - 1; i >= 0; i-- {
		x := VarIndex(f).Div(stride)
		if i > 0 {
			x = x.Mod(axes[i].Extent)
		}
		at[axes[i]] = x
		stride *= axes[i].Extent
	}
	return f, func(v *Var) (Index, bool) { x, ok := at[v]; return x, ok }
}

// VectorElems returns the elements of t that one thread of a loop over
// t's elements computes at once, a 16-byte vector of t's type, and the
// loads of t's body that move along its last axis, where that applies: t
// of type f32, i32, f16 or bf16, its last extent a multiple of the
// vector, no reduction in its body but done (one whose values the loop
// is given, nil for none), and each moving load reading the vector's
// elements contiguous and aligned (Contiguous) as whole 16-byte vectors
// (two for 8 elements of f32), none of them under a select (which may
// guard a read out of bounds). It returns 0 otherwise.
func VectorElems(t *Tensor, done *Reduce) (int, []*Load) {
	switch t.DType {
	case F32, I32, F16, BF16:
	default:
		return 0, nil
	}
	n := 16 / t.DType.Size()
	if len(t.Axes) == 0 || t.Axes[len(t.Axes)-1].Extent%n != 0 {
		return 0, nil
	}
	last := t.Axes[len(t.Axes)-1]
	moves := func(x Expr) bool {
		ld, ok := x.(*Load)
		return ok && UsedVars(ld)[last]
	}
	var moving []*Load
	ok := true
	Walk(t.Body, func(x Expr) bool {
		switch x := x.(type) {
		case *Reduce:
			ok = ok && x == done
			return false
		case *Select:
			ok = ok && !Contains(x.Then, moves) && !Contains(x.Else, moves)
		case *Load:
			if !moves(x) {
				return ok
			}
			ok = ok && n*x.Tensor.DType.Size()%16 == 0 && x.Contiguous(last, n)
			if !slices.Contains(moving, x) {
				moving = append(moving, x)
			}
			return false
		}
		return ok
	})
	if !ok {
		return 0, nil
	}
	return n, moving
}

// ContiguousGathered is Contiguous for a load that may gather: the
// run-time part of each gathered dimension's index (an integer in the
// dimension, which a device clamps it into) moves the offset by a
// multiple of that dimension's stride, so where every such stride is a
// multiple of n the vector stays contiguous and aligned if the load's
// static index is.
func (l *Load) ContiguousGathered(along *Var, n int) bool {
	if !l.IsGather() {
		return l.Contiguous(along, n)
	}
	if len(l.Index) != len(l.Tensor.Shape) {
		return false
	}
	stride := 1
	for d := len(l.Index) - 1; d >= 0; d-- {
		if l.Gathered(d) != nil && (stride%n != 0 || UsedVars(l.Gathered(d))[along]) {
			return false
		}
		stride *= l.Tensor.Shape[d]
	}
	static := &Load{Tensor: l.Tensor, Index: l.Index}
	return static.Contiguous(along, n)
}

// UniformOver reports whether cond has one value on the n elements of
// every aligned vector along along (along = n·q, ..., n·q + n-1): its
// comparisons either do not use along, or compare i32 indexes whose
// difference is ±along plus terms that stay multiples of n, against a
// bound that a multiple of n separates (i < 32 for n = 8, not i < 31).
// Its loads are plain loads whose indexes do not use along (a decode
// step's position, pos[b]).
func UniformOver(cond Expr, along *Var, n int) bool {
	ok := true
	Walk(cond, func(x Expr) bool {
		if !ok {
			return false
		}
		switch x := x.(type) {
		case *Load:
			ok = !x.IsGather() && !UsedVars(x)[along]
			return false
		case *Binary:
			if x.Op.IsLogical() {
				return true
			}
			if !x.Op.IsComparison() {
				ok = !UsedVars(x)[along]
				return false
			}
			ok = uniformComparison(x, along, n)
			return false
		case *Unary:
			if x.Op == Not {
				return true
			}
		case *Select:
			ok = !UsedVars(x)[along]
			return false
		}
		ok = ok && !UsedVars(x)[along]
		return false
	})
	return ok
}

// uniformComparison is UniformOver for one comparison.
func uniformComparison(c *Binary, along *Var, n int) bool {
	if !UsedVars(c)[along] {
		return true
	}
	x, xok := asIndex(c.X)
	y, yok := asIndex(c.Y)
	if !xok || !yok {
		return false
	}
	d := x.Add(y.Scale(-1)).Simplify() // c is d op 0
	unit, ok := unitAlong(d, along, n)
	if !ok {
		return false
	}
	op, k := c.Op, d.Const
	if unit == -1 { // -u + k op 0 is u - k op' 0
		op, k = map[BinaryOp]BinaryOp{Lt: Gt, Le: Ge, Gt: Lt, Ge: Le, Eq: Eq, Ne: Ne}[op], -k
	} else if unit != 1 {
		return false
	}
	// u + k op 0, u = n·Q + j with j in [0, n): one value for every j
	// where the bound -k (u < -k) or 1-k (u <= -k, u < 1-k) is a
	// multiple of n.
	switch op {
	case Lt, Ge:
		return k%n == 0
	case Le, Gt:
		return (k-1)%n == 0
	}
	return false
}

// A VectorGuard is the condition of a select that a load of a vector
// lies under: the load is read where Cond is Holds.
type VectorGuard struct {
	Cond  Expr
	Holds bool
}

// GuardedVectorElems is VectorElems where the moving loads may also
// gather (ContiguousGathered) or lie under selects whose conditions are
// uniform over each vector (UniformOver): it returns for each moving
// load the conditions of the selects it lies under, outermost first,
// under which a vector of it is read (a select may guard a read out of
// bounds). It returns 0 where VectorElems would, for another reason.
func GuardedVectorElems(t *Tensor, done *Reduce) (int, []*Load, map[*Load][]VectorGuard) {
	switch t.DType {
	case F32, I32, F16, BF16:
	default:
		return 0, nil, nil
	}
	n := 16 / t.DType.Size()
	if len(t.Axes) == 0 || t.Axes[len(t.Axes)-1].Extent%n != 0 {
		return 0, nil, nil
	}
	w := guardWalk{along: t.Axes[len(t.Axes)-1], n: n, done: done, guards: map[*Load][]VectorGuard{}, ok: true}
	w.walk(t.Body, nil)
	if !w.ok {
		return 0, nil, nil
	}
	return n, w.moving, w.guards
}

// VectorLoads is GuardedVectorElems for an expression e read n elements
// at a time along along: it returns the loads of e that move along it,
// each read as n contiguous, aligned elements of its own type, and the
// conditions of the selects each lies under; e holds no reduction but
// done. A load's n elements need not be whole 16-byte units: they may be
// 4 or 8 bytes, where the load's type is narrower than the one n was
// chosen for (a bf16 key beside the f32 cache it is selected from). It
// reports false where GuardedVectorElems would, for another reason.
func VectorLoads(e Expr, along *Var, n int, done *Reduce) ([]*Load, map[*Load][]VectorGuard, bool) {
	w := guardWalk{along: along, n: n, done: done, guards: map[*Load][]VectorGuard{}, ok: true, narrow: true}
	w.walk(e, nil)
	return w.moving, w.guards, w.ok
}

// guardWalk is the state of GuardedVectorElems and VectorLoads: narrow
// allows a moving load's vector of 4 or 8 bytes.
type guardWalk struct {
	along  *Var
	n      int
	done   *Reduce
	moving []*Load
	guards map[*Load][]VectorGuard
	ok     bool
	narrow bool
}

// wholeBytes reports whether n elements of dt make a vector the walk
// reads: whole 16-byte units, or, where w is narrow, 4 or 8 bytes.
func (w *guardWalk) wholeBytes(dt DType) bool {
	b := w.n * dt.Size()
	return b%16 == 0 || w.narrow && (b == 4 || b == 8)
}

func (w *guardWalk) walk(e Expr, guards []VectorGuard) {
	Walk(e, func(x Expr) bool {
		if !w.ok {
			return false
		}
		switch x := x.(type) {
		case *Reduce:
			w.ok = x == w.done
			return false
		case *Select:
			moves := func(y Expr) bool { ld, ok := y.(*Load); return ok && UsedVars(ld)[w.along] }
			if !Contains(x.Then, moves) && !Contains(x.Else, moves) {
				return true
			}
			if !UniformOver(x.Cond, w.along, w.n) {
				w.ok = false
				return false
			}
			w.walk(x.Cond, guards)
			w.walk(x.Then, append(slices.Clip(guards), VectorGuard{x.Cond, true}))
			w.walk(x.Else, append(slices.Clip(guards), VectorGuard{x.Cond, false}))
			return false
		case *Load:
			if !UsedVars(x)[w.along] {
				return true
			}
			w.ok = w.wholeBytes(x.Tensor.DType) && x.ContiguousGathered(w.along, w.n)
			if prev, seen := w.guards[x]; seen {
				w.ok = w.ok && slices.Equal(prev, guards)
			} else if w.ok {
				w.moving = append(w.moving, x)
				w.guards[x] = guards
			}
			return false
		}
		return true
	})
}

// ReduceVectorElems returns the terms of reduction r that one thread of a
// loop over r's points reads at once along r's last axis, a 16-byte
// vector of the narrowest of the loads of r's body that move along it,
// and those loads, where that applies: r's body holds no reduction, its
// last axis is a multiple of the vector, and each moving load reads the
// vector's elements contiguous and aligned (ContiguousGathered) as whole
// 16-byte vectors, none of them under a select. It returns 0 otherwise.
func ReduceVectorElems(r *Reduce) (int, []*Load) {
	if len(r.Axes) == 0 || HasReduce(r.Body) {
		return 0, nil
	}
	along := r.Axes[len(r.Axes)-1]
	moves := func(x Expr) bool {
		ld, ok := x.(*Load)
		return ok && UsedVars(ld)[along]
	}
	var moving []*Load
	ok := true
	Walk(r.Body, func(x Expr) bool {
		switch x := x.(type) {
		case *Select:
			ok = ok && !Contains(x.Then, moves) && !Contains(x.Else, moves)
		case *Load:
			if moves(x) && !slices.Contains(moving, x) {
				moving = append(moving, x)
			}
		}
		return ok
	})
	if !ok || len(moving) == 0 {
		return 0, nil
	}
	size := 16
	for _, ld := range moving {
		size = min(size, ld.Tensor.DType.Size())
	}
	if size == 0 || 16%size != 0 {
		return 0, nil
	}
	n := 16 / size
	if along.Extent%n != 0 {
		return 0, nil
	}
	for _, ld := range moving {
		switch ld.Tensor.DType {
		case F32, I32, F16, BF16:
		default:
			return 0, nil
		}
		if n*ld.Tensor.DType.Size()%16 != 0 || !ld.ContiguousGathered(along, n) {
			return 0, nil
		}
	}
	return n, moving
}
