package lang

import (
	"strconv"
	"strings"

	"tec/lang/syntax"
	"tec/te"
)

// eval evaluates an expression to a compile-time value in scope sc: numbers
// fold, lists and views are built, functions are called (inlined), and
// element-wise expressions over whole tensors become lazy tensors.
func (c *checker) eval(sc *scope, e syntax.Expr) Value {
	file := sc.path
	switch e := e.(type) {
	case *syntax.Number:
		n, err := literal(e)
		if err != nil {
			c.errorAt(file, e.Span, "syntax", "", "%v", err)
			return poison{}
		}
		return n
	case *syntax.Name:
		v := c.lookup(sc, e.Ident)
		switch v.(type) {
		case *indexVar, elemVal:
			c.errorAt(file, e.Span, "type", "", "%s is an index variable; a compile-time value is needed here", e.Name)
			return poison{}
		case *fnDecl, builtinVal, dtypeVar:
			if dt, ok := c.isDType(sc, e.Name); ok {
				return typeVal{dtype: dt}
			}
			c.errorAt(file, e.Span, "type", "", "%s is a function; call it", e.Name)
			return poison{}
		}
		return v
	case *syntax.Paren:
		return c.eval(sc, e.X)
	case *syntax.Unary:
		x := c.eval(sc, e.X)
		return c.elementwise(sc, e.Span, "operator "+e.Op, []Value{x}, []syntax.Span{e.X.NodeSpan()},
			func(ec *elemCtx, xs []scalar) scalar { return c.unary(file, e.Span, e.Op, xs[0]) })
	case *syntax.Binary:
		return c.evalBinary(sc, e)
	case *syntax.Call:
		return c.evalCall(sc, e)
	case *syntax.IndexExpr:
		return c.evalIndex(sc, e)
	case *syntax.Reduce:
		ec := newElemCtx()
		s := c.lowerElem(ec, sc, e)
		if s.k == sBad || !c.resolveRanges(ec) {
			return poison{}
		}
		if s.k == sNum {
			return s.num
		}
		c.checkBounds(ec)
		return c.compute(file, e.Span, nil, s, c.madeName(e.Op.Name))
	case *syntax.ListExpr:
		elems := make([]Value, len(e.Elems))
		for i, x := range e.Elems {
			elems[i] = c.listElem(sc, x)
		}
		return &listVal{elems: elems}
	case *syntax.Comprehension:
		lo, hi, ok := c.evalRange(sc, e.Range)
		if !ok || !c.tripsFit(file, e.Range, lo, hi) {
			return poison{}
		}
		elems := make([]Value, 0, max(hi-lo, 0))
		for i := lo; i < hi; i++ {
			c.trip(file, e.Span)
			cs := sc.child()
			cs.bind(e.Var.Name, intNum(i), e.Var.Span, nil)
			elems = append(elems, c.listElem(cs, e.Elem))
		}
		return &listVal{elems: elems}
	case *syntax.RangeExpr:
		c.errorAt(file, e.Span, "type", "", "a range is allowed only in for, where and list comprehensions")
		return poison{}
	}
	c.errorAt(file, e.NodeSpan(), "internal", "", "unexpected expression %T", e)
	return poison{}
}

// listElem evaluates an element of a list literal or comprehension.
func (c *checker) listElem(sc *scope, e syntax.Expr) Value {
	v := c.settle(sc, c.eval(sc, e))
	if _, ok := v.(*tupleVal); ok {
		c.errorAt(sc.path, e.NodeSpan(), "arity", "unpack the results first: a, b = f(...)", "%s gives several results; a list element is one value", c.text(sc.path, e.NodeSpan()))
		return poison{}
	}
	return v
}

// evalInt evaluates a compile-time int.
func (c *checker) evalInt(sc *scope, e syntax.Expr, what string) (int, bool) {
	v := c.eval(sc, e)
	switch v := v.(type) {
	case number:
		if v.isInt {
			return v.i, true
		}
		c.errorAt(sc.path, e.NodeSpan(), "type", "convert it with int(...)", "%s must be an int, but %s is %s", what, c.text(sc.path, e.NodeSpan()), describe(v))
	case poison:
	default:
		c.errorAt(sc.path, e.NodeSpan(), "type", "", "%s must be an int, but %s is %s", what, c.text(sc.path, e.NodeSpan()), describe(v))
	}
	return 0, false
}

// evalRange evaluates lo..hi of a loop or comprehension.
func (c *checker) evalRange(sc *scope, r *syntax.RangeExpr) (lo, hi int, ok bool) {
	lo, ok1 := c.evalInt(sc, r.Lo, "the start of a range")
	hi, ok2 := c.evalInt(sc, r.Hi, "the end of a range")
	return lo, hi, ok1 && ok2
}

// evalType evaluates a type written in a declaration: f32[N, D], f32, int.
// dims is nil for a type without brackets.
func (c *checker) evalDims(sc *scope, dims []syntax.Expr) ([]int, bool) {
	out := make([]int, len(dims))
	ok := true
	for i, d := range dims {
		n, good := c.evalInt(sc, d, "a dimension")
		if good && n <= 0 {
			c.errorAt(sc.path, d.NodeSpan(), "shape", "", "a dimension must be positive, but %s is %d", c.text(sc.path, d.NodeSpan()), n)
			good = false
		}
		out[i] = n
		ok = ok && good
	}
	if ok && len(dims) > 0 {
		span := syntax.Span{Start: dims[0].NodeSpan().Start, End: dims[len(dims)-1].NodeSpan().End}
		ok = c.checkSize(sc.path, span, out)
	}
	return out, ok
}

// formatDims formats a shape as in the language: [2, 3].
func formatDims(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// checkSize reports a shape with more elements than te.MaxElements, the
// most a tensor may have (the kernels index with 32-bit ints; see
// te.MaxElements), at span. The count is computed without overflow.
func (c *checker) checkSize(file string, span syntax.Span, shape []int) bool {
	if _, err := te.CheckShape(shape); err != nil {
		c.errorAt(file, span, "shape", "use smaller dimensions (or smaller -D values); kernels index tensors with 32-bit ints",
			"the shape %s is too large: a tensor may have at most 2^30 (%d) elements", formatDims(shape), te.MaxElements)
		return false
	}
	return true
}

// evalIndex evaluates x[...] at compile time: a list element, a view of a
// tensor, or a type such as f32[B, H].
func (c *checker) evalIndex(sc *scope, e *syntax.IndexExpr) Value {
	file := sc.path
	if n, ok := e.X.(*syntax.Name); ok {
		if dt, ok := c.isDType(sc, n.Name); ok {
			dims, ok := c.evalDims(sc, e.Indices)
			if !ok {
				return poison{}
			}
			return typeVal{dtype: dt, dims: dims}
		}
	}
	x := c.settle(sc, c.eval(sc, e.X))
	idx := make([]int, len(e.Indices))
	for i, ie := range e.Indices {
		n, ok := c.evalInt(sc, ie, "an index here")
		if !ok {
			return poison{}
		}
		idx[i] = n
	}
	name := c.text(file, e.X.NodeSpan())
	switch x := x.(type) {
	case poison:
		return x
	case *listVal:
		if len(idx) != 1 {
			c.errorAt(file, e.Span, "arity", "", "a list takes one index, but %s gives %d", c.text(file, e.Span), len(idx))
			return poison{}
		}
		if idx[0] < 0 || idx[0] >= len(x.elems) {
			c.errorAt(file, e.Indices[0].NodeSpan(), "bounds", "", "list index %d is out of range: %s has %s", idx[0], name, plural(len(x.elems), "element"))
			return poison{}
		}
		return x.elems[idx[0]]
	case *tensorVal:
		if len(idx) > len(x.shape) {
			c.errorAt(file, e.Span, "arity", "", "%s has %s, but %s gives %s", name, plural(len(x.shape), "dimension"), c.text(file, e.Span), plural(len(idx), "index"))
			return poison{}
		}
		for d, i := range idx {
			if i < 0 || i >= x.shape[d] {
				c.errorAt(file, e.Indices[d].NodeSpan(), "bounds", "", "index %d of %s is out of bounds: dimension %d has size %d", i, name, d, x.shape[d])
				return poison{}
			}
		}
		return &tensorVal{t: x.t, prefix: append(append([]int(nil), x.prefix...), idx...), shape: x.shape[len(idx):]}
	}
	c.errorAt(file, e.Span, "type", "", "%s is %s; it cannot be indexed", name, describe(x))
	return poison{}
}

// evalCall evaluates a call at compile time.
func (c *checker) evalCall(sc *scope, e *syntax.Call) Value {
	file := sc.path
	fn, ok := e.Fun.(*syntax.Name)
	if !ok {
		c.errorAt(file, e.Fun.NodeSpan(), "type", "", "only a named function can be called")
		return poison{}
	}
	callee := c.lookup(sc, fn.Ident)
	switch f := callee.(type) {
	case poison:
		for _, a := range e.Args {
			c.eval(sc, a)
		}
		return poison{}
	case *fnDecl:
		args := make([]Value, len(e.Args))
		for i, a := range e.Args {
			args[i] = c.eval(sc, a)
		}
		return c.callFn(sc, f, args, e)
	case builtinVal:
		return c.evalBuiltin(sc, e, f.b)
	case dtypeVar:
		if !c.checkArity(file, e, fn.Name, 1, "", syntax.Span{}) {
			return poison{}
		}
		spans := argSpans(e.Args)
		return c.elementwise(sc, e.Span, fn.Name, []Value{c.eval(sc, e.Args[0])}, spans, func(ec *elemCtx, xs []scalar) scalar {
			return c.castToVar(file, e.Span, f, xs[0], spans)
		})
	}
	c.errorAt(file, fn.Span, "type", "", "%s is %s, not a function", fn.Name, describe(callee))
	return poison{}
}

// evalBuiltin evaluates a call of a builtin at compile time.
func (c *checker) evalBuiltin(sc *scope, e *syntax.Call, b *builtin) Value {
	file, name := sc.path, b.name
	if !c.checkBuiltinCall(file, e, b) {
		return poison{}
	}
	args := make([]Value, len(e.Args))
	for i, a := range e.Args {
		args[i] = c.eval(sc, a)
	}
	spans := argSpans(e.Args)
	switch b.lower.form {
	case lowerLen:
		switch v := args[0].(type) {
		case *listVal:
			return intNum(len(v.elems))
		case poison:
			return v
		}
		c.errorAt(file, spans[0], "type", "", "len needs a list, but %s is %s", c.text(file, spans[0]), describe(args[0]))
		return poison{}
	case lowerConvert:
		n, ok := args[0].(number)
		if !ok {
			if _, bad := args[0].(poison); !bad {
				c.errorAt(file, spans[0], "type", "use i32(...) or f32(...) to convert tensors", "%s(...) needs a number, but %s is %s", name, c.text(file, spans[0]), describe(args[0]))
			}
			return poison{}
		}
		r, err := b.fold([]number{n})
		if err != nil {
			c.errorAt(file, e.Span, "type", "", "%s: %v", c.text(file, e.Span), err)
			return poison{}
		}
		return r
	case lowerFill:
		t, ok := args[0].(typeVal)
		if !ok {
			if _, bad := args[0].(poison); !bad {
				c.errorAt(file, spans[0], "type", "write a type such as f32[B, H]", "%s needs a tensor type, but %s is %s", name, c.text(file, spans[0]), describe(args[0]))
			}
			return poison{}
		}
		if t.dims == nil {
			t.dims = []int{}
		}
		v := intNum(0)
		switch name {
		case "ones":
			v = intNum(1)
		case "full":
			n, ok := args[1].(number)
			if !ok {
				if _, bad := args[1].(poison); !bad {
					c.errorAt(file, spans[1], "type", "", "full needs a number to fill with, but %s is %s", c.text(file, spans[1]), describe(args[1]))
				}
				return poison{}
			}
			v = n
		}
		return c.constTensor(sc, e.Span, name, t, v)
	case lowerStack:
		return c.stack(sc, e.Span, spans[0], args[0])
	case lowerSelect:
		return c.elementwise(sc, e.Span, name, args, spans, func(ec *elemCtx, xs []scalar) scalar {
			cond := xs[0]
			if cond.k != sNum && cond.k != sBad && cond.dtype() != te.Bool {
				c.errorAt(file, spans[0], "type", "compare it, e.g. "+c.text(file, spans[0])+" > 0.0",
					"the condition of select must be a bool, but %s is %s", c.text(file, spans[0]), typeName(cond.dtype()))
				return badScalar
			}
			return c.selectScalar(file, e, cond, xs[1], xs[2])
		})
	}
	for i, a := range args {
		if _, ok := a.(typeVal); ok {
			c.errorAt(file, spans[i], "type", "", "%s needs a value, but %s is a type", name, c.text(file, spans[i]))
			return poison{}
		}
	}
	return c.elementwise(sc, e.Span, name, args, spans, func(ec *elemCtx, xs []scalar) scalar {
		return c.callElem(file, e.Span, b, xs, spans)
	})
}

// evalBinary evaluates a binary expression. The left operands of a chain
// (a + b + c + ... parses as ((a + b) + c) + ...) are walked in a loop, not
// by recursion, so that a long sum costs linear time and no deep stack.
func (c *checker) evalBinary(sc *scope, e *syntax.Binary) Value {
	spine := []*syntax.Binary{e}
	for {
		x, ok := spine[len(spine)-1].X.(*syntax.Binary)
		if !ok {
			break
		}
		spine = append(spine, x)
	}
	x := c.eval(sc, spine[len(spine)-1].X)
	for k := len(spine) - 1; k >= 0; k-- {
		x = c.applyBinary(sc, spine[k], x, c.eval(sc, spine[k].Y))
	}
	return x
}

// applyBinary applies e's operator to x and y, the values of its operands.
func (c *checker) applyBinary(sc *scope, e *syntax.Binary, x, y Value) Value {
	file := sc.path
	if xl, ok := x.(*listVal); ok && e.Op == "+" {
		if yl, ok := y.(*listVal); ok {
			c.work(file, e.Span, len(xl.elems)+len(yl.elems))
			elems := make([]Value, 0, len(xl.elems)+len(yl.elems))
			return &listVal{elems: append(append(elems, xl.elems...), yl.elems...)}
		}
	}
	return c.elementwise(sc, e.Span, "operator "+e.Op, []Value{x, y}, []syntax.Span{e.X.NodeSpan(), e.Y.NodeSpan()},
		func(ec *elemCtx, xs []scalar) scalar {
			return c.binary(file, e.Span, e.Op, xs[0], xs[1], e.X.NodeSpan(), e.Y.NodeSpan())
		})
}
