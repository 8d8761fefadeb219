package lang

import (
	"fmt"
	"math/big"

	"tec/lang/syntax"
	"tec/te"
)

// scalarKind says which representation a scalar has.
type scalarKind int

const (
	sBad   scalarKind = iota // an error was reported; uses stay silent
	sNum                     // a compile-time number
	sIndex                   // a quasi-affine index value (i32)
	sExpr                    // any other element expression
)

// scalar is the value of an element expression while a body is lowered. It
// keeps compile-time numbers and quasi-affine index values apart from general
// expressions, so that indexes stay analysable and constants fold.
type scalar struct {
	k    scalarKind
	num  number
	idx  te.Index
	expr te.Expr
	// typ is the type of expr; of a number, F16 or BF16 when the number is
	// a half-precision cast of a number (f16(0.3)), so that a body made of
	// it stores that dtype as every cast body does, and F32 otherwise.
	typ te.DType
	// why says, for an i32 expression that is not quasi-affine, which part is
	// not, e.g. "i * j is a product of two index variables".
	why string
	// facts are comparisons a bool value implies (a conjunction); single is
	// set when the value is exactly one comparison, which may be negated.
	facts  []fact
	single bool
	// cost is the number of nodes of expr counted as a tree (at most
	// maxCost), and reduces says whether expr holds a reduction: what
	// makes an argument worth binding once (shared.go).
	cost    int
	reduces bool
	// part records, for an index value computed by arithmetic, its
	// sub-expressions, whose ranges checkBounds proves exact (maxExact).
	part *indexPart
}

// indexPart is an index value computed by an operator, with the parts of
// its operands that were computed too: the sub-expressions of an index,
// kept until the ranges of their variables are known.
type indexPart struct {
	ix   te.Index
	file string
	span syntax.Span
	args []*indexPart
}

// maxExact bounds the magnitude of every value index arithmetic computes:
// the reference evaluator computes integer values in float64, whose
// integers are exact up to 2^53. Constants and coefficients are checked
// against it as an index is built (so that building it never wraps), and
// the range of every sub-expression once the variables' ranges are known.
const maxExact = 1 << 53

// exactHint is the hint of the errors that index arithmetic exceeds maxExact.
const exactHint = "index arithmetic is exact only within ±2^53 (9007199254740992), the integers the reference evaluator's float64 holds: keep every constant, product and sum of an index within it"

// fact is a comparison ix op 0 of a canonical index against zero.
type fact struct {
	ix te.Index
	op string // "<", "<=", ">", ">=", "==" or "!="
}

var badScalar = scalar{k: sBad}

func numScalar(n number) scalar     { return scalar{k: sNum, num: n} }
func indexScalar(x te.Index) scalar { return scalar{k: sIndex, idx: x} }

// exprScalar returns the scalar of e, a node just built from operands, the
// scalars its operand expressions came from. The node is typed from their
// types (te.NodeType), never by descending into e: typing each node of a
// long expression by walking it would make lowering it quadratic. Operand
// expressions not among operands are leaves that toExpr made.
func exprScalar(e te.Expr, operands ...scalar) scalar {
	typ := te.NodeType(e, func(x te.Expr) te.DType {
		for _, o := range operands {
			if o.k == sExpr && o.expr == x {
				return o.typ
			}
		}
		return te.TypeOf(x)
	})
	cost, reduces := 1, false
	for _, o := range operands {
		if o.k == sExpr {
			cost = min(cost+o.cost, maxCost)
			reduces = reduces || o.reduces
		} else {
			cost = min(cost+1, maxCost)
		}
	}
	if _, ok := e.(*te.Reduce); ok {
		reduces = true
	}
	return scalar{k: sExpr, expr: e, typ: typ, cost: cost, reduces: reduces}
}

// dtype returns the type of the scalar's value.
func (s scalar) dtype() te.DType {
	switch s.k {
	case sNum:
		if s.num.isInt {
			return te.I32
		}
		return s.typ
	case sIndex:
		return te.I32
	}
	return s.typ
}

// asIndex returns the scalar as an index when it is an int or an index value.
func (s scalar) asIndex() (te.Index, bool) {
	switch s.k {
	case sNum:
		if s.num.isInt {
			return te.Const(s.num.i), true
		}
	case sIndex:
		return s.idx, true
	}
	return te.Index{}, false
}

// toExpr converts the scalar to an expression; an int number becomes an f32
// constant when asFloat is set (it meets a float operand).
func (s scalar) toExpr(asFloat bool) te.Expr {
	switch s.k {
	case sNum:
		if s.num.isInt && !asFloat {
			return &te.ConstExpr{Value: float64(s.num.i), DType: te.I32}
		}
		c := &te.ConstExpr{Value: s.num.float(), DType: te.F32}
		if s.typ != te.F32 {
			return &te.Cast{To: s.typ, X: c}
		}
		return c
	case sIndex:
		if c, ok := s.idx.IsConst(); ok {
			if asFloat {
				return &te.ConstExpr{Value: float64(c), DType: te.F32}
			}
			return &te.ConstExpr{Value: float64(c), DType: te.I32}
		}
		return &te.IndexExpr{Index: s.idx}
	}
	return s.expr
}

func typeName(dt te.DType) string { return dt.String() }

var binaryOps = map[string]te.BinaryOp{
	"+": te.Add, "-": te.Sub, "*": te.Mul, "/": te.Div, "%": te.Mod,
	"<": te.Lt, "<=": te.Le, ">": te.Gt, ">=": te.Ge, "==": te.Eq, "!=": te.Ne,
	"&&": te.And, "||": te.Or,
}

// binary applies a binary operator to two element values. xs and ys locate the
// operands for messages; span is the whole expression.
func (c *checker) binary(file string, span syntax.Span, op string, x, y scalar, xs, ys syntax.Span) scalar {
	if x.k == sBad || y.k == sBad {
		return badScalar
	}
	if x.k == sNum && y.k == sNum {
		if (op == "%") && (!x.num.isInt || !y.num.isInt) {
			c.errorAt(file, span, "type", "", "%% needs two ints, got %s and %s", describe(x.num), describe(y.num))
			return badScalar
		}
		n, err := foldBinary(op, x.num, y.num)
		if err != nil {
			c.errorAt(file, span, "type", "", "%s: %v", c.text(file, span), err)
			return badScalar
		}
		return numScalar(n)
	}
	switch op {
	case "&&", "||":
		return c.logic(file, span, op, x, y, xs, ys)
	case "<", "<=", ">", ">=", "==", "!=":
		return c.compare(file, span, op, x, y, xs, ys)
	}
	tx, ty := x.dtype(), y.dtype()
	if tx == te.Bool || ty == te.Bool {
		at := xs
		if tx != te.Bool {
			at = ys
		}
		c.errorAt(file, at, "type", "convert it with f32(...) or select(c, 1.0, 0.0)",
			"operator %s needs numbers, but %s is a bool", op, c.text(file, at))
		return badScalar
	}
	if op == "**" {
		return c.callElem(file, span, lookupBuiltin("pow"), []scalar{x, y}, []syntax.Span{xs, ys})
	}
	if op == "%" && (tx != te.I32 || ty != te.I32) {
		at := xs
		if tx == te.I32 {
			at = ys
		}
		c.errorAt(file, at, "type", "convert it with i32(...)", "%% needs ints, but %s is %s", c.text(file, at), typeName(te.F32))
		return badScalar
	}
	xi, xok := x.asIndex()
	yi, yok := y.asIndex()
	if xok && yok {
		if !c.exactOperand(file, span, x, xs) || !c.exactOperand(file, span, y, ys) {
			return badScalar
		}
		var r te.Index
		switch op {
		case "+":
			r = xi.Add(yi)
		case "-":
			r = xi.Sub(yi)
		case "*":
			if k, ok := yi.IsConst(); ok {
				var what string
				if r, what = scaleExact(xi, k); what != "" {
					return c.inexactIndex(file, span, what)
				}
				break
			}
			if k, ok := xi.IsConst(); ok {
				var what string
				if r, what = scaleExact(yi, k); what != "" {
					return c.inexactIndex(file, span, what)
				}
				break
			}
			return c.nonAffine(op, x, y, fmt.Sprintf("%s is a product of two index variables", c.text(file, span)))
		case "/", "%":
			k, ok := yi.IsConst()
			switch {
			case !ok:
				return c.nonAffine(op, x, y, fmt.Sprintf("%s is a division by a non-constant", c.text(file, span)))
			case k <= 0:
				what := "division"
				if op == "%" {
					what = "modulo"
				}
				if _, xc := xi.IsConst(); xc {
					c.errorAt(file, span, "type", "", "%s: %v", c.text(file, span), errDivZero)
					return badScalar
				}
				return c.nonAffine(op, x, y, fmt.Sprintf("%s is a %s by the non-positive constant %d", c.text(file, span), what, k))
			case op == "/":
				r = xi.Div(k)
			default:
				r = xi.Mod(k)
			}
		}
		if what := inexactTerms(r, 1); what != "" {
			return c.inexactIndex(file, span, what)
		}
		return indexScalar(r).withPart(file, span, x.part, y.part)
	}
	float := tx != te.I32 || ty != te.I32
	r := exprScalar(&te.Binary{Op: binaryOps[op], X: x.toExpr(float), Y: y.toExpr(float)}, x, y)
	if r.typ == te.I32 {
		r.why = firstWhy(x, y)
	}
	return r
}

// withPart returns s, an index value that an operator at span computed,
// recording it and the parts of its operands as a sub-expression.
func (s scalar) withPart(file string, span syntax.Span, args ...*indexPart) scalar {
	p := &indexPart{ix: s.idx, file: file, span: span}
	for _, a := range args {
		if a != nil {
			p.args = append(p.args, a)
		}
	}
	s.part = p
	return s
}

// exactNum reports whether s is not an int number beyond maxExact.
func exactNum(s scalar) bool {
	return s.k != sNum || !s.num.isInt || -maxExact <= s.num.i && s.num.i <= maxExact
}

// exactOperand reports an int number beyond maxExact that is an operand
// (at at) of the index arithmetic at span.
func (c *checker) exactOperand(file string, span syntax.Span, x scalar, at syntax.Span) bool {
	if exactNum(x) {
		return true
	}
	what := "the constant " + x.num.String()
	if t := c.text(file, at); t != x.num.String() {
		what = fmt.Sprintf("%s = %d", t, x.num.i)
	}
	c.errorAt(file, span, "bounds", exactHint, "index arithmetic %s exceeds 2^53: %s is beyond ±9007199254740992", c.text(file, span), what)
	return false
}

// inexactIndex reports that the index arithmetic at span makes a
// coefficient or constant beyond maxExact, which what describes.
func (c *checker) inexactIndex(file string, span syntax.Span, what string) scalar {
	c.errorAt(file, span, "bounds", exactHint, "index arithmetic %s exceeds 2^53: %s, beyond ±9007199254740992", c.text(file, span), what)
	return badScalar
}

// scaleExact returns k·x, or a description of its first constant or
// coefficient beyond maxExact, for x and k within it.
func scaleExact(x te.Index, k int) (te.Index, string) {
	if what := inexactTerms(x, k); what != "" {
		return te.Index{}, what
	}
	return x.Scale(k), ""
}

// inexactTerms describes the first of k·x's constant and coefficients that
// lies beyond maxExact, computed without overflow, or returns "".
func inexactTerms(x te.Index, k int) string {
	scaled := func(a int) (*big.Int, bool) {
		p := new(big.Int).Mul(big.NewInt(int64(a)), big.NewInt(int64(k)))
		return p, p.CmpAbs(big.NewInt(maxExact)) > 0
	}
	if p, over := scaled(x.Const); over {
		return "its constant term is " + p.String()
	}
	for _, t := range x.Terms {
		if p, over := scaled(t.Coef); over {
			return fmt.Sprintf("its coefficient of %s is %s", t.Atom, p)
		}
	}
	return ""
}

// nonAffine builds the i32 expression x op y, which is not quasi-affine.
func (c *checker) nonAffine(op string, x, y scalar, why string) scalar {
	r := exprScalar(&te.Binary{Op: binaryOps[op], X: x.toExpr(false), Y: y.toExpr(false)}, x, y)
	r.why = why
	return r
}

func firstWhy(xs ...scalar) string {
	for _, x := range xs {
		if x.why != "" {
			return x.why
		}
	}
	return "it is computed from tensor data"
}

// compare applies a comparison. Comparisons between index values record a
// fact, which narrows ranges inside select.
func (c *checker) compare(file string, span syntax.Span, op string, x, y scalar, xs, ys syntax.Span) scalar {
	tx, ty := x.dtype(), y.dtype()
	if (tx == te.Bool) != (ty == te.Bool) || (tx == te.Bool && op != "==" && op != "!=") {
		at := xs
		if tx != te.Bool {
			at = ys
		}
		c.errorAt(file, at, "type", "", "cannot compare with %s: %s is a bool", op, c.text(file, at))
		return badScalar
	}
	float := tx == te.F32 || ty == te.F32
	r := exprScalar(&te.Binary{Op: binaryOps[op], X: x.toExpr(float), Y: y.toExpr(float)}, x, y)
	xi, xok := x.asIndex()
	yi, yok := y.asIndex()
	if xok && yok && exactNum(x) && exactNum(y) {
		r.facts = []fact{{ix: xi.Sub(yi), op: op}}
		r.single = true
	}
	return r
}

// logic applies && or ||. A compile-time number stands for true or false.
func (c *checker) logic(file string, span syntax.Span, op string, x, y scalar, xs, ys syntax.Span) scalar {
	for _, o := range []struct {
		s  scalar
		at syntax.Span
	}{{x, xs}, {y, ys}} {
		if o.s.k != sNum && o.s.dtype() != te.Bool {
			c.errorAt(file, o.at, "type", "compare it, e.g. "+c.text(file, o.at)+" > 0.0",
				"operator %s needs bools, but %s is %s", op, c.text(file, o.at), typeName(o.s.dtype()))
			return badScalar
		}
	}
	if x.k == sNum {
		x, y = y, x
	}
	if y.k == sNum {
		// x op constant
		if (op == "&&") == y.num.truth() {
			x.single = x.single && true
			return x
		}
		return exprScalar(&te.ConstExpr{Value: boolValue(op == "||"), DType: te.Bool})
	}
	r := exprScalar(&te.Binary{Op: binaryOps[op], X: x.expr, Y: y.expr}, x, y)
	if op == "&&" {
		r.facts = append(append([]fact(nil), x.facts...), y.facts...)
	}
	return r
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// negate returns the comparison that holds exactly when op does not.
func negate(op string) string {
	switch op {
	case "<":
		return ">="
	case "<=":
		return ">"
	case ">":
		return "<="
	case ">=":
		return "<"
	case "==":
		return "!="
	}
	return "=="
}

// unary applies - or ! to an element value.
func (c *checker) unary(file string, span syntax.Span, op string, x scalar) scalar {
	if x.k == sBad {
		return badScalar
	}
	if op == "!" {
		if x.k == sNum {
			return numScalar(boolNum(!x.num.truth()))
		}
		if x.dtype() != te.Bool {
			c.errorAt(file, span, "type", "", "operator ! needs a bool, but %s is %s", c.text(file, span), typeName(x.dtype()))
			return badScalar
		}
		r := exprScalar(&te.Unary{Op: te.Not, X: x.expr}, x)
		if x.single {
			f := x.facts[0]
			r.facts = []fact{{ix: f.ix, op: negate(f.op)}}
			r.single = true
		}
		return r
	}
	switch x.k {
	case sNum:
		n, err := foldNeg(x.num)
		if err != nil {
			c.errorAt(file, span, "type", "", "%s: %v", c.text(file, span), err)
			return badScalar
		}
		return numScalar(n)
	case sIndex:
		return indexScalar(x.idx.Scale(-1)).withPart(file, span, x.part)
	}
	if x.typ == te.Bool {
		c.errorAt(file, span, "type", "use ! to negate a bool", "operator - needs a number, but %s is a bool", c.text(file, span))
		return badScalar
	}
	r := exprScalar(&te.Unary{Op: te.Neg, X: x.expr}, x)
	r.why = x.why
	return r
}

// castToVar applies T(x) for a dtype variable T. Bound to f16 or bf16 it is
// that cast; bound to f32 it leaves a float expression as it is, so that a
// generic function called on f32 tensors makes the program its f32 version
// would (an explicit f32 cast would also keep the tensor in f32 under
// --precision f16), and converts anything else as f32(x) does.
func (c *checker) castToVar(file string, span syntax.Span, t dtypeVar, x scalar, spans []syntax.Span) scalar {
	if t.dt == te.F32 && x.k == sExpr && x.typ == te.F32 {
		if _, isCast := x.expr.(*te.Cast); !isCast {
			return x
		}
	}
	return c.callElem(file, span, lookupBuiltin(t.dt.String()), []scalar{x}, spans)
}

// callElem applies an element function or a cast to element values.
func (c *checker) callElem(file string, span syntax.Span, b *builtin, args []scalar, spans []syntax.Span) scalar {
	for _, a := range args {
		if a.k == sBad {
			return badScalar
		}
	}
	if b.lower.form == lowerCast {
		dt, x := b.lower.dtype, args[0]
		if x.k == sNum {
			n, _ := b.fold([]number{x.num})
			r := numScalar(n)
			if dt == te.F16 || dt == te.BF16 {
				r.typ = dt
			}
			return r
		}
		if dt == te.I32 && x.k == sIndex {
			return x
		}
		r := exprScalar(&te.Cast{To: dt, X: x.toExpr(false)}, x)
		if dt == te.I32 {
			r.why = fmt.Sprintf("%s is computed from tensor data", c.text(file, span))
			if x.dtype() == te.I32 {
				r.why = x.why
			}
		}
		return r
	}
	for i, a := range args {
		if a.dtype() == te.Bool {
			c.errorAt(file, spans[i], "type", "convert it with f32(...)", "%s needs a number, but %s is a bool", b.name, c.text(file, spans[i]))
			return badScalar
		}
	}
	allNum := true
	for _, a := range args {
		allNum = allNum && a.k == sNum
	}
	if allNum {
		ns := make([]number, len(args))
		for i, a := range args {
			ns[i] = a.num
		}
		n, err := b.fold(ns)
		if err != nil {
			c.errorAt(file, span, "type", "", "%s: %v", c.text(file, span), err)
			return badScalar
		}
		return numScalar(n)
	}
	if b.lower.form == lowerUnary {
		r := exprScalar(&te.Unary{Op: b.lower.unary, X: args[0].toExpr(false)}, args[0])
		if r.typ == te.I32 {
			r.why = fmt.Sprintf("%s is not an affine operation", c.text(file, span))
		}
		return r
	}
	float := args[0].dtype() != te.I32 || args[1].dtype() != te.I32
	r := exprScalar(&te.Binary{Op: b.lower.binary, X: args[0].toExpr(float), Y: args[1].toExpr(float)}, args[0], args[1])
	if r.typ == te.I32 {
		r.why = fmt.Sprintf("%s is not an affine operation", c.text(file, span))
	}
	return r
}
