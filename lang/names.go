package lang

import (
	"strings"

	"tec/lang/syntax"
	"tec/te"
)

// Tensor names follow the source. A tensor that a statement binds takes the
// statement's name: f in f = linear(...), y in y[i] = ..., h for the element
// that h[l] = ... replaces. A call of a user function is named by the
// statement whose whole right-hand side it is (a = attention(q, k, v) names
// the call a), or, when it is part of an expression or the statement binds
// several names, by the statement's name and the function's: the inner call
// of f = linear(gelu(linear(x, w1, b1)), w2, b2) is f/linear. The tensors
// made inside a call are named by the call and their own statement, a/scores;
// calls nest, a/p/mx; the tensor a call returns takes the call's name, a. A
// tensor that an expression makes on the way (a whole-tensor expression
// passed to a function, a constant or a stack that is not bound) is named by
// its statement and what made it: f/gelu, y/add, h/zeros.
//
// Names repeat where loops and calls run a statement again; the program keeps
// the first tensor's name and gives the later ones the suffixes .1, .2, ...
// (h, h.1, h.2 for the three iterations of for l in 0..3 { h = ... }). The
// names that statements give are made unique before the names of the
// tensors expressions make, so that a statement's name is never taken by one.
// Inputs, params and outputs keep their names exactly.

// joinName returns the name of name inside the call named path.
func joinName(path, name string) string {
	if path == "" {
		return name
	}
	return path + "/" + name
}

// stmtName returns the name of what the current statement binds.
func (c *checker) stmtName() string {
	if c.frame == nil || c.frame.stmt == "" {
		return "t"
	}
	return c.frame.stmt
}

// madeName returns the name of a tensor that the current statement's
// expression makes on the way, by what made it.
func (c *checker) madeName(what string) string {
	return joinName(c.stmtName(), what)
}

// enterStmt starts a statement that binds name (in the current call) and
// whose whole right-hand side is rhs (nil when it has none).
func (c *checker) enterStmt(name string, rhs syntax.Expr) {
	c.frame.stmt = joinName(c.frame.path, name)
	c.frame.rhs = unparen(rhs)
}

// enterReturn starts a return statement, whose values are the call's.
func (c *checker) enterReturn(values []syntax.Expr) {
	c.frame.stmt = c.frame.path
	c.frame.rhs = nil
	if len(values) == 1 {
		c.frame.rhs = unparen(values[0])
	}
}

// enterMultiAssign starts a statement that binds several names, a, b = g(x):
// the call is named by the function, g.
func (c *checker) enterMultiAssign(s *syntax.AssignStmt) {
	name := s.Targets[0].Name.Name
	if call, ok := unparen(s.Value).(*syntax.Call); ok {
		if fn, ok := call.Fun.(*syntax.Name); ok {
			name = fn.Name
		}
	}
	c.enterStmt(name, s.Value)
}

// callPath returns the name of a call of fn at span: the statement's name
// when the call is the statement's whole right-hand side, and the
// statement's name with the function's inside an expression.
func (c *checker) callPath(fn *fnDecl, span syntax.Span) string {
	if c.frame == nil {
		return fn.name()
	}
	if c.frame.rhs != nil && c.frame.rhs.NodeSpan() == span {
		return c.stmtName()
	}
	return c.madeName(fn.name())
}

func unparen(e syntax.Expr) syntax.Expr {
	for {
		p, ok := e.(*syntax.Paren)
		if !ok {
			return e
		}
		e = p.X
	}
}

// tensorCount returns the number of tensors made so far in the model being
// lowered (0 while the top-level constants are checked, before any model).
func (c *checker) tensorCount() int {
	if c.prog == nil {
		return 0
	}
	return len(c.prog.tensors)
}

// bindName gives name to the tensors in v that were made since mark (the
// number of tensors made before the statement or call): the tensor a
// statement binds, or a call returns, takes its name. Older tensors keep
// theirs: in inp = h[l], h[l] stays h.
func (c *checker) bindName(v Value, name string, mark int) {
	switch v := v.(type) {
	case *tensorVal:
		if t := v.t; t.Kind == te.Compute && t.ID >= mark {
			t.Name = name
			c.prog.bound[t] = true
		}
	case *listVal:
		for _, e := range v.elems {
			c.bindName(e, name, mark)
		}
	}
}

// elemLabel returns the label of a tensor made by the element-wise
// operation described by what ("operator +", "gelu") with n operands.
func elemLabel(what string, n int) string {
	op, isOp := strings.CutPrefix(what, "operator ")
	if !isOp {
		return what
	}
	switch op {
	case "+":
		return "add"
	case "-":
		if n == 1 {
			return "neg"
		}
		return "sub"
	case "*":
		return "mul"
	case "/":
		return "div"
	case "%":
		return "mod"
	case "**":
		return "pow"
	case "!":
		return "not"
	case "&&", "||":
		return "logic"
	}
	return "cmp"
}
