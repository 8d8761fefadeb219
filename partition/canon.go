package partition

import (
	"fmt"
	"math"
	"strings"

	"tec/te"
)

// Resident stages find equal weight slices by printing each stage's
// stationary factor in a canonical form, with the batch entry substituted:
// equal text, equal slices, whichever stage reads them.

// canon writes the canonical form of e with the variables of env replaced
// by their values and selects whose conditions become constant resolved,
// naming the other variables by names. It reports false for what it cannot
// print canonically (a reduction, a variable it has no name for).
func canon(b *strings.Builder, e te.Expr, env map[*te.Var]int, names map[*te.Var]string) bool {
	index := func(x te.Index) (string, bool) {
		y := x.Substitute(func(v *te.Var) (te.Index, bool) {
			c, ok := env[v]
			return te.Const(c), ok
		}).Simplify()
		ok := true
		s := y.Format(te.Language, func(v *te.Var) string {
			n, named := names[v]
			ok = ok && named
			return n
		})
		return s, ok
	}
	switch e := e.(type) {
	case *te.ConstExpr:
		fmt.Fprintf(b, "%v:%s", e.Value, e.DType)
	case *te.IndexExpr:
		s, ok := index(e.Index)
		if !ok {
			return false
		}
		b.WriteString("(" + s + ")")
	case *te.Load:
		b.WriteString(e.Tensor.Name + "[")
		for i, x := range e.Index {
			s, ok := index(x)
			if !ok {
				return false
			}
			if i > 0 {
				b.WriteByte(',')
			}
			if g := e.Gathered(i); g != nil {
				b.WriteString("gather(")
				if !canon(b, g, env, names) {
					return false
				}
				b.WriteString(")+")
			}
			b.WriteString(s)
		}
		b.WriteByte(']')
	case *te.Unary:
		b.WriteString(e.Op.String() + "(")
		if !canon(b, e.X, env, names) {
			return false
		}
		b.WriteByte(')')
	case *te.Binary:
		b.WriteString(e.Op.String() + "(")
		if !canon(b, e.X, env, names) {
			return false
		}
		b.WriteByte(',')
		if !canon(b, e.Y, env, names) {
			return false
		}
		b.WriteByte(')')
	case *te.Cast:
		b.WriteString("cast<" + e.To.String() + ">(")
		if !canon(b, e.X, env, names) {
			return false
		}
		b.WriteByte(')')
	case *te.Select:
		if c, ok := constValue(e.Cond, env); ok {
			if c != 0 {
				return canon(b, e.Then, env, names)
			}
			return canon(b, e.Else, env, names)
		}
		b.WriteString("select(")
		for i, x := range []te.Expr{e.Cond, e.Then, e.Else} {
			if i > 0 {
				b.WriteByte(',')
			}
			if !canon(b, x, env, names) {
				return false
			}
		}
		b.WriteByte(')')
	default:
		return false
	}
	return true
}

// constValue evaluates an integer or boolean expression whose variables
// are all in env (booleans as 0 and 1).
func constValue(e te.Expr, env map[*te.Var]int) (int, bool) {
	switch e := e.(type) {
	case *te.ConstExpr:
		if e.DType.IsFloat() || e.Value != math.Trunc(e.Value) {
			return 0, false
		}
		return int(e.Value), true
	case *te.IndexExpr:
		for _, v := range e.Index.Vars() {
			if _, ok := env[v]; !ok {
				return 0, false
			}
		}
		return e.Index.Eval(func(v *te.Var) int { return env[v] }), true
	case *te.Unary:
		x, ok := constValue(e.X, env)
		if !ok || e.Op != te.Not {
			return 0, false
		}
		return b2i(x == 0), true
	case *te.Binary:
		x, okx := constValue(e.X, env)
		y, oky := constValue(e.Y, env)
		if !okx || !oky {
			return 0, false
		}
		switch e.Op {
		case te.Lt:
			return b2i(x < y), true
		case te.Le:
			return b2i(x <= y), true
		case te.Gt:
			return b2i(x > y), true
		case te.Ge:
			return b2i(x >= y), true
		case te.Eq:
			return b2i(x == y), true
		case te.Ne:
			return b2i(x != y), true
		case te.And:
			return b2i(x != 0 && y != 0), true
		case te.Or:
			return b2i(x != 0 || y != 0), true
		case te.Add:
			return x + y, true
		case te.Sub:
			return x - y, true
		case te.Mul:
			return x * y, true
		}
	}
	return 0, false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
