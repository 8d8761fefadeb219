package te

import (
	"fmt"
	"sort"
	"strings"
)

// Index is a quasi-affine integer expression over iteration variables:
//
//	Const + Σ Terms[i].Coef · Terms[i].Atom
//
// where an atom is a variable, floor(e / d) or e mod d for an Index e and a
// constant d > 0. Division rounds towards negative infinity and mod is never
// negative, so floor(e/d)·d + (e mod d) == e for every e.
//
// Indexes built with the constructors below are canonical: terms with equal
// atoms are merged, zero coefficients dropped, and terms sorted, so two
// canonical indexes are equal exactly when Equal says so. The zero Index is the
// constant 0. Indexes are immutable values; share them freely.
type Index struct {
	Terms []Term
	Const int
}

// Term is one Coef·Atom summand of an Index.
type Term struct {
	Coef int
	Atom Atom
}

// AtomOp says what kind of atom a Term holds.
type AtomOp int

// The atom kinds.
const (
	AtomVar AtomOp = iota // the variable Var
	AtomDiv               // floor(Arg / Divisor)
	AtomMod               // Arg mod Divisor
)

// Atom is a variable, or a floor-division or modulo of an Index by a positive
// constant.
type Atom struct {
	Op      AtomOp
	Var     *Var   // for AtomVar
	Arg     *Index // for AtomDiv and AtomMod
	Divisor int    // for AtomDiv and AtomMod, > 0
}

// Const returns the constant index c.
func Const(c int) Index { return Index{Const: c} }

// VarIndex returns the index consisting of the variable v alone.
func VarIndex(v *Var) Index { return Index{Terms: []Term{{Coef: 1, Atom: Atom{Op: AtomVar, Var: v}}}} }

// IsConst reports whether x has no variable terms, and returns its value.
func (x Index) IsConst() (int, bool) { return x.Const, len(x.Terms) == 0 }

// AsVar returns the variable if x is exactly one variable with coefficient 1 and
// no constant.
func (x Index) AsVar() (*Var, bool) {
	if x.Const == 0 && len(x.Terms) == 1 && x.Terms[0].Coef == 1 && x.Terms[0].Atom.Op == AtomVar {
		return x.Terms[0].Atom.Var, true
	}
	return nil, false
}

// IsAffine reports whether x has no div or mod atoms.
func (x Index) IsAffine() bool {
	for _, t := range x.Terms {
		if t.Atom.Op != AtomVar {
			return false
		}
	}
	return true
}

// Add returns x + y.
func (x Index) Add(y Index) Index {
	terms := make([]Term, 0, len(x.Terms)+len(y.Terms))
	terms = append(terms, x.Terms...)
	terms = append(terms, y.Terms...)
	return canonical(terms, x.Const+y.Const)
}

// AddConst returns x + c.
func (x Index) AddConst(c int) Index { return Index{Terms: x.Terms, Const: x.Const + c} }

// Sub returns x - y.
func (x Index) Sub(y Index) Index { return x.Add(y.Scale(-1)) }

// Scale returns c·x.
func (x Index) Scale(c int) Index {
	if c == 0 {
		return Index{}
	}
	terms := make([]Term, len(x.Terms))
	for i, t := range x.Terms {
		terms[i] = Term{Coef: t.Coef * c, Atom: t.Atom}
	}
	return Index{Terms: terms, Const: x.Const * c}
}

// Div returns floor(x / d). It panics if d <= 0; callers check divisors when
// they build indexes from user input.
func (x Index) Div(d int) Index {
	if d <= 0 {
		panic(fmt.Sprintf("te: Index.Div by %d", d))
	}
	if d == 1 {
		return x
	}
	if c, ok := x.IsConst(); ok {
		return Const(floorDiv(c, d))
	}
	if x.divisibleBy(d) {
		return x.exactDiv(d)
	}
	// floor((d·q + r) / d) = q + floor(r / d) when q collects the terms and the
	// part of the constant that d divides.
	q, r := x.splitMultiples(d)
	if _, ok := r.IsConst(); ok {
		return q // the remainder lies in [0, d)
	}
	arg := r
	return q.Add(Index{Terms: []Term{{Coef: 1, Atom: Atom{Op: AtomDiv, Arg: &arg, Divisor: d}}}})
}

// Mod returns x mod d (never negative). It panics if d <= 0.
func (x Index) Mod(d int) Index {
	if d <= 0 {
		panic(fmt.Sprintf("te: Index.Mod by %d", d))
	}
	if d == 1 {
		return Index{}
	}
	if c, ok := x.IsConst(); ok {
		return Const(floorMod(c, d))
	}
	_, r := x.splitMultiples(d)
	if c, ok := r.IsConst(); ok {
		return Const(floorMod(c, d))
	}
	arg := r
	return Index{Terms: []Term{{Coef: 1, Atom: Atom{Op: AtomMod, Arg: &arg, Divisor: d}}}}
}

// splitMultiples writes x = d·q + r where q takes every term whose coefficient d
// divides and the multiple of d in the constant, and r keeps the rest with a
// constant in [0, d).
func (x Index) splitMultiples(d int) (q, r Index) {
	var qt, rt []Term
	for _, t := range x.Terms {
		if t.Coef%d == 0 {
			qt = append(qt, Term{Coef: t.Coef / d, Atom: t.Atom})
		} else {
			rt = append(rt, t)
		}
	}
	return Index{Terms: qt, Const: floorDiv(x.Const, d)}, Index{Terms: rt, Const: floorMod(x.Const, d)}
}

func (x Index) divisibleBy(d int) bool {
	if x.Const%d != 0 {
		return false
	}
	for _, t := range x.Terms {
		if t.Coef%d != 0 {
			return false
		}
	}
	return true
}

func (x Index) exactDiv(d int) Index {
	terms := make([]Term, len(x.Terms))
	for i, t := range x.Terms {
		terms[i] = Term{Coef: t.Coef / d, Atom: t.Atom}
	}
	return Index{Terms: terms, Const: x.Const / d}
}

// Vars returns the distinct variables x depends on, in order of first appearance.
func (x Index) Vars() []*Var {
	var vs []*Var
	seen := map[*Var]bool{}
	x.walkVars(func(v *Var) {
		if !seen[v] {
			seen[v] = true
			vs = append(vs, v)
		}
	})
	return vs
}

func (x Index) walkVars(f func(*Var)) {
	for _, t := range x.Terms {
		if t.Atom.Op == AtomVar {
			f(t.Atom.Var)
		} else {
			t.Atom.Arg.walkVars(f)
		}
	}
}

// Uses reports whether x depends on v.
func (x Index) Uses(v *Var) bool {
	found := false
	x.walkVars(func(w *Var) { found = found || w == v })
	return found
}

// Eval returns the value of x when each variable v has the value val(v).
func (x Index) Eval(val func(*Var) int) int {
	s := x.Const
	for _, t := range x.Terms {
		s += t.Coef * t.Atom.Eval(val)
	}
	return s
}

// Eval returns the atom's value when each variable v has the value val(v).
func (a Atom) Eval(val func(*Var) int) int {
	switch a.Op {
	case AtomVar:
		return val(a.Var)
	case AtomDiv:
		return floorDiv(a.Arg.Eval(val), a.Divisor)
	default:
		return floorMod(a.Arg.Eval(val), a.Divisor)
	}
}

// Bounds returns the least and greatest values x can take when each variable v
// ranges over [lo(v), hi(v)] (inclusive), by interval arithmetic. The bounds are
// exact for affine indexes in which each variable occurs once, and safe (never
// too narrow) otherwise.
func (x Index) Bounds(rng func(*Var) (lo, hi int)) (lo, hi int) {
	lo, hi = x.Const, x.Const
	for _, t := range x.Terms {
		alo, ahi := t.Atom.Bounds(rng)
		if t.Coef >= 0 {
			lo += t.Coef * alo
			hi += t.Coef * ahi
		} else {
			lo += t.Coef * ahi
			hi += t.Coef * alo
		}
	}
	return lo, hi
}

// Bounds returns the atom's range under rng, as Index.Bounds.
func (a Atom) Bounds(rng func(*Var) (lo, hi int)) (lo, hi int) {
	switch a.Op {
	case AtomVar:
		return rng(a.Var)
	case AtomDiv:
		l, h := a.Arg.Bounds(rng)
		return floorDiv(l, a.Divisor), floorDiv(h, a.Divisor)
	default:
		l, h := a.Arg.Bounds(rng)
		if floorDiv(l, a.Divisor) == floorDiv(h, a.Divisor) {
			return floorMod(l, a.Divisor), floorMod(h, a.Divisor)
		}
		return 0, a.Divisor - 1
	}
}

// ExactBounds returns the bounds of x as Bounds does, but with checked
// arithmetic: ok is false, and lo and hi are meaningless, when some value
// that evaluating x computes may lie outside [-limit, limit] — a variable's
// or the constant's value, an atom or its argument, a product Coef·atom, or
// a partial sum in the order Eval adds them. limit must lie in [0, 2^61], so
// that nothing in the check itself overflows. Front ends use it with
// limit 2^53, the integers float64 holds exactly.
func (x Index) ExactBounds(rng func(*Var) (lo, hi int), limit int) (lo, hi int, ok bool) {
	if limit < 0 || limit > 1<<61 {
		panic(fmt.Sprintf("te: Index.ExactBounds with limit %d", limit))
	}
	in := func(v int) bool { return -limit <= v && v <= limit }
	if !in(x.Const) {
		return 0, 0, false
	}
	lo, hi = x.Const, x.Const
	for _, t := range x.Terms {
		alo, ahi, ok := t.Atom.exactBounds(rng, limit)
		if !ok || !in(t.Coef) {
			return 0, 0, false
		}
		plo, okLo := checkedMul(t.Coef, alo, limit)
		phi, okHi := checkedMul(t.Coef, ahi, limit)
		if !okLo || !okHi {
			return 0, 0, false
		}
		if t.Coef < 0 {
			plo, phi = phi, plo
		}
		lo, hi = lo+plo, hi+phi // each operand within ±2^61: no overflow
		if !in(lo) || !in(hi) {
			return 0, 0, false
		}
	}
	return lo, hi, true
}

// exactBounds returns the atom's range under rng, as Index.ExactBounds.
func (a Atom) exactBounds(rng func(*Var) (lo, hi int), limit int) (lo, hi int, ok bool) {
	if a.Op == AtomVar {
		lo, hi = rng(a.Var)
		return lo, hi, -limit <= lo && hi <= limit
	}
	l, h, ok := a.Arg.ExactBounds(rng, limit)
	if !ok || a.Divisor > limit {
		return 0, 0, false
	}
	if a.Op == AtomDiv {
		return floorDiv(l, a.Divisor), floorDiv(h, a.Divisor), true
	}
	if floorDiv(l, a.Divisor) == floorDiv(h, a.Divisor) {
		return floorMod(l, a.Divisor), floorMod(h, a.Divisor), true
	}
	return 0, a.Divisor - 1, true
}

// checkedMul returns a·b and whether it lies within [-limit, limit], for a
// and b within it.
func checkedMul(a, b, limit int) (int, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	ua, ub := a, b
	if ua < 0 {
		ua = -ua
	}
	if ub < 0 {
		ub = -ub
	}
	if ua > limit/ub {
		return 0, false
	}
	return a * b, true
}

// ExtentBounds is a convenience for Bounds where every variable ranges over
// [0, Extent).
func (x Index) ExtentBounds() (lo, hi int) {
	return x.Bounds(func(v *Var) (int, int) { return 0, v.Extent - 1 })
}

// Simplify removes the div and mod atoms that the variables' extents make
// trivial: floor(e/d) becomes a constant and e mod d becomes e - q·d when
// e stays within one multiple q·d..(q+1)·d-1 of the divisor for every value
// of its variables in [0, Extent).
func (x Index) Simplify() Index {
	if x.IsAffine() {
		return x
	}
	r := Const(x.Const)
	for _, t := range x.Terms {
		var a Index
		switch t.Atom.Op {
		case AtomVar:
			a = VarIndex(t.Atom.Var)
		default:
			arg := t.Atom.Arg.Simplify()
			d := t.Atom.Divisor
			lo, hi := arg.ExtentBounds()
			q := floorDiv(lo, d)
			switch {
			case q == floorDiv(hi, d) && t.Atom.Op == AtomDiv:
				a = Const(q)
			case q == floorDiv(hi, d):
				a = arg.AddConst(-q * d)
			case t.Atom.Op == AtomDiv:
				a = arg.Div(d)
			default:
				a = arg.Mod(d)
			}
			// Div and Mod split off the multiples of d; what they leave
			// may have become trivial. Without a change there is nothing
			// more to do (and simplifying again would not end).
			if t.Atom.Op != AtomVar && !a.Equal(Index{Terms: []Term{{Coef: 1, Atom: Atom{Op: t.Atom.Op, Arg: &arg, Divisor: d}}}}) {
				a = a.Simplify()
			}
		}
		r = r.Add(a.Scale(t.Coef))
	}
	return r
}

// Substitute returns x with every variable v replaced by sub(v); sub returns
// false to keep v.
func (x Index) Substitute(sub func(*Var) (Index, bool)) Index {
	r := Const(x.Const)
	for _, t := range x.Terms {
		var a Index
		switch t.Atom.Op {
		case AtomVar:
			if s, ok := sub(t.Atom.Var); ok {
				a = s
			} else {
				a = VarIndex(t.Atom.Var)
			}
		case AtomDiv:
			a = t.Atom.Arg.Substitute(sub).Div(t.Atom.Divisor)
		default:
			a = t.Atom.Arg.Substitute(sub).Mod(t.Atom.Divisor)
		}
		r = r.Add(a.Scale(t.Coef))
	}
	return r
}

// Equal reports whether x and y are the same canonical expression.
func (x Index) Equal(y Index) bool {
	if x.Const != y.Const || len(x.Terms) != len(y.Terms) {
		return false
	}
	for i := range x.Terms {
		if x.Terms[i].Coef != y.Terms[i].Coef || !x.Terms[i].Atom.Equal(y.Terms[i].Atom) {
			return false
		}
	}
	return true
}

// Equal reports whether a and b are the same atom.
func (a Atom) Equal(b Atom) bool {
	if a.Op != b.Op {
		return false
	}
	if a.Op == AtomVar {
		return a.Var == b.Var
	}
	return a.Divisor == b.Divisor && a.Arg.Equal(*b.Arg)
}

// Notation selects how Index.Format writes an index.
type Notation int

// The notations.
const (
	// Language is the .te language's syntax: "i*4 + (j / 2) + 1", with
	// "(e % d)" for mod.
	Language Notation = iota
	// ISL is the integer set library's: "4*i + floor(j/2) + 1", with
	// "(e mod d)" for mod, as in polyhedral relations.
	ISL
)

// String formats x in the language's syntax, e.g. "i*4 + (j / 2) + 1".
func (x Index) String() string { return x.Format(Language, nil) }

// Format formats x in notation n, writing each variable v as name(v), or as
// v.Name when name is nil.
func (x Index) Format(n Notation, name func(*Var) string) string {
	if name == nil {
		name = func(v *Var) string { return v.Name }
	}
	var b strings.Builder
	x.format(&b, n, name)
	return b.String()
}

func (x Index) format(b *strings.Builder, n Notation, name func(*Var) string) {
	for i, t := range x.Terms {
		c := t.Coef
		switch {
		case i == 0 && c < 0:
			b.WriteString("-")
			c = -c
		case i > 0 && c < 0:
			b.WriteString(" - ")
			c = -c
		case i > 0:
			b.WriteString(" + ")
		}
		if n == ISL && c != 1 {
			fmt.Fprintf(b, "%d*", c)
		}
		t.Atom.format(b, n, name)
		if n == Language && c != 1 {
			fmt.Fprintf(b, "*%d", c)
		}
	}
	switch {
	case len(x.Terms) == 0:
		fmt.Fprint(b, x.Const)
	case x.Const > 0:
		fmt.Fprintf(b, " + %d", x.Const)
	case x.Const < 0:
		fmt.Fprintf(b, " - %d", -x.Const)
	}
}

// String formats the atom: a variable name, "(e / d)" or "(e % d)", with e in
// parentheses when it is a sum.
func (a Atom) String() string {
	var b strings.Builder
	a.format(&b, Language, func(v *Var) string { return v.Name })
	return b.String()
}

func (a Atom) format(b *strings.Builder, n Notation, name func(*Var) string) {
	switch {
	case a.Op == AtomVar:
		b.WriteString(name(a.Var))
	case n == ISL && a.Op == AtomDiv:
		b.WriteString("floor(")
		a.Arg.operand(b, n, name)
		fmt.Fprintf(b, "/%d)", a.Divisor)
	case n == ISL:
		b.WriteString("(")
		a.Arg.operand(b, n, name)
		fmt.Fprintf(b, " mod %d)", a.Divisor)
	default:
		op := " / "
		if a.Op == AtomMod {
			op = " % "
		}
		b.WriteString("(")
		a.Arg.operand(b, n, name)
		fmt.Fprintf(b, "%s%d)", op, a.Divisor)
	}
}

// operand formats x as the left operand of a division or mod: in
// parentheses when it is a sum (Language) or anything but a lone atom (ISL).
func (x Index) operand(b *strings.Builder, n Notation, name func(*Var) string) {
	paren := len(x.Terms) > 1 || len(x.Terms) == 1 && x.Const != 0
	if n == ISL {
		paren = !(x.Const == 0 && len(x.Terms) == 1 && x.Terms[0].Coef == 1)
	}
	if paren {
		b.WriteString("(")
	}
	x.format(b, n, name)
	if paren {
		b.WriteString(")")
	}
}

// canonical merges terms with equal atoms, drops zero terms and sorts the rest.
func canonical(terms []Term, c int) Index {
	out := make([]Term, 0, len(terms))
	for _, t := range terms {
		merged := false
		for i := range out {
			if out[i].Atom.Equal(t.Atom) {
				out[i].Coef += t.Coef
				merged = true
				break
			}
		}
		if !merged {
			out = append(out, t)
		}
	}
	n := 0
	for _, t := range out {
		if t.Coef != 0 {
			out[n] = t
			n++
		}
	}
	out = out[:n]
	sort.SliceStable(out, func(i, j int) bool { return atomLess(out[i].Atom, out[j].Atom) })
	if len(out) == 0 {
		out = nil
	}
	return Index{Terms: out, Const: c}
}

// atomLess orders atoms: variables first (by name, then by first sight), then
// divs, then mods, each by their argument's text.
func atomLess(a, b Atom) bool {
	if a.Op != b.Op {
		return a.Op < b.Op
	}
	if a.Op == AtomVar {
		return a.Var.Name < b.Var.Name
	}
	if a.Divisor != b.Divisor {
		return a.Divisor < b.Divisor
	}
	return a.Arg.String() < b.Arg.String()
}

func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int) int {
	m := a % b
	if m != 0 && ((m < 0) != (b < 0)) {
		m += b
	}
	return m
}

// FloorDiv returns floor(a / b) for b != 0.
func FloorDiv(a, b int) int { return floorDiv(a, b) }

// FloorMod returns a - b·floor(a / b) for b != 0.
func FloorMod(a, b int) int { return floorMod(a, b) }

// CeilDiv returns ceil(a / b) for b > 0: for a >= 0, the number of blocks
// of b items that cover a items.
func CeilDiv(a, b int) int { return -floorDiv(-a, b) }

// NextPow2 returns the least power of two not below n (1 for n <= 1).
func NextPow2(n int) int {
	p := 1
	for p < n {
		p *= 2
	}
	return p
}
