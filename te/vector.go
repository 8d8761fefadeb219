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
	unit := 0 // the offset's coefficient on the position in the vector
	for _, t := range flat.Terms {
		a := t.Atom
		switch {
		case a.Op == AtomVar && a.Var == along:
			unit += t.Coef
		case a.Op == AtomVar && a.Var.Extent == 1:
			// always 0 (a 1×1 convolution's window)
		case a.Op == AtomVar || !a.Arg.Uses(along):
			if t.Coef%n != 0 {
				return false
			}
		default:
			if a.Divisor%n != 0 || !alongPlusMultiple(*a.Arg, along, n) {
				return false
			}
			if a.Op == AtomMod {
				unit += t.Coef
			} else if t.Coef%n != 0 {
				return false
			}
		}
	}
	return unit == 1
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
