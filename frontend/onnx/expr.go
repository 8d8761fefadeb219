package onnx

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"tec/te"
)

// An expr is the body of a statement: the element of a tensor at the
// statement's index variables. The same tree is printed as .te source and,
// where every tensor it reads is known at import, evaluated to fold the
// node into a constant, so a folded node means what its printed form would.
type expr interface{ dtype() te.DType }

type (
	// lit is a number; its dtype says whether it prints as an int or a
	// float.
	lit struct {
		v  float64
		dt te.DType
	}
	// ivar is an index variable of the statement, or of a reduction.
	ivar struct{ name string }
	// access reads an element of a tensor; an index may itself read a
	// tensor (a gather).
	access struct {
		v   *value
		idx []expr
	}
	// unary is -x, !x, or an element function of one argument (exp, relu, ...).
	unary struct {
		op string
		x  expr
	}
	// binary is an operator, or a two-argument element function (max,
	// min, pow).
	binary struct {
		op   string
		a, b expr
	}
	// sel is select(c, a, b).
	sel struct{ c, a, b expr }
	// reduce is op[vars](body), op being sum, max, min, prod, argmax or
	// argmin.
	reduce struct {
		op   string
		vars []loopVar
		body expr
	}
	// cast converts x to a dtype.
	cast struct {
		to te.DType
		x  expr
	}
)

// loopVar is an index variable and the number of values it takes.
type loopVar struct {
	name string
	size int
}

func (e lit) dtype() te.DType    { return e.dt }
func (e ivar) dtype() te.DType   { return te.I32 }
func (e access) dtype() te.DType { return e.v.dt }
func (e unary) dtype() te.DType {
	if e.op == "!" {
		return te.Bool
	}
	return e.x.dtype()
}
func (e binary) dtype() te.DType {
	switch e.op {
	case "<", "<=", ">", ">=", "==", "!=", "&&", "||":
		return te.Bool
	}
	if e.a.dtype() == te.I32 && e.b.dtype() == te.I32 {
		return te.I32
	}
	return te.F32
}
func (e sel) dtype() te.DType {
	if e.a.dtype() == te.I32 && e.b.dtype() == te.I32 {
		return te.I32
	}
	if e.a.dtype() == te.Bool && e.b.dtype() == te.Bool {
		return te.Bool
	}
	return te.F32
}
func (e reduce) dtype() te.DType {
	if e.op == "argmax" || e.op == "argmin" {
		return te.I32
	}
	return e.body.dtype()
}
func (e cast) dtype() te.DType { return e.to }

// Constructors that fold what is known, so that the printed program has no
// "x * 1" or "i + 0".

func flit(v float64) expr { return lit{v, te.F32} }
func ilit(v int) expr     { return lit{float64(v), te.I32} }

func isLit(e expr, v float64) bool {
	l, ok := e.(lit)
	return ok && l.v == v
}

func add(a, b expr) expr {
	switch {
	case isLit(b, 0):
		return a
	case isLit(a, 0):
		return b
	}
	if l, ok := b.(lit); ok && l.v < 0 && l.dt == te.I32 {
		return binary{"-", a, ilit(int(-l.v))}
	}
	return binary{"+", a, b}
}

func sub(a, b expr) expr {
	if isLit(b, 0) {
		return a
	}
	return binary{"-", a, b}
}

func mul(a, b expr) expr {
	switch {
	case isLit(a, 1):
		return b
	case isLit(b, 1):
		return a
	case isLit(a, 0) && a.dtype() == te.I32, isLit(b, 0) && b.dtype() == te.I32:
		return ilit(0)
	}
	return binary{"*", a, b}
}

func div(a, b expr) expr {
	if isLit(b, 1) {
		return a
	}
	return binary{"/", a, b}
}

// idiv and imod are floor division and remainder of index expressions by a
// positive constant.
func idiv(a expr, n int) expr {
	if n == 1 {
		return a
	}
	return binary{"/", a, ilit(n)}
}

func imod(a expr, n int) expr { return binary{"%", a, ilit(n)} }

func and(a, b expr) expr {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return binary{"&&", a, b}
}

func or(a, b expr) expr {
	if isLit(a, 0) && a.dtype() == te.Bool {
		return b
	}
	return binary{"||", a, b}
}

func call(fn string, x expr) expr { return unary{fn, x} }

// Printing.

// precedence of an expression's top operator; atoms bind tightest.
func precedence(e expr) int {
	switch e := e.(type) {
	case binary:
		switch e.op {
		case "||":
			return 1
		case "&&":
			return 2
		case "<", "<=", ">", ">=", "==", "!=":
			return 3
		case "+", "-":
			return 4
		case "*", "/", "%":
			return 5
		case "**":
			return 7
		}
	case unary:
		if e.op == "-" || e.op == "!" {
			return 6
		}
	case lit:
		if e.v < 0 {
			return 6
		}
	}
	return 10
}

// printer prints expressions; bare says to print tensors of the
// statement's shape without indices (a whole-tensor statement).
type printer struct {
	bare bool
}

func (p printer) print(e expr) string {
	switch e := e.(type) {
	case lit:
		return formatLit(e)
	case ivar:
		return e.name
	case access:
		if p.bare || len(e.idx) == 0 {
			return e.v.name
		}
		idx := make([]string, len(e.idx))
		for i, x := range e.idx {
			idx[i] = p.print(x)
		}
		return e.v.name + "[" + strings.Join(idx, ", ") + "]"
	case unary:
		if e.op == "-" || e.op == "!" {
			return e.op + p.operand(e.x, 6, false)
		}
		return e.op + "(" + p.print(e.x) + ")"
	case binary:
		switch e.op {
		case "max", "min", "pow":
			return e.op + "(" + p.print(e.a) + ", " + p.print(e.b) + ")"
		case "**":
			// binds tighter than a unary minus on its left: (-x) ** 2
			return p.operand(e.a, 7, true) + " ** " + p.operand(e.b, 7, true)
		}
		prec := precedence(e)
		return p.operand(e.a, prec, false) + " " + e.op + " " + p.operand(e.b, prec, true)
	case sel:
		return "select(" + p.print(e.c) + ", " + p.print(e.a) + ", " + p.print(e.b) + ")"
	case reduce:
		names := make([]string, len(e.vars))
		for i, a := range e.vars {
			names[i] = a.name
		}
		return e.op + "[" + strings.Join(names, ", ") + "](" + p.print(e.body) + ")"
	case cast:
		return e.to.String() + "(" + p.print(e.x) + ")"
	}
	panic(fmt.Sprintf("onnx: cannot print %T", e))
}

// operand prints an operand of an operator of precedence prec; right says
// it is the right operand, which needs parentheses at equal precedence too
// (a - (b - c)), and so do comparisons, which do not chain.
func (p printer) operand(e expr, prec int, right bool) string {
	s := p.print(e)
	q := precedence(e)
	if q < prec || q == prec && (right || prec == 3) {
		return "(" + s + ")"
	}
	return s
}

// formatLit prints a number: an int as an int, a float with a fraction or
// an exponent (the language's float syntax), in the shortest form that
// reads back to the same float32, and the infinities as inf and -inf.
func formatLit(l lit) string {
	if l.dt == te.I32 || l.dt == te.Bool {
		return strconv.FormatInt(int64(l.v), 10)
	}
	v := l.v
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(v, 'g', -1, 32)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return strings.Replace(s, "e+", "e", 1)
}

// Evaluation, for folding nodes whose inputs are all known at import.

// eval computes e at the index variables' values env.
func eval(e expr, env map[string]int) (float64, error) {
	switch e := e.(type) {
	case lit:
		return e.v, nil
	case ivar:
		v, ok := env[e.name]
		if !ok {
			return 0, fmt.Errorf("index variable %s is unbound", e.name)
		}
		return float64(v), nil
	case access:
		c := e.v.constant
		if c == nil {
			return 0, fmt.Errorf("%s is not known at import", e.v.onnx)
		}
		off := 0
		for d, x := range e.idx {
			i, err := eval(x, env)
			if err != nil {
				return 0, err
			}
			n := c.Shape[d]
			if i < 0 || int(i) >= n {
				return 0, fmt.Errorf("index %v of %s is out of bounds 0..%d", i, e.v.onnx, n)
			}
			off = off*n + int(i)
		}
		return c.Data[off], nil
	case unary:
		x, err := eval(e.x, env)
		if err != nil {
			return 0, err
		}
		return unaryValue(e.op, x)
	case binary:
		a, err := eval(e.a, env)
		if err != nil {
			return 0, err
		}
		if e.op == "&&" && a == 0 || e.op == "||" && a != 0 {
			return a, nil
		}
		b, err := eval(e.b, env)
		if err != nil {
			return 0, err
		}
		return binaryValue(e.op, a, b, e.dtype() == te.I32)
	case sel:
		c, err := eval(e.c, env)
		if err != nil {
			return 0, err
		}
		if c != 0 {
			return eval(e.a, env)
		}
		return eval(e.b, env)
	case reduce:
		if e.op == "argmax" || e.op == "argmin" {
			return evalArg(e, env)
		}
		acc := 0.0
		switch e.op {
		case "max":
			acc = math.Inf(-1)
		case "min":
			acc = math.Inf(1)
		case "prod":
			acc = 1
		}
		err := forEach(e.vars, env, func() error {
			v, err := eval(e.body, env)
			switch e.op {
			case "max":
				acc = math.Max(acc, v)
			case "min":
				acc = math.Min(acc, v)
			case "prod":
				acc *= v
			default:
				acc += v
			}
			return err
		})
		return acc, err
	case cast:
		x, err := eval(e.x, env)
		switch e.to {
		case te.I32:
			x = math.Trunc(x)
		case te.Bool:
			x = b2f(x != 0)
		case te.F32:
			x = float64(float32(x))
		}
		return x, err
	}
	return 0, fmt.Errorf("cannot evaluate %T", e)
}

// evalArg computes argmax or argmin: the row-major position over the axes
// of the first greatest (least) value, as the language defines it.
func evalArg(e reduce, env map[string]int) (float64, error) {
	best, at, pos := math.NaN(), 0, 0
	err := forEach(e.vars, env, func() error {
		v, err := eval(e.body, env)
		better := v > best
		if e.op == "argmin" {
			better = v < best
		}
		if !math.IsNaN(v) && (math.IsNaN(best) || better) {
			best, at = v, pos
		}
		pos++
		return err
	})
	return float64(at), err
}

// forEach calls f with env holding every point of the axes, in row-major
// order.
func forEach(axes []loopVar, env map[string]int, f func() error) error {
	if len(axes) == 0 {
		return f()
	}
	for i := 0; i < axes[0].size; i++ {
		env[axes[0].name] = i
		if err := forEach(axes[1:], env, f); err != nil {
			return err
		}
	}
	delete(env, axes[0].name)
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unaryValue(op string, x float64) (float64, error) {
	switch op {
	case "-":
		return -x, nil
	case "!":
		return b2f(x == 0), nil
	case "exp":
		return math.Exp(x), nil
	case "log":
		return math.Log(x), nil
	case "sqrt":
		return math.Sqrt(x), nil
	case "rsqrt":
		return 1 / math.Sqrt(x), nil
	case "tanh":
		return math.Tanh(x), nil
	case "sigmoid":
		return 1 / (1 + math.Exp(-x)), nil
	case "erf":
		return math.Erf(x), nil
	case "sin":
		return math.Sin(x), nil
	case "cos":
		return math.Cos(x), nil
	case "abs":
		return math.Abs(x), nil
	case "relu":
		return math.Max(x, 0), nil
	case "gelu":
		return 0.5 * x * (1 + math.Tanh(0.7978845608*(x+0.044715*x*x*x))), nil
	}
	return 0, fmt.Errorf("cannot evaluate %s", op)
}

func binaryValue(op string, a, b float64, ints bool) (float64, error) {
	switch op {
	case "+":
		return a + b, nil
	case "-":
		return a - b, nil
	case "*":
		return a * b, nil
	case "/":
		if ints {
			if b == 0 {
				return 0, fmt.Errorf("integer division by zero")
			}
			return math.Floor(a / b), nil
		}
		return a / b, nil
	case "%":
		if b == 0 {
			return 0, fmt.Errorf("integer division by zero")
		}
		return a - b*math.Floor(a/b), nil
	case "fmod":
		// ONNX's Mod of floats (fmod 1), folded at import only: the
		// language has no such operator
		return math.Mod(a, b), nil
	case "max":
		return math.Max(a, b), nil
	case "min":
		return math.Min(a, b), nil
	case "pow", "**":
		return math.Pow(a, b), nil
	case "<":
		return b2f(a < b), nil
	case "<=":
		return b2f(a <= b), nil
	case ">":
		return b2f(a > b), nil
	case ">=":
		return b2f(a >= b), nil
	case "==":
		return b2f(a == b), nil
	case "!=":
		return b2f(a != b), nil
	case "&&":
		return b2f(a != 0 && b != 0), nil
	case "||":
		return b2f(a != 0 || b != 0), nil
	}
	return 0, fmt.Errorf("cannot evaluate %s", op)
}
