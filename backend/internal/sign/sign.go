// Package sign proves i32 expressions of kernel IR non-negative, so that
// emitters can write index arithmetic with C's truncating / and % (and
// LLVM's udiv and urem) where they agree with kir's flooring division.
package sign

import (
	"tec/backend/kir"
	"tec/te"
)

// Facts holds what is known about the variables of one kernel.
type Facts struct {
	nonNeg map[*kir.Var]bool
}

// Analyze returns the facts of kernel k's body: a variable is non-negative
// when it is never Assigned and its defining Let's value, or its For's lower
// bound (with a positive step), is non-negative.
func Analyze(body []kir.Stmt) *Facts {
	f := &Facts{nonNeg: map[*kir.Var]bool{}}
	assigned := map[*kir.Var]bool{}
	kir.WalkStmts(body, func(s kir.Stmt) bool {
		if a, ok := s.(*kir.Assign); ok {
			assigned[a.Var] = true
		}
		return true
	})
	// Definitions come before uses in a walk in program order, so one pass
	// sees every fact a later definition needs.
	kir.WalkStmts(body, func(s kir.Stmt) bool {
		switch s := s.(type) {
		case *kir.Let:
			if !assigned[s.Var] && f.NonNeg(s.Value) {
				f.nonNeg[s.Var] = true
			}
		case *kir.For:
			if f.NonNeg(s.Lo) && (s.Kind != kir.Serial && s.Kind != kir.Unrolled || s.Step > 0) {
				f.nonNeg[s.Var] = true
			}
		}
		return true
	})
	return f
}

// NonNeg reports whether e, an i32 or i64 expression, is provably never
// negative. It assumes no overflow, as the index arithmetic of kir does
// (the simulator checks it).
func (f *Facts) NonNeg(e kir.Expr) bool {
	if t := e.Type(); t != te.I32 && t != te.I64 {
		return false
	}
	switch e := e.(type) {
	case *kir.Const:
		return e.Value >= 0
	case *kir.Special:
		return true
	case *kir.Var:
		return f.nonNeg[e]
	case *kir.Binary:
		switch e.Op {
		case te.Add, te.Mul:
			return f.NonNeg(e.X) && f.NonNeg(e.Y)
		case te.Div:
			return f.NonNeg(e.X) && f.Positive(e.Y)
		case te.Mod:
			// A floored modulo has the divisor's sign.
			return f.Positive(e.Y)
		case te.Max:
			return f.NonNeg(e.X) || f.NonNeg(e.Y)
		case te.Min:
			return f.NonNeg(e.X) && f.NonNeg(e.Y)
		}
	case *kir.Unary:
		return e.Op == te.Abs
	case *kir.Select:
		return f.NonNeg(e.Then) && f.NonNeg(e.Else)
	case *kir.Cast:
		// Between i32 and i64 the value is kept.
		return f.NonNeg(e.X)
	}
	return false
}

// Positive reports whether e is an i32 or i64 constant greater than zero.
func (f *Facts) Positive(e kir.Expr) bool {
	c, ok := e.(*kir.Const)
	return ok && (c.T == te.I32 || c.T == te.I64) && c.Value > 0
}

// Truncating reports whether the i32 division or modulo x op y may be
// emitted with truncating arithmetic: y is a positive constant and x is
// non-negative, so truncation and flooring agree.
func (f *Facts) Truncating(x, y kir.Expr) bool { return f.Positive(y) && f.NonNeg(x) }
