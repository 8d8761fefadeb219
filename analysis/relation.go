package analysis

import (
	"fmt"
	"slices"

	"tec/te"
)

// Dependence says how the elements of a TE's output depend on the elements of
// a tensor it reads (Souffle §5.2).
type Dependence int

// The kinds of dependence, from the most to the least precise. A TE's
// dependence is the least precise of its accesses'.
const (
	// OneToOne: each output element relies on one element of the input; no
	// reduction variable appears in the access's indexes.
	OneToOne Dependence = iota
	// OneToMany: each output element relies on a set of input elements
	// spanned by the reduction variables in the indexes.
	OneToMany
	// Opaque: the analysis cannot represent the access; consumers must
	// assume each output element may rely on every input element.
	Opaque
)

var dependenceNames = [...]string{OneToOne: "one-relies-on-one", OneToMany: "one-relies-on-many", Opaque: "opaque"}

// String returns "one-relies-on-one", "one-relies-on-many" or "opaque".
func (d Dependence) String() string { return dependenceNames[d] }

// Short returns "OR" (one-relies-on-one), "MR" (one-relies-on-many) or "opaque".
func (d Dependence) Short() string {
	switch d {
	case OneToOne:
		return "OR"
	case OneToMany:
		return "MR"
	}
	return "opaque"
}

// MarshalText encodes the dependence as its String.
func (d Dependence) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText decodes a dependence written by MarshalText.
func (d *Dependence) UnmarshalText(b []byte) error {
	for k, n := range dependenceNames {
		if n == string(b) {
			*d = Dependence(k)
			return nil
		}
	}
	return fmt.Errorf("analysis: unknown dependence %q", b)
}

// Map is the element-wise dependence relation of one access: for every point
// of the iteration space (the Domain variables, the output axes of the TE that
// makes Out, and the Reduce variables of the reductions around the access)
// where every Guard holds, the element of In at Index is read:
//
//	{ Out[Domain] -> In[Index] : 0 <= v < v.Extent for v in Domain and Reduce, and Guards }
//
// Index holds one quasi-affine te.Index per dimension of In: an affine
// function M·v + c of the variables, or one with floor-division and modulo by
// constants, which reshapes and window partitions need and which are kept
// exactly. Maps are immutable values.
type Map struct {
	Out    *te.Tensor
	In     *te.Tensor
	Domain []*te.Var
	Reduce []*te.Var
	Index  []te.Index
	// Guards are the conditions of the selects around the access that could
	// be written as constraints on the variables (padding, masks by index).
	Guards []Constraint
	// Inexact is set when a select around the access has a condition that is
	// not such a constraint (it reads data): the relation then includes
	// points where the access does not happen, a safe over-approximation.
	Inexact bool
	// Foreign lists variables in Index that are neither in Domain nor in
	// Reduce: the access is then opaque.
	Foreign []*te.Var
	// Gathered lists the variables of Reduce that stand for run-time
	// indexes: a gather wte[ids[s], d] is the relation
	// { e[s, d] -> wte[g, d] : 0 <= g < extent }, one element relying on
	// the whole of the gathered dimension and exactly on the others. Its
	// dependence on the index tensor (ids) is an access of its own.
	Gathered []*te.Var
}

// Dependence classifies the access: Opaque if an index uses a variable the
// relation does not bind, OneToMany if one uses a reduction variable, and
// OneToOne otherwise.
func (m *Map) Dependence() Dependence {
	if len(m.Foreign) > 0 {
		return Opaque
	}
	for _, x := range m.Index {
		if usesAny(x, m.Reduce) {
			return OneToMany
		}
	}
	return OneToOne
}

// Vars returns the relation's variables: Domain then Reduce.
func (m *Map) Vars() []*te.Var {
	return append(slices.Clip(m.Domain), m.Reduce...)
}

// Access is one distinct access of a TE: the relation of its loads of one
// tensor at one index, and how many loads in the body share it.
type Access struct {
	*Map
	Count int
}

// CmpOp is the comparison of a Constraint with zero.
type CmpOp int

// The comparisons.
const (
	GE CmpOp = iota // Expr >= 0
	EQ              // Expr == 0
	NE              // Expr != 0
)

// Constraint is the condition Expr Op 0 on iteration variables.
type Constraint struct {
	Expr te.Index
	Op   CmpOp
}

// Holds reports whether the constraint holds when each variable v has the
// value val(v).
func (c Constraint) Holds(val func(*te.Var) int) bool {
	x := c.Expr.Eval(val)
	switch c.Op {
	case EQ:
		return x == 0
	case NE:
		return x != 0
	}
	return x >= 0
}

// negate returns the constraint that holds exactly where c does not.
func (c Constraint) negate() Constraint {
	switch c.Op {
	case EQ:
		return Constraint{c.Expr, NE}
	case NE:
		return Constraint{c.Expr, EQ}
	}
	return Constraint{c.Expr.Scale(-1).AddConst(-1), GE} // e < 0 ⟺ -e-1 >= 0
}

// accessesOf returns the distinct accesses of compute tensor t, in order of
// first load. Loads at equal indexes under equal reductions are merged; an
// unguarded exact access absorbs guarded ones of the same element.
func accessesOf(t *te.Tensor) []*Access {
	x := extractor{out: t, domain: t.Axes}
	x.expr(t.Body, nil, nil, false)
	return x.accs
}

// extractor walks a body, keeping the reductions and guards around each node.
type extractor struct {
	out    *te.Tensor
	domain []*te.Var
	accs   []*Access
}

func (x *extractor) expr(e te.Expr, reduce []*te.Var, guards []Constraint, inexact bool) {
	switch e := e.(type) {
	case *te.Load:
		for _, g := range e.Gather {
			if g != nil {
				x.expr(g, reduce, guards, inexact)
			}
		}
		x.load(e, reduce, guards, inexact)
	case *te.Unary:
		x.expr(e.X, reduce, guards, inexact)
	case *te.Binary:
		x.expr(e.X, reduce, guards, inexact)
		x.expr(e.Y, reduce, guards, inexact)
	case *te.Cast:
		x.expr(e.X, reduce, guards, inexact)
	case *te.Select:
		x.expr(e.Cond, reduce, guards, inexact)
		cs, ok := constraintsOf(e.Cond)
		thenG := guards
		if ok {
			thenG = conjoin(guards, cs...)
		}
		x.expr(e.Then, reduce, thenG, inexact || !ok)
		elseG := guards
		if ok && len(cs) == 1 {
			elseG = conjoin(guards, cs[0].negate())
		}
		x.expr(e.Else, reduce, elseG, inexact || !ok || len(cs) != 1)
	case *te.Reduce:
		x.expr(e.Body, append(slices.Clip(reduce), e.Axes...), guards, inexact)
	}
}

func (x *extractor) load(l *te.Load, reduce []*te.Var, guards []Constraint, inexact bool) {
	if l.IsGather() {
		x.gather(l, reduce, guards, inexact)
		return
	}
	exact := len(guards) == 0 && !inexact
	for _, a := range x.accs {
		if a.In != l.Tensor || !slices.Equal(a.Reduce, reduce) || !slices.EqualFunc(a.Index, l.Index, te.Index.Equal) {
			continue
		}
		switch {
		case a.Inexact == inexact && slices.EqualFunc(a.Guards, guards, Constraint.equal):
			a.Count++
			return
		case len(a.Guards) == 0 && !a.Inexact:
			a.Count++ // the unguarded access already covers this one's points
			return
		case exact:
			a.Guards, a.Inexact = nil, false // this one covers the other's
			a.Count++
			return
		}
	}
	m := &Map{Out: x.out, In: l.Tensor, Domain: x.domain, Reduce: reduce, Index: l.Index, Guards: guards, Inexact: inexact}
	var buf [8]*te.Var
	for _, v := range appendVars(buf[:0], l.Index...) {
		if !slices.Contains(m.Domain, v) && !slices.Contains(m.Reduce, v) {
			m.Foreign = append(m.Foreign, v)
		}
	}
	for _, c := range guards {
		for _, v := range appendVars(buf[:0], c.Expr) {
			if !slices.Contains(m.Domain, v) && !slices.Contains(m.Reduce, v) {
				// A guard on a variable the relation does not bind says
				// nothing about its points; drop the guards rather than
				// print an unbound name.
				m.Guards, m.Inexact = nil, true
			}
		}
	}
	x.accs = append(x.accs, &Access{Map: m, Count: 1})
}

// gather records the access of a load with run-time indexes: each gathered
// dimension is read at a fresh variable over the dimension's whole extent,
// which the relation binds as a reduction variable, so that it is
// one-relies-on-many there and exact on the other dimensions. A gather is
// never merged with another access.
func (x *extractor) gather(l *te.Load, reduce []*te.Var, guards []Constraint, inexact bool) {
	index := slices.Clone(l.Index)
	var gathered []*te.Var
	for d := range index {
		if l.Gathered(d) == nil {
			continue
		}
		v := te.NewVar("g", l.Tensor.Shape[d])
		gathered = append(gathered, v)
		index[d] = te.VarIndex(v)
	}
	n := len(x.accs)
	x.load(&te.Load{Tensor: l.Tensor, Index: index}, append(slices.Clip(reduce), gathered...), guards, inexact)
	x.accs[n].Gathered = gathered
}

func (c Constraint) equal(d Constraint) bool { return c.Op == d.Op && c.Expr.Equal(d.Expr) }

// appendVars appends to dst the variables of xs that are not in it yet.
func appendVars(dst []*te.Var, xs ...te.Index) []*te.Var {
	for _, x := range xs {
		for _, t := range x.Terms {
			if t.Atom.Op != te.AtomVar {
				dst = appendVars(dst, *t.Atom.Arg)
			} else if !slices.Contains(dst, t.Atom.Var) {
				dst = append(dst, t.Atom.Var)
			}
		}
	}
	return dst
}

// usesAny reports whether x uses one of vs.
func usesAny(x te.Index, vs []*te.Var) bool {
	for _, t := range x.Terms {
		if t.Atom.Op != te.AtomVar {
			if usesAny(*t.Atom.Arg, vs) {
				return true
			}
		} else if slices.Contains(vs, t.Atom.Var) {
			return true
		}
	}
	return false
}

// conjoin returns a new list of the constraints of guards and cs, keeping
// only the tightest of inequalities that differ in their constant and
// turning a pair e >= 0, -e >= 0 into e = 0. Chains of selects (a stack of
// T tensors is T nested selects) thus keep a couple of constraints each,
// not T.
func conjoin(guards []Constraint, cs ...Constraint) []Constraint {
	out := slices.Clone(guards)
next:
	for _, c := range cs {
		for k, d := range out {
			if c.Op == EQ && d.Op == EQ && c.Expr.Equal(d.Expr) {
				continue next
			}
			if c.Op != GE || d.Op != GE {
				continue
			}
			if sameTerms(c.Expr, d.Expr, 1) {
				if c.Expr.Const < d.Expr.Const {
					out[k] = c
				}
				continue next
			}
			if sameTerms(c.Expr, d.Expr, -1) && c.Expr.Const+d.Expr.Const == 0 {
				out[k] = Constraint{d.Expr, EQ}
				continue next
			}
		}
		out = append(out, c)
	}
	return out
}

// sameTerms reports whether x's terms are sign times y's.
func sameTerms(x, y te.Index, sign int) bool {
	return slices.EqualFunc(x.Terms, y.Terms, func(a, b te.Term) bool { return a.Coef == sign*b.Coef && a.Atom.Equal(b.Atom) })
}

// constraintsOf returns the conjunction of constraints that cond means, and
// false if cond is not a conjunction of comparisons of index values.
func constraintsOf(cond te.Expr) ([]Constraint, bool) {
	switch c := cond.(type) {
	case *te.Binary:
		if c.Op == te.And {
			l, ok1 := constraintsOf(c.X)
			r, ok2 := constraintsOf(c.Y)
			return append(l, r...), ok1 && ok2
		}
		if !c.Op.IsComparison() {
			return nil, false
		}
		a, ok1 := indexOf(c.X)
		b, ok2 := indexOf(c.Y)
		if !ok1 || !ok2 {
			return nil, false
		}
		switch c.Op {
		case te.Lt: // a < b ⟺ b - a - 1 >= 0
			return []Constraint{{b.Sub(a).AddConst(-1), GE}}, true
		case te.Le:
			return []Constraint{{b.Sub(a), GE}}, true
		case te.Gt:
			return []Constraint{{a.Sub(b).AddConst(-1), GE}}, true
		case te.Ge:
			return []Constraint{{a.Sub(b), GE}}, true
		case te.Eq:
			return []Constraint{{a.Sub(b), EQ}}, true
		default:
			return []Constraint{{a.Sub(b), NE}}, true
		}
	case *te.Unary:
		if c.Op == te.Not {
			cs, ok := constraintsOf(c.X)
			if ok && len(cs) == 1 {
				return []Constraint{cs[0].negate()}, true
			}
		}
	case *te.ConstExpr:
		if c.Value != 0 {
			return nil, true // always true
		}
	}
	return nil, false
}

// indexOf returns the integer expression e as an Index, and false if e is
// not integer arithmetic on index values and integer constants.
func indexOf(e te.Expr) (te.Index, bool) {
	switch e := e.(type) {
	case *te.IndexExpr:
		return e.Index, true
	case *te.ConstExpr:
		if e.DType == te.I32 && e.Value == float64(int(e.Value)) {
			return te.Const(int(e.Value)), true
		}
	case *te.Unary:
		if e.Op == te.Neg {
			x, ok := indexOf(e.X)
			return x.Scale(-1), ok
		}
	case *te.Binary:
		x, ok1 := indexOf(e.X)
		y, ok2 := indexOf(e.Y)
		if !ok1 || !ok2 {
			return te.Index{}, false
		}
		switch e.Op {
		case te.Add:
			return x.Add(y), true
		case te.Sub:
			return x.Sub(y), true
		case te.Mul:
			if c, ok := y.IsConst(); ok {
				return x.Scale(c), true
			}
			if c, ok := x.IsConst(); ok {
				return y.Scale(c), true
			}
		case te.Div:
			if c, ok := y.IsConst(); ok && c > 0 {
				return x.Div(c), true
			}
		case te.Mod:
			if c, ok := y.IsConst(); ok && c > 0 {
				return x.Mod(c), true
			}
		}
	}
	return te.Index{}, false
}

// Compose returns the relation of the chain outer ∘ inner: outer relates the
// iteration space of a TE to the data space of the tensor inner's TE makes,
// inner relates that tensor's iteration space to a tensor further up, and the
// result relates the first iteration space to that last data space:
//
//	f_{i+1,i}(v) = f_i(f_{i+1}(v))
//
// by substituting outer's indexes for inner's domain variables (with
// te.Index.Substitute, so floor-division and modulo stay exact). The reduce
// variables and guards of both are kept. Compose reports an error when outer
// does not read the tensor inner describes.
func Compose(outer, inner *Map) (*Map, error) {
	if outer.In != inner.Out {
		return nil, fmt.Errorf("analysis: cannot compose %s with %s: %s reads %s, not %s",
			mapName(outer), mapName(inner), nameOf(outer.Out), nameOf(outer.In), nameOf(inner.Out))
	}
	if len(outer.Index) != len(inner.Domain) {
		return nil, fmt.Errorf("analysis: cannot compose %s with %s: %d indexes for %d axes",
			mapName(outer), mapName(inner), len(outer.Index), len(inner.Domain))
	}
	sub := func(v *te.Var) (te.Index, bool) {
		if k := slices.Index(inner.Domain, v); k >= 0 {
			return outer.Index[k], true
		}
		return te.Index{}, false
	}
	m := &Map{
		Out:     outer.Out,
		In:      inner.In,
		Domain:  outer.Domain,
		Reduce:  append(slices.Clip(outer.Reduce), inner.Reduce...),
		Index:   make([]te.Index, len(inner.Index)),
		Guards:  slices.Clip(outer.Guards),
		Inexact: outer.Inexact || inner.Inexact,
		Foreign: append(slices.Clip(outer.Foreign), inner.Foreign...),
	}
	for d, x := range inner.Index {
		m.Index[d] = x.Substitute(sub)
	}
	for _, c := range inner.Guards {
		m.Guards = append(m.Guards, Constraint{c.Expr.Substitute(sub), c.Op})
	}
	return m, nil
}

// ComposeChain composes the maps of a chain of accesses, outermost first:
// ComposeChain(f3, f2, f1) is Compose(Compose(f3, f2), f1).
func ComposeChain(maps ...*Map) (*Map, error) {
	if len(maps) == 0 {
		return nil, fmt.Errorf("analysis: ComposeChain of no maps")
	}
	m := maps[0]
	for _, n := range maps[1:] {
		var err error
		if m, err = Compose(m, n); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func mapName(m *Map) string { return nameOf(m.Out) + "->" + nameOf(m.In) }

// Affine returns the map as M·v + c, with one row of M per dimension of In
// and one column per variable of Vars, and false if an index has a
// floor-division or modulo, or a variable the map does not bind.
func (m *Map) Affine() (M [][]int, c []int, ok bool) {
	vars := m.Vars()
	M = make([][]int, len(m.Index))
	c = make([]int, len(m.Index))
	for d, x := range m.Index {
		if !x.IsAffine() {
			return nil, nil, false
		}
		M[d] = make([]int, len(vars))
		c[d] = x.Const
		for _, t := range x.Terms {
			k := slices.Index(vars, t.Atom.Var)
			if k < 0 {
				return nil, nil, false
			}
			M[d][k] += t.Coef
		}
	}
	return M, c, true
}
