package lang

import (
	"fmt"

	"tec/lang/syntax"
	"tec/te"
)

// elemCtx is the state of lowering one tensor definition's body: its index
// variables and reduction axes, the accesses whose bounds are proven once the
// ranges are known, and the facts that the enclosing select conditions
// establish.
type elemCtx struct {
	vars  []*indexVar
	byVar map[*te.Var]*indexVar
	where map[string]*whereRange
	loads []*pendingLoad
	facts *factList
	// dead is set inside a select branch that a compile-time condition rules
	// out; accesses there need no proof.
	dead bool
}

// whereRange is a range stated by a where clause.
type whereRange struct {
	name   string
	extent int
	file   string
	span   syntax.Span
	used   bool
}

// factList is an immutable list of facts, innermost first.
type factList struct {
	f    fact
	next *factList
}

// pendingLoad is an access whose bounds are proven after range inference.
type pendingLoad struct {
	name  string // the accessed tensor as written, e.g. "x" or "W[l]"
	shape []int
	ix    []te.Index
	texts []string // each index as written
	// parts are the computed sub-expressions of each index, if any.
	parts []*indexPart
	file  string
	span  syntax.Span
	facts *factList
	// write marks the slot of an update, which is written, not read.
	write bool
}

func newElemCtx() *elemCtx {
	return &elemCtx{byVar: map[*te.Var]*indexVar{}, where: map[string]*whereRange{}}
}

func (ec *elemCtx) addVar(iv *indexVar) {
	ec.vars = append(ec.vars, iv)
	ec.byVar[iv.v] = iv
}

// lowerElem lowers an element expression in scope sc.
func (c *checker) lowerElem(ec *elemCtx, sc *scope, e syntax.Expr) scalar {
	file := sc.path
	switch e := e.(type) {
	case *syntax.Number:
		n, err := literal(e)
		if err != nil {
			c.errorAt(file, e.Span, "syntax", "", "%v", err)
			return badScalar
		}
		return numScalar(n)
	case *syntax.Name:
		return c.valueScalar(ec, sc, c.lookup(sc, e.Ident), e.Span)
	case *syntax.Paren:
		return c.lowerElem(ec, sc, e.X)
	case *syntax.Unary:
		return c.unary(file, e.Span, e.Op, c.lowerElem(ec, sc, e.X))
	case *syntax.Binary:
		x := c.lowerElem(ec, sc, e.X)
		y := c.lowerElem(ec, sc, e.Y)
		return c.binary(file, e.Span, e.Op, x, y, e.X.NodeSpan(), e.Y.NodeSpan())
	case *syntax.Call:
		return c.lowerCall(ec, sc, e)
	case *syntax.IndexExpr:
		return c.lowerAccess(ec, sc, e)
	case *syntax.Reduce:
		return c.lowerReduce(ec, sc, e)
	case *syntax.ListExpr, *syntax.Comprehension:
		c.errorAt(file, e.NodeSpan(), "type", "", "a list cannot be an element value")
	case *syntax.RangeExpr:
		c.errorAt(file, e.NodeSpan(), "type", "", "a range is allowed only in for, where and list comprehensions")
	default:
		c.errorAt(file, e.NodeSpan(), "internal", "", "unexpected expression %T", e)
	}
	return badScalar
}

// valueScalar converts a named value to an element value.
func (c *checker) valueScalar(ec *elemCtx, sc *scope, v Value, span syntax.Span) scalar {
	switch v := v.(type) {
	case number:
		return numScalar(v)
	case *indexVar:
		return indexScalar(te.VarIndex(v.v))
	case elemVal:
		return v.s
	case poison:
		return badScalar
	case *tensorVal:
		if len(v.shape) == 0 {
			return c.load(ec, v, nil, sc.path, span, c.text(sc.path, span), nil, nil)
		}
		c.errorAt(sc.path, span, "type", fmt.Sprintf("index it with %s: %s[...]", plural(len(v.shape), "index"), c.text(sc.path, span)),
			"%s is a tensor %s, not an element", c.text(sc.path, span), v.typeString())
		return badScalar
	case *fnDecl, builtinVal, dtypeVar:
		c.errorAt(sc.path, span, "type", "", "%s is a function; call it", c.text(sc.path, span))
		return badScalar
	}
	c.errorAt(sc.path, span, "type", "", "%s is %s, not an element value", c.text(sc.path, span), describe(v))
	return badScalar
}

// lowerAccess lowers x[i, j], h[l][n, j] or W[l][q, k, j]: lists are indexed
// with compile-time ints one index at a time, and a tensor takes all the
// remaining indices, one per dimension.
func (c *checker) lowerAccess(ec *elemCtx, sc *scope, e *syntax.IndexExpr) scalar {
	file := sc.path
	base := syntax.Expr(e)
	var indices []syntax.Expr
	for {
		ie, ok := base.(*syntax.IndexExpr)
		if !ok {
			break
		}
		indices = append(append([]syntax.Expr(nil), ie.Indices...), indices...)
		base = ie.X
	}
	var v Value
	if n, ok := base.(*syntax.Name); ok {
		v = c.lookup(sc, n.Ident)
	} else {
		v = c.eval(sc, base)
	}
	nameEnd := base.NodeSpan()
	for {
		switch x := v.(type) {
		case *lazyVal:
			v = c.materialize(sc, x)
			continue
		case *listVal:
			if len(indices) == 0 {
				break
			}
			s := c.lowerElem(ec, sc, indices[0])
			at := indices[0].NodeSpan()
			if s.k == sBad {
				return badScalar
			}
			if s.k != sNum || !s.num.isInt {
				c.errorAt(file, at, "type", "lists are indexed at compile time", "a list index must be a compile-time int, but %s is %s", c.text(file, at), c.scalarKindText(s))
				return badScalar
			}
			if s.num.i < 0 || s.num.i >= len(x.elems) {
				c.errorAt(file, at, "bounds", "", "list index %d is out of range: %s has %s", s.num.i, c.text(file, joinSpans(e.Span, nameEnd)), plural(len(x.elems), "element"))
				return badScalar
			}
			v = x.elems[s.num.i]
			nameEnd = at
			indices = indices[1:]
			continue
		case *tensorVal:
			return c.access(ec, sc, x, indices, e.Span, c.text(file, syntax.Span{Start: e.Span.Start, End: nameEnd.End}))
		case poison:
			return badScalar
		}
		break
	}
	if len(indices) > 0 {
		c.errorAt(file, e.Span, "type", "", "%s is %s; it cannot be indexed", c.text(file, syntax.Span{Start: e.Span.Start, End: nameEnd.End}), describe(v))
		return badScalar
	}
	return c.valueScalar(ec, sc, v, e.Span)
}

// access lowers the access of tensor tv with one index per dimension.
func (c *checker) access(ec *elemCtx, sc *scope, tv *tensorVal, indices []syntax.Expr, span syntax.Span, name string) scalar {
	file := sc.path
	if len(indices) != len(tv.shape) {
		c.errorAt(file, span, "arity", fmt.Sprintf("%s is %s", name, tv.typeString()),
			"%s has %s, but the access gives %s", name, plural(len(tv.shape), "dimension"), plural(len(indices), "index"))
		for _, ie := range indices {
			c.lowerElem(ec, sc, ie)
		}
		return badScalar
	}
	ixs := make([]te.Index, len(indices))
	texts := make([]string, len(indices))
	parts := make([]*indexPart, len(indices))
	var gather []te.Expr // the run-time indexes of a gather, by dimension
	bad := false
	for d, ie := range indices {
		at := ie.NodeSpan()
		texts[d] = c.text(file, at)
		s := c.lowerElem(ec, sc, ie)
		switch {
		case s.k == sBad:
			bad = true
			continue
		case s.dtype() != te.I32 && s.k == sExpr && te.HasLoad(s.expr):
			c.errorAt(file, at, "type", "a gather reads its indexes from an i32 tensor: declare the index tensor i32, or convert with i32(...)",
				"an index must be an int, but %s is %s", texts[d], c.scalarKindText(s))
			bad = true
			continue
		case s.dtype() != te.I32:
			c.errorAt(file, at, "type", "convert it with i32(...) if that is what you mean",
				"an index must be an int, but %s is %s", texts[d], c.scalarKindText(s))
			bad = true
			continue
		case s.k == sExpr && te.HasLoad(s.expr):
			// A gather: the index is read at run time (wte[ids[s], d]).
			if gather == nil {
				gather = make([]te.Expr, len(indices))
			}
			gather[d] = s.expr
			continue
		case s.k == sExpr:
			c.errorAt(file, at, "not-affine", "an index may use +, -, * by a constant, and / and % by a positive constant",
				"index %s of %s is not affine: %s", texts[d], name, s.why)
			bad = true
			continue
		}
		ix, _ := s.asIndex()
		ixs[d] = ix
		parts[d] = s.part
		if v, ok := ix.AsVar(); ok {
			if iv := ec.byVar[v]; iv != nil && !iv.fixed {
				iv.uses = append(iv.uses, directUse{size: tv.shape[d], what: fmt.Sprintf("dimension %d of %s", d, name), file: file, span: at})
			}
		}
	}
	if bad {
		return badScalar
	}
	r := c.load(ec, tv, ixs, file, span, name, texts, parts)
	if gather != nil && r.k == sExpr {
		l := r.expr.(*te.Load)
		l.Gather = make([]te.Expr, len(l.Index))
		copy(l.Gather[len(l.Index)-len(gather):], gather)
	}
	return r
}

// load builds the load of tv at ixs and records it for the bounds proof,
// with the computed sub-expressions of each index (nil where there are none).
func (c *checker) load(ec *elemCtx, tv *tensorVal, ixs []te.Index, file string, span syntax.Span, name string, texts []string, parts []*indexPart) scalar {
	full := ixs
	if len(tv.prefix) > 0 {
		full = make([]te.Index, 0, len(tv.prefix)+len(ixs))
		for _, p := range tv.prefix {
			full = append(full, te.Const(p))
		}
		full = append(full, ixs...)
	}
	if !ec.dead && len(ixs) > 0 {
		ec.loads = append(ec.loads, &pendingLoad{name: name, shape: tv.shape, ix: ixs, texts: texts, parts: parts, file: file, span: span, facts: ec.facts})
	}
	r := exprScalar(&te.Load{Tensor: tv.t, Index: full})
	if r.typ == te.I32 {
		r.why = fmt.Sprintf("%s is read from a tensor", c.text(file, span))
	}
	return r
}

func (c *checker) scalarKindText(s scalar) string {
	if s.k == sNum {
		return describe(s.num)
	}
	return "of type " + typeName(s.dtype())
}

// lowerReduce lowers op[axes](body), giving each axis a fresh variable.
func (c *checker) lowerReduce(ec *elemCtx, sc *scope, e *syntax.Reduce) scalar {
	rs := sc.child()
	axes := make([]*te.Var, 0, len(e.Axes))
	for _, a := range e.Axes {
		if b, ok := rs.vars[a.Name]; ok {
			d := c.errorAt(sc.path, a.Span, "redefined", "", "reduction axis %s is listed twice", a.Name)
			related(d, sc.path, b.def, "first listed here")
			continue
		}
		iv := &indexVar{v: te.NewVar(a.Name, 0), name: a.Name, file: sc.path, span: a.Span}
		if w := ec.where[a.Name]; w != nil {
			iv.where, w.used = w, true
		}
		ec.addVar(iv)
		rs.bind(a.Name, iv, a.Span, nil)
		c.noteIndexVar(sc.path, a, iv)
		axes = append(axes, iv.v)
	}
	body := c.lowerElem(ec, rs, e.Body)
	if body.k == sBad {
		return badScalar
	}
	if body.dtype() == te.Bool {
		c.errorAt(sc.path, e.Body.NodeSpan(), "type", "convert it with f32(...)", "%s needs a number, but its body is a bool", e.Op.Name)
		return badScalar
	}
	r := exprScalar(&te.Reduce{Op: lookupBuiltin(e.Op.Name).lower.reduce, Axes: axes, Body: body.toExpr(false)}, body)
	if r.typ == te.I32 {
		r.why = fmt.Sprintf("%s is a reduction", c.text(sc.path, e.Span))
	}
	return r
}

// lowerCall lowers a call inside an element body: an element function, a
// cast, select, a scalar function or a compile-time function.
func (c *checker) lowerCall(ec *elemCtx, sc *scope, e *syntax.Call) scalar {
	file := sc.path
	fn, ok := e.Fun.(*syntax.Name)
	if !ok {
		c.errorAt(file, e.Fun.NodeSpan(), "type", "", "only a named function can be called")
		return badScalar
	}
	callee := c.lookup(sc, fn.Ident)
	switch f := callee.(type) {
	case poison:
		c.lowerArgs(ec, sc, e.Args)
		return badScalar
	case *fnDecl:
		if f.decl.Expr == nil {
			c.errorAt(file, e.Span, "type", "bind its result in a statement of its own: r = "+c.text(file, e.Span),
				"%s is a tensor function; it cannot be called inside an element body", fn.Name)
			return badScalar
		}
		if !c.checkArity(file, e, fn.Name, len(f.decl.Params), f.file, f.decl.Name.Span) {
			return badScalar
		}
		args := c.lowerArgs(ec, sc, e.Args)
		return c.inlineScalarFn(ec, f, args, file, e.Span)
	case builtinVal:
		return c.lowerBuiltin(ec, sc, e, f.b)
	case dtypeVar:
		if !c.checkArity(file, e, fn.Name, 1, "", syntax.Span{}) {
			return badScalar
		}
		return c.castToVar(file, e.Span, f, c.lowerArgs(ec, sc, e.Args)[0], argSpans(e.Args))
	}
	c.errorAt(file, fn.Span, "type", "", "%s is %s, not a function", fn.Name, describe(callee))
	return badScalar
}

func (c *checker) lowerArgs(ec *elemCtx, sc *scope, args []syntax.Expr) []scalar {
	out := make([]scalar, len(args))
	for i, a := range args {
		out[i] = c.lowerElem(ec, sc, a)
	}
	return out
}

func argSpans(args []syntax.Expr) []syntax.Span {
	out := make([]syntax.Span, len(args))
	for i, a := range args {
		out[i] = a.NodeSpan()
	}
	return out
}

// checkArity reports a call with the wrong number of arguments.
func (c *checker) checkArity(file string, e *syntax.Call, name string, want int, defFile string, def syntax.Span) bool {
	if len(e.Args) == want {
		return true
	}
	d := c.errorAt(file, e.Span, "arity", "", "%s takes %s, but the call gives %d", name, plural(want, "argument"), len(e.Args))
	if defFile != "" {
		related(d, defFile, def, "%s is declared here", name)
	}
	return false
}

// checkBuiltinCall reports a call name(...) of a builtin that needs
// reduction axes, or that gives the wrong number of arguments.
func (c *checker) checkBuiltinCall(file string, e *syntax.Call, b *builtin) bool {
	switch {
	case b.lower.form == lowerReduce:
		c.errorAt(file, e.Span, "type", fmt.Sprintf("write %s[k](...) with the axes to reduce", b.name), "%s needs reduction axes", b.name)
		return false
	case b.lower.reduces && len(e.Args) == 1:
		c.errorAt(file, e.Span, "arity", fmt.Sprintf("write %s[k](...) to reduce over k", b.name), "%s of one argument needs reduction axes", b.name)
		return false
	}
	return c.checkArity(file, e, b.name, b.arity, "", syntax.Span{})
}

// lowerBuiltin lowers a call of a builtin inside an element body.
func (c *checker) lowerBuiltin(ec *elemCtx, sc *scope, e *syntax.Call, b *builtin) scalar {
	file, name := sc.path, b.name
	if b.lower.form == lowerFill || b.lower.form == lowerStack {
		c.errorAt(file, e.Span, "type", "bind it in a statement of its own", "%s makes a tensor; it cannot be used inside an element body", name)
		return badScalar
	}
	if !c.checkBuiltinCall(file, e, b) {
		return badScalar
	}
	switch b.lower.form {
	case lowerSelect:
		return c.lowerSelect(ec, sc, e)
	case lowerLen:
		v := c.eval(sc, e.Args[0])
		return c.lenOf(file, e.Args[0].NodeSpan(), v)
	case lowerConvert:
		s := c.lowerElem(ec, sc, e.Args[0])
		if s.k == sBad {
			return badScalar
		}
		if s.k != sNum {
			hint := "use i32(...) to convert an element value"
			if name == "float" {
				hint = "use f32(...) to convert an element value"
			}
			c.errorAt(file, e.Args[0].NodeSpan(), "type", hint, "%s(...) converts compile-time numbers, but %s is an element value", name, c.text(file, e.Args[0].NodeSpan()))
			return badScalar
		}
		n, err := b.fold([]number{s.num})
		if err != nil {
			c.errorAt(file, e.Span, "type", "", "%s: %v", c.text(file, e.Span), err)
			return badScalar
		}
		return numScalar(n)
	}
	args := c.lowerArgs(ec, sc, e.Args)
	return c.callElem(file, e.Span, b, args, argSpans(e.Args))
}

// lenOf returns the length of a list as an element value.
func (c *checker) lenOf(file string, span syntax.Span, v Value) scalar {
	switch v := v.(type) {
	case *listVal:
		return numScalar(intNum(len(v.elems)))
	case poison:
		return badScalar
	}
	c.errorAt(file, span, "type", "", "len needs a list, but %s is %s", c.text(file, span), describe(v))
	return badScalar
}

// lowerSelect lowers select(c, a, b), proving a's accesses under c and b's
// under !c.
func (c *checker) lowerSelect(ec *elemCtx, sc *scope, e *syntax.Call) scalar {
	file := sc.path
	cond := c.lowerElem(ec, sc, e.Args[0])
	saved, savedDead := ec.facts, ec.dead
	if cond.k == sNum {
		ec.dead = savedDead || !cond.num.truth()
		a := c.lowerElem(ec, sc, e.Args[1])
		ec.dead = savedDead || cond.num.truth()
		b := c.lowerElem(ec, sc, e.Args[2])
		ec.dead = savedDead
		if cond.num.truth() {
			return a
		}
		return b
	}
	if cond.k != sBad && cond.dtype() != te.Bool {
		at := e.Args[0].NodeSpan()
		c.errorAt(file, at, "type", "compare it, e.g. "+c.text(file, at)+" > 0.0",
			"the condition of select must be a bool, but %s is %s", c.text(file, at), typeName(cond.dtype()))
		cond = badScalar
	}
	for _, f := range cond.facts {
		ec.facts = &factList{f: f, next: ec.facts}
	}
	a := c.lowerElem(ec, sc, e.Args[1])
	ec.facts = saved
	if cond.single {
		f := cond.facts[0]
		ec.facts = &factList{f: fact{ix: f.ix, op: negate(f.op)}, next: saved}
	}
	b := c.lowerElem(ec, sc, e.Args[2])
	ec.facts = saved
	return c.selectScalar(file, e, cond, a, b)
}

// selectScalar combines the parts of a select.
func (c *checker) selectScalar(file string, e *syntax.Call, cond, a, b scalar) scalar {
	if cond.k == sBad || a.k == sBad || b.k == sBad {
		return badScalar
	}
	if cond.k == sNum {
		if cond.num.truth() {
			return a
		}
		return b
	}
	if (a.dtype() == te.Bool) != (b.dtype() == te.Bool) {
		c.errorAt(file, e.Span, "type", "", "the branches of select must both be bools or both numbers, but %s is %s and %s is %s",
			c.text(file, e.Args[1].NodeSpan()), typeName(a.dtype()), c.text(file, e.Args[2].NodeSpan()), typeName(b.dtype()))
		return badScalar
	}
	float := a.dtype() == te.F32 || b.dtype() == te.F32
	r := exprScalar(&te.Select{Cond: cond.expr, Then: a.toExpr(float), Else: b.toExpr(float)}, cond, a, b)
	if r.typ == te.I32 {
		r.why = fmt.Sprintf("%s is a select", c.text(file, e.Span))
	}
	return r
}

// inlineScalarFn inlines a scalar function's expression with its parameters
// bound to the argument values.
func (c *checker) inlineScalarFn(ec *elemCtx, fn *fnDecl, args []scalar, callFile string, callSpan syntax.Span) scalar {
	if fn.recursive {
		return badScalar
	}
	for _, a := range args {
		if a.k == sBad {
			return badScalar
		}
	}
	c.step(callFile, callSpan)
	if !c.pushCall(fn, callFile, callSpan) {
		return badScalar
	}
	defer c.popCall()
	c.noteBindOnce(ec, fn, args, c.frame.path)
	fs := newScope(nil, fn.scope, fn.file)
	for i, p := range fn.decl.Params {
		fs.bind(p.Name.Name, elemVal{args[i]}, p.Name.Span, p)
	}
	return c.lowerElem(ec, fs, fn.decl.Expr)
}
