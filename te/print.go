package te

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// String formats the program in the style of TVM's te.compute, one tensor per
// line, as Fprint does.
func (p *Program) String() string {
	var b strings.Builder
	Fprint(&b, p) // a strings.Builder never fails
	return b.String()
}

// Fprint writes the program to w in the style of TVM's te.compute, one tensor
// per line, followed by its outputs:
//
//	# model softmax
//	x = placeholder((128, 768), "f32", name="x")  # input, softmax.te:6:3
//	m = compute((128,), lambda i: max(x[i, j], axis=[j:768]), name="m")  # softmax.te:7:3
//	...
//	outputs: y
//
// Every output axis is a lambda parameter, whose extent is the matching entry
// of the shape; reductions list their axes with extents; compute tensors show
// their dtype when it is not f32. Indexes are written as by Index.String.
// Variables that share a name within a tensor get a suffix (i, i_1, ...) so
// that the text is unambiguous. The trailing comment holds the placeholder's
// kind, the tensor's scope and its source location.
func Fprint(w io.Writer, p *Program) error {
	var b strings.Builder
	if p.Name != "" {
		fmt.Fprintf(&b, "# model %s\n", p.Name)
	}
	tensors := make(map[string]bool, len(p.Tensors))
	for _, t := range p.Tensors {
		tensors[tensorName(t)] = true
	}
	for _, t := range p.Tensors {
		writeTensor(&b, t, tensors)
		b.WriteByte('\n')
	}
	b.WriteString("outputs:")
	for i, t := range p.Outputs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte(' ')
		b.WriteString(tensorName(t))
	}
	b.WriteByte('\n')
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("te: printing program %q: %w", p.Name, err)
	}
	return nil
}

// FormatExpr formats an expression as the body of a compute line, e.g.
// "sum(x[i, k] * w[k, j], axis=[k:768]) + b[j]". Variables that share a name,
// with each other or with a tensor that e loads, get a suffix (i, i_1, ...) in
// order of first appearance.
func FormatExpr(e Expr) string {
	pr := newExprPrinter()
	for _, t := range Inputs(e) {
		pr.Reserve(tensorName(t))
	}
	Walk(e, func(x Expr) bool {
		switch x := x.(type) {
		case *Reduce:
			for _, v := range x.Axes {
				pr.name(v)
			}
		case *Load:
			for _, ix := range x.Index {
				pr.nameIndex(ix)
			}
		case *IndexExpr:
			pr.nameIndex(x.Index)
		}
		return true
	})
	var b strings.Builder
	pr.expr(&b, e, 0)
	return b.String()
}

func tensorName(t *Tensor) string {
	if t.Name == "" {
		return fmt.Sprintf("t%d", t.ID)
	}
	return t.Name
}

// writeTensor writes t's line, without the newline. Variables are not given
// the names of tensors.
func writeTensor(b *strings.Builder, t *Tensor, tensors map[string]bool) {
	name := tensorName(t)
	shape := formatShape(t.Shape)
	if t.Kind != Compute {
		fmt.Fprintf(b, "%s = placeholder(%s, %q, name=%q)", name, shape, t.DType.String(), name)
	} else {
		pr := &exprPrinter{newNamerAvoiding(tensors)}
		params := make([]string, len(t.Axes))
		for i, v := range t.Axes {
			params[i] = pr.name(v)
		}
		fmt.Fprintf(b, "%s = compute(%s, lambda", name, shape)
		if len(params) > 0 {
			b.WriteString(" " + strings.Join(params, ", "))
		}
		b.WriteString(": ")
		if t.Body == nil {
			b.WriteString("<nil>")
		} else {
			Walk(t.Body, func(x Expr) bool {
				if r, ok := x.(*Reduce); ok {
					for _, v := range r.Axes {
						pr.name(v)
					}
				}
				return true
			})
			pr.expr(b, t.Body, 0)
		}
		if t.DType != F32 {
			fmt.Fprintf(b, ", dtype=%q", t.DType.String())
		}
		fmt.Fprintf(b, ", name=%q)", name)
		if u := t.Update; u != nil {
			b.WriteString(" -> ")
			pr.expr(b, u.Dest(), 0)
		}
	}
	var notes []string
	if t.Kind != Compute {
		notes = append(notes, t.Kind.String())
	}
	if len(t.Scope) > 0 {
		notes = append(notes, "in "+strings.Join(t.Scope, "/"))
	}
	if t.Span.IsValid() || t.Span.File != "" {
		notes = append(notes, t.Span.String())
	}
	if len(notes) > 0 {
		b.WriteString("  # " + strings.Join(notes, ", "))
	}
}

func formatShape(shape []int) string {
	switch len(shape) {
	case 0:
		return "()"
	case 1:
		return fmt.Sprintf("(%d,)", shape[0])
	}
	s := make([]string, len(shape))
	for i, d := range shape {
		s[i] = strconv.Itoa(d)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// exprPrinter formats expressions, giving each distinct Var a distinct name.
type exprPrinter struct {
	*Namer
}

func newExprPrinter() *exprPrinter { return &exprPrinter{NewNamer()} }

// name returns v's printed name, choosing one on first sight.
func (pr *exprPrinter) name(v *Var) string { return pr.Name(v) }

// nameIndex names the variables of x in order of appearance.
func (pr *exprPrinter) nameIndex(x Index) {
	for _, v := range x.Vars() {
		pr.name(v)
	}
}

// index formats x as Index.String does, with the printer's variable names.
func (pr *exprPrinter) index(x Index) string { return x.Format(Language, pr.name) }

// Operator precedences, loosest first.
const (
	precOr = iota + 1
	precAnd
	precCmp
	precAdd
	precMul
	precUnary
	precAtom
)

func binaryPrec(op BinaryOp) int {
	switch op {
	case Or:
		return precOr
	case And:
		return precAnd
	case Add, Sub:
		return precAdd
	case Mul, Div, Mod:
		return precMul
	}
	if op.IsComparison() {
		return precCmp
	}
	return precAtom // max, min, pow are calls
}

// prec returns the precedence of e's outermost operator.
func (pr *exprPrinter) prec(e Expr) int {
	switch e := e.(type) {
	case *ConstExpr:
		if e.Value < 0 || math.Signbit(e.Value) {
			return precUnary
		}
	case *IndexExpr:
		if _, ok := e.Index.AsVar(); ok {
			return precAtom
		}
		if c, ok := e.Index.IsConst(); ok && c >= 0 {
			return precAtom
		}
		return precAdd
	case *Unary:
		if e.Op == Neg || e.Op == Not {
			return precUnary
		}
	case *Binary:
		return binaryPrec(e.Op)
	}
	return precAtom
}

// expr writes e, in parentheses if its operator binds less tightly than min.
func (pr *exprPrinter) expr(b *strings.Builder, e Expr, min int) {
	if pr.prec(e) < min {
		b.WriteByte('(')
		pr.expr(b, e, 0)
		b.WriteByte(')')
		return
	}
	switch e := e.(type) {
	case *ConstExpr:
		b.WriteString(formatConst(e))
	case *IndexExpr:
		b.WriteString(pr.index(e.Index))
	case *Load:
		b.WriteString(tensorName(e.Tensor))
		b.WriteByte('[')
		for i, x := range e.Index {
			if i > 0 {
				b.WriteString(", ")
			}
			g := e.Gathered(i)
			if g == nil {
				b.WriteString(pr.index(x))
				continue
			}
			pr.expr(b, g, 0)
			switch c, isConst := x.IsConst(); {
			case isConst && c == 0:
			case isConst && c < 0:
				fmt.Fprintf(b, " - %d", -c)
			default:
				b.WriteString(" + " + pr.index(x))
			}
		}
		b.WriteByte(']')
	case *Unary:
		switch e.Op {
		case Neg:
			b.WriteByte('-')
			pr.expr(b, e.X, precUnary)
		case Not:
			b.WriteByte('!')
			pr.expr(b, e.X, precUnary)
		default:
			pr.call(b, e.Op.String(), e.X)
		}
	case *Binary:
		p := binaryPrec(e.Op)
		if p == precAtom {
			pr.call(b, e.Op.String(), e.X, e.Y)
			return
		}
		pr.expr(b, e.X, p)
		b.WriteString(" " + e.Op.String() + " ")
		pr.expr(b, e.Y, p+1)
	case *Select:
		pr.call(b, "select", e.Cond, e.Then, e.Else)
	case *Cast:
		pr.call(b, e.To.String(), e.X)
	case *Reduce:
		b.WriteString(e.Op.String())
		b.WriteByte('(')
		pr.expr(b, e.Body, 0)
		b.WriteString(", axis=[")
		for i, v := range e.Axes {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "%s:%d", pr.name(v), v.Extent)
		}
		b.WriteString("])")
	case nil:
		b.WriteString("<nil>")
	default:
		fmt.Fprintf(b, "<%T>", e)
	}
}

func (pr *exprPrinter) call(b *strings.Builder, fn string, args ...Expr) {
	b.WriteString(fn)
	b.WriteByte('(')
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		pr.expr(b, a, 0)
	}
	b.WriteByte(')')
}

// formatConst writes a literal so that its type shows: i32 values as
// integers, booleans as true and false, floats always with a point or an
// exponent (1.0, 1e-05, inf).
func formatConst(c *ConstExpr) string {
	switch c.DType {
	case I32:
		return strconv.FormatFloat(c.Value, 'f', -1, 64)
	case Bool:
		if c.Value != 0 {
			return "true"
		}
		return "false"
	}
	v := c.Value
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case math.IsNaN(v):
		return "nan"
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".en") {
		s += ".0"
	}
	if c.DType != F32 {
		s = fmt.Sprintf("%s(%s)", c.DType, s)
	}
	return s
}
