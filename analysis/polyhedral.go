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
	nm := te.NewNamer()
	vars := m.Vars()
	for _, v := range vars {
		nm.Name(v)
	}
	for _, v := range m.Foreign {
		nm.Name(v)
	}
	var b strings.Builder
	b.WriteString("{ ")
	b.WriteString(nameOf(m.Out))
	b.WriteByte('[')
	for k, v := range m.Domain {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString(nm.Name(v))
	}
	b.WriteString("] -> ")
	b.WriteString(nameOf(m.In))
	b.WriteByte('[')
	for k, x := range m.Index {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x.Format(te.ISL, nm.Name))
	}
	b.WriteByte(']')
	var cs []string
	for _, v := range vars {
		cs = append(cs, fmt.Sprintf("0 <= %s < %d", nm.Name(v), v.Extent))
	}
	for _, c := range m.Guards {
		cs = append(cs, formatConstraint(nm, c))
	}
	if len(cs) > 0 {
		b.WriteString(" : ")
		b.WriteString(strings.Join(cs, " and "))
	}
	b.WriteString(" }")
	return b.String()
}

// formatConstraint formats c with the constant on the right and, for an
// inequality, a leading term with a positive coefficient: "i + kh >= 1",
// "i <= 3".
func formatConstraint(nm *te.Namer, c Constraint) string {
	x := c.Expr
	op := map[CmpOp]string{GE: ">=", EQ: "=", NE: "!="}[c.Op]
	if len(x.Terms) > 0 && x.Terms[0].Coef < 0 {
		x = x.Scale(-1)
		if c.Op == GE {
			op = "<="
		}
	}
	lhs := te.Index{Terms: x.Terms}.Format(te.ISL, nm.Name)
	return fmt.Sprintf("%s %s %d", lhs, op, -x.Const)
}
