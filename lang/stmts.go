package lang

import (
	"fmt"
	"strconv"
	"strings"

	"tec/lang/syntax"
	"tec/te"
)

// execBlock runs the statements of a model or function body (or a loop
// body, which binds into the same scope) until a return.
func (c *checker) execBlock(sc *scope, stmts []syntax.Stmt) {
	for _, s := range stmts {
		if c.frame.returned {
			return
		}
		c.step(sc.path, s.NodeSpan())
		c.exec(sc, s)
	}
}

func (c *checker) exec(sc *scope, s syntax.Stmt) {
	file := sc.path
	switch s := s.(type) {
	case *syntax.ConstDecl:
		c.enterStmt(s.Name.Name, s.Value)
		v := c.eval(sc, s.Value)
		switch v.(type) {
		case number, poison:
		default:
			c.errorAt(file, s.Value.NodeSpan(), "type", "", "constant %s must be a number, not %s", s.Name.Name, describe(v))
			v = poison{}
		}
		c.declareLocal(sc, s.Name, v, s)
	case *syntax.PlaceholderStmt:
		c.execPlaceholder(sc, s)
	case *syntax.OutputStmt:
		c.execOutput(sc, s)
	case *syntax.ForStmt:
		c.execFor(sc, s)
	case *syntax.ReturnStmt:
		c.execReturn(sc, s)
	case *syntax.AssignStmt:
		c.execAssign(sc, s)
	default:
		c.errorAt(file, s.NodeSpan(), "internal", "", "unexpected statement %T", s)
	}
}

// declareLocal binds a declared name (a constant, input or param), which may
// be declared only once in a scope.
func (c *checker) declareLocal(sc *scope, id syntax.Ident, v Value, decl syntax.Node) {
	if prev, ok := sc.vars[id.Name]; ok && prev.decl != decl {
		d := c.errorAt(sc.path, id.Span, "redefined", "rename one of them", "%s is declared twice", id.Name)
		related(d, prev.file, prev.def, "the first declaration of %s", id.Name)
		return
	}
	b := sc.bind(id.Name, v, id.Span, decl)
	c.noteDefBinding(sc.path, id, b)
}

// assignLocal binds a name by assignment; it may re-bind any local name
// except a declared constant.
func (c *checker) assignLocal(sc *scope, id syntax.Ident, v Value) {
	if prev, ok := sc.vars[id.Name]; ok && prev.decl != nil {
		if _, isConst := prev.decl.(*syntax.ConstDecl); isConst {
			d := c.errorAt(sc.path, id.Span, "redefined", "constants cannot be re-bound; use a name without const for a value that changes",
				"%s is a constant", id.Name)
			related(d, prev.file, prev.def, "%s is declared here", id.Name)
			return
		}
	}
	b := sc.bind(id.Name, v, id.Span, nil)
	c.noteDefBinding(sc.path, id, b)
}

func (c *checker) execPlaceholder(sc *scope, s *syntax.PlaceholderStmt) {
	file := sc.path
	if c.frame.fn != nil {
		c.errorAt(file, s.Span, "type", "pass the tensor as a parameter of the function", "%s is allowed only in a model", s.Kind)
		c.declareLocal(sc, s.Name, poison{}, s)
		return
	}
	kind := te.Input
	if s.Kind == "param" {
		kind = te.Param
	}
	dt, ok := c.isDType(sc, s.Type.Name.Name)
	var v Value = poison{}
	switch {
	case !ok:
		c.errorAt(file, s.Type.Name.Span, "type", "write a tensor type such as f32[N, D]", "%s needs a tensor type, but %s is not a dtype", s.Kind, s.Type.Name.Name)
	case s.Type.Dims == nil:
		c.errorAt(file, s.Type.Span, "type", fmt.Sprintf("write %s[...] with its dimensions, or %s[] for a scalar", s.Type.Name.Name, s.Type.Name.Name), "%s %s needs a shape", s.Kind, s.Name.Name)
	default:
		dims, good := c.evalDims(sc, s.Type.Dims)
		if good && c.shadowsPlaceholder(sc, s) {
			return
		}
		if good {
			name := placeholderName(s.Name.Name, c.frame.iters)
			if prev, dup := c.prog.placeholders[name]; dup {
				d := c.errorAt(file, s.Name.Span, "redefined", "rename one of them", "%s is declared twice", name)
				related(d, prev.file, prev.span, "the first declaration of %s", name)
				return
			}
			t := c.prog.placeholder(s, name, kind, dt, dims, file)
			v = wholeTensor(t)
		}
	}
	c.declareLocal(sc, s.Name, v, s)
}

// placeholderName is the program name of an input or param declared as
// name: name itself at the top of the model, and in a loop name followed by
// the value of each enclosing loop's variable, outermost first: w.0, w.1, ...
// or, in two nested loops, w.0.0, w.0.1, ...
func placeholderName(name string, iters []int) string {
	var b strings.Builder
	b.WriteString(name)
	for _, i := range iters {
		b.WriteByte('.')
		b.WriteString(strconv.Itoa(i))
	}
	return b.String()
}

// shadowsPlaceholder reports an input or param declared in a loop under the
// name of one declared before it (outside the loop, or in an earlier loop).
func (c *checker) shadowsPlaceholder(sc *scope, s *syntax.PlaceholderStmt) bool {
	prev, ok := sc.vars[s.Name.Name]
	if !ok || prev.decl == s || len(c.frame.iters) == 0 {
		return false
	}
	if _, isPlaceholder := prev.decl.(*syntax.PlaceholderStmt); !isPlaceholder {
		return false
	}
	if c.prog.twice[s] {
		return true
	}
	c.prog.twice[s] = true
	n := s.Name.Name
	hint := fmt.Sprintf("a %s declared in a loop is a new tensor in each iteration (%s.0, %s.1, ...): rename it, or leave out this declaration to use the one before the loop in every iteration", s.Kind, n, n)
	if top, ok := c.prog.placeholders[n]; !ok || top.decl != prev.decl {
		hint = fmt.Sprintf("rename one of them: a %s declared in a loop is named after the loop variables (%s.0, %s.1, ...), so two loops would make the same names", s.Kind, n, n)
	}
	d := c.errorAt(sc.path, s.Name.Span, "redefined", hint, "%s is declared twice", n)
	related(d, prev.file, prev.def, "the first declaration of %s", s.Name.Name)
	return true
}

func (c *checker) execOutput(sc *scope, s *syntax.OutputStmt) {
	file := sc.path
	if c.frame.fn != nil {
		c.errorAt(file, s.Span, "type", "return the tensor, and output it in the model", "output is allowed only in a model")
		return
	}
	for _, it := range s.Items {
		var v Value
		if it.Value != nil {
			c.enterStmt(it.Name.Name, it.Value)
			mark := c.tensorCount()
			v = c.settle(sc, c.eval(sc, it.Value))
			c.bindName(v, c.stmtName(), mark)
			c.assignLocal(sc, it.Name, v)
		} else {
			v = c.lookup(sc, it.Name)
		}
		switch tv := v.(type) {
		case poison:
		case *tensorVal:
			c.prog.output(c, it, tv, file)
		default:
			at := it.Span
			c.errorAt(file, at, "type", "", "output %s must be a tensor, but it is %s", it.Name.Name, describe(v))
		}
	}
}

func (c *checker) execFor(sc *scope, s *syntax.ForStmt) {
	lo, hi, ok := c.evalRange(sc, s.Range)
	if !ok || !c.tripsFit(sc.path, s.Range, lo, hi) {
		return
	}
	for i := lo; i < hi && !c.frame.returned; i++ {
		c.trip(sc.path, s.Range.Span)
		c.assignLocal(sc, s.Var, intNum(i))
		c.pushScopeName(fmt.Sprintf("%s[%d]", s.Var.Name, i))
		c.frame.iters = append(c.frame.iters, i)
		c.execBlock(sc, s.Body)
		c.frame.iters = c.frame.iters[:len(c.frame.iters)-1]
		c.popScopeName()
	}
}

func (c *checker) execReturn(sc *scope, s *syntax.ReturnStmt) {
	if c.frame.fn == nil {
		c.errorAt(sc.path, s.Span, "type", "output the tensors instead", "return is allowed only in a function")
		return
	}
	c.enterReturn(s.Values)
	vals := make([]Value, len(s.Values))
	spans := make([]syntax.Span, len(s.Values))
	for i, e := range s.Values {
		vals[i] = c.settle(sc, c.eval(sc, e))
		spans[i] = e.NodeSpan()
		if _, ok := vals[i].(*tupleVal); ok {
			c.errorAt(sc.path, spans[i], "arity", "unpack the results first: a, b = f(...)", "%s gives several results; return them one by one", c.text(sc.path, spans[i]))
			vals[i] = poison{}
		}
	}
	if len(vals) == 1 {
		c.bindName(vals[0], c.frame.path, c.frame.mark)
	}
	c.frame.returned = true
	c.frame.results = vals
	c.frame.resultSpans = spans
}

func (c *checker) execAssign(sc *scope, s *syntax.AssignStmt) {
	file := sc.path
	if s.Update {
		c.execUpdate(sc, s)
		return
	}
	if len(s.Targets) == 1 {
		c.enterStmt(s.Targets[0].Name.Name, s.Value)
	} else {
		c.enterMultiAssign(s)
	}
	mark := c.tensorCount()
	// A single target with indices defines a tensor element-wise, unless it
	// names a list, whose element it replaces.
	if len(s.Targets) == 1 && s.Targets[0].Indices != nil {
		t := s.Targets[0]
		if b := sc.lookupLocal(t.Name.Name); len(s.Where) > 0 || b == nil || !isList(b.val) {
			c.defineTensor(sc, s)
			return
		}
	}
	if len(s.Where) > 0 {
		if len(s.Targets) == 1 {
			// s = sum[i](x[i]) where i in 0..N defines a rank-0 tensor.
			c.defineTensor(sc, s)
			return
		}
		c.errorAt(file, s.Where[0].Span, "type", "", "where is allowed only in a tensor definition such as y[i] = ...")
	}
	seen := map[string]syntax.Span{}
	for _, t := range s.Targets {
		if t.Indices != nil {
			continue
		}
		if prev, dup := seen[t.Name.Name]; dup {
			d := c.errorAt(file, t.Name.Span, "redefined", "", "%s is assigned twice in one statement", t.Name.Name)
			related(d, file, prev, "first assigned here")
			continue
		}
		seen[t.Name.Name] = t.Name.Span
	}
	v := c.settle(sc, c.eval(sc, s.Value))
	var vals []Value
	switch x := v.(type) {
	case *tupleVal:
		if len(s.Targets) != len(x.elems) {
			c.errorAt(file, s.Span, "arity", "", "%s gives %s, but the statement assigns %s",
				c.text(file, s.Value.NodeSpan()), plural(len(x.elems), "result"), plural(len(s.Targets), "name"))
			vals = poisons(len(s.Targets))
		} else {
			vals = x.elems
		}
	case poison:
		vals = poisons(len(s.Targets))
	case noneVal:
		c.errorAt(file, s.Value.NodeSpan(), "type", "", "%s returns nothing", c.text(file, s.Value.NodeSpan()))
		vals = poisons(len(s.Targets))
	default:
		if len(s.Targets) != 1 {
			c.errorAt(file, s.Span, "arity", "", "%s is one value, but the statement assigns %s",
				c.text(file, s.Value.NodeSpan()), plural(len(s.Targets), "name"))
			vals = poisons(len(s.Targets))
		} else {
			vals = []Value{v}
		}
	}
	for i, t := range s.Targets {
		c.bindName(vals[i], joinName(c.frame.path, t.Name.Name), mark)
		if t.Indices == nil {
			c.assignLocal(sc, t.Name, vals[i])
			continue
		}
		c.assignElement(sc, t, vals[i])
	}
}

func isList(v Value) bool {
	_, ok := v.(*listVal)
	return ok
}

func poisons(n int) []Value {
	vs := make([]Value, n)
	for i := range vs {
		vs[i] = poison{}
	}
	return vs
}

// assignElement replaces an element of a list: xs[i] = v.
func (c *checker) assignElement(sc *scope, t *syntax.Target, v Value) {
	file := sc.path
	b := sc.lookupLocal(t.Name.Name)
	if b == nil {
		c.errorAt(file, t.Name.Span, "undefined", suggest(t.Name.Name, sc.names()), "undefined name '%s'", t.Name.Name)
		return
	}
	l, ok := b.val.(*listVal)
	if !ok {
		if _, bad := b.val.(poison); !bad {
			c.errorAt(file, t.Span, "type", "a tensor is defined once, by one statement: y[i] = ...",
				"%s is %s; only a list element can be assigned", t.Name.Name, describe(b.val))
		}
		return
	}
	if len(t.Indices) != 1 {
		c.errorAt(file, t.Span, "arity", "", "a list takes one index, but %s gives %d", c.text(file, t.Span), len(t.Indices))
		return
	}
	i, ok := c.evalInt(sc, t.Indices[0], "a list index")
	if !ok {
		return
	}
	if i < 0 || i >= len(l.elems) {
		c.errorAt(file, t.Indices[0].NodeSpan(), "bounds", "", "list index %d is out of range: %s has %s", i, t.Name.Name, plural(len(l.elems), "element"))
		return
	}
	c.work(file, t.Span, len(l.elems))
	elems := append([]Value(nil), l.elems...)
	elems[i] = v
	b.val = &listVal{elems: elems}
	c.noteUse(file, t.Name, b)
}

// pushScopeName enters a loop iteration or a call, for the tensors' Scope.
func (c *checker) pushScopeName(s string) {
	c.scopeNames = append(c.scopeNames, s)
	c.scopeSnap = nil
}

func (c *checker) popScopeName() {
	c.scopeNames = c.scopeNames[:len(c.scopeNames)-1]
	c.scopeSnap = nil
}

// currentScope returns the Scope of tensors made now; it is shared by every
// tensor made in the same place.
func (c *checker) currentScope() []string {
	if len(c.scopeNames) == 0 {
		return nil
	}
	if c.scopeSnap == nil {
		c.scopeSnap = append([]string(nil), c.scopeNames...)
	}
	return c.scopeSnap
}
