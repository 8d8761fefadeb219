package analysis

import (
	"fmt"
	"strings"

	"tec/te"
)

// String formats the relation in the polyhedral notation of the paper and of
// ISL:
//
//	{ O0[i, j] -> I0[i, rk] : 0 <= i < 64 and 0 <= j < 64 and 0 <= rk < 64 }
//
// The output tuple lists the domain variables; the input tuple the indexes,
// with floor(e/d) and (e mod d) for floor-division and modulo; the
// constraints bound every variable of Vars and add the guards. Variables
// that share a name get a suffix (i, i_1, ...). An Inexact map prints the
// guards it knows; the condition it could not represent is left out.
func (m *Map) String() string {
	nm := newNamer()
	vars := m.Vars()
	for _, v := range vars {
		nm.name(v)
	}
	for _, v := range m.Foreign {
		nm.name(v)
	}
	var b strings.Builder
	b.WriteString("{ ")
	b.WriteString(nameOf(m.Out))
	b.WriteByte('[')
	for k, v := range m.Domain {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString(nm.name(v))
	}
	b.WriteString("] -> ")
	b.WriteString(nameOf(m.In))
	b.WriteByte('[')
	for k, x := range m.Index {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString(nm.index(x))
	}
	b.WriteByte(']')
	var cs []string
	for _, v := range vars {
		cs = append(cs, fmt.Sprintf("0 <= %s < %d", nm.name(v), v.Extent))
	}
	for _, c := range m.Guards {
		cs = append(cs, nm.constraint(c))
	}
	if len(cs) > 0 {
		b.WriteString(" : ")
		b.WriteString(strings.Join(cs, " and "))
	}
	b.WriteString(" }")
	return b.String()
}

// namer gives variables distinct printed names.
type namer struct {
	names map[*te.Var]string
	used  map[string]bool
}

func newNamer() *namer { return &namer{names: map[*te.Var]string{}, used: map[string]bool{}} }

func (n *namer) name(v *te.Var) string {
	if s, ok := n.names[v]; ok {
		return s
	}
	base := v.Name
	if base == "" {
		base = "v"
	}
	s := base
	for k := 1; n.used[s]; k++ {
		s = fmt.Sprintf("%s_%d", base, k)
	}
	n.used[s] = true
	n.names[v] = s
	return s
}

// index formats x as an ISL quasi-affine expression.
func (n *namer) index(x te.Index) string {
	var b strings.Builder
	n.terms(&b, x.Terms)
	switch {
	case len(x.Terms) == 0:
		fmt.Fprint(&b, x.Const)
	case x.Const > 0:
		fmt.Fprintf(&b, " + %d", x.Const)
	case x.Const < 0:
		fmt.Fprintf(&b, " - %d", -x.Const)
	}
	return b.String()
}

func (n *namer) terms(b *strings.Builder, ts []te.Term) {
	for k, t := range ts {
		c := t.Coef
		switch {
		case k == 0 && c < 0:
			b.WriteByte('-')
			c = -c
		case k > 0 && c < 0:
			b.WriteString(" - ")
			c = -c
		case k > 0:
			b.WriteString(" + ")
		}
		if c != 1 {
			fmt.Fprintf(b, "%d*", c)
		}
		b.WriteString(n.atom(t.Atom))
	}
}

func (n *namer) atom(a te.Atom) string {
	switch a.Op {
	case te.AtomVar:
		return n.name(a.Var)
	case te.AtomDiv:
		return fmt.Sprintf("floor(%s/%d)", n.operand(*a.Arg), a.Divisor)
	default:
		return fmt.Sprintf("(%s mod %d)", n.operand(*a.Arg), a.Divisor)
	}
}

// operand formats x in parentheses unless it is a single atom.
func (n *namer) operand(x te.Index) string {
	if x.Const == 0 && len(x.Terms) == 1 && x.Terms[0].Coef == 1 {
		return n.atom(x.Terms[0].Atom)
	}
	return "(" + n.index(x) + ")"
}

// constraint formats c with the constant on the right and, for an
// inequality, a leading term with a positive coefficient: "i + kh >= 1",
// "i <= 3".
func (n *namer) constraint(c Constraint) string {
	x := c.Expr
	op := map[CmpOp]string{GE: ">=", EQ: "=", NE: "!="}[c.Op]
	if len(x.Terms) > 0 && x.Terms[0].Coef < 0 {
		x = x.Scale(-1)
		if c.Op == GE {
			op = "<="
		}
	}
	var b strings.Builder
	if len(x.Terms) == 0 {
		b.WriteByte('0')
	}
	n.terms(&b, x.Terms)
	fmt.Fprintf(&b, " %s %d", op, -x.Const)
	return b.String()
}
