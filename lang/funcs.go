package lang

import (
	"fmt"
	"strconv"
	"strings"

	"tec/lang/syntax"
	"tec/te"
)

// frame is a function call being inlined, or the model body.
type frame struct {
	parent   *frame
	fn       *fnDecl // nil for the model body
	callFile string
	callSpan syntax.Span
	depth    int
	// path names the call: the name that its result takes ("" for the model
	// body). Tensors made inside are named path/name (see names.go).
	path string
	// mark is the number of tensors made before the call: a returned tensor
	// with a larger ID was made by the call and takes the call's name.
	mark int
	// stmt names what the statement being executed binds; rhs is its whole
	// right-hand side, a call of which takes stmt as its path.
	stmt string
	rhs  syntax.Expr
	// returned is set once a return statement ran; results holds its values.
	returned    bool
	results     []Value
	resultSpans []syntax.Span
	// iters holds the values of the loop variables of the loops being
	// unrolled in this frame, outermost first; an input or param declared
	// in a loop of the model is named after them (w.0, w.1, ...).
	iters []int
}

// pushCall enters a call of fn, failing (with an error) when calls nest too
// deeply.
func (c *checker) pushCall(fn *fnDecl, file string, span syntax.Span) bool {
	depth := 1
	if c.frame != nil {
		depth = c.frame.depth + 1
	}
	if depth > maxCallDepth {
		c.errorAt(file, span, "recursion", "", "calls nest more than %d deep", maxCallDepth)
		return false
	}
	path := c.callPath(fn, span)
	c.frame = &frame{parent: c.frame, fn: fn, callFile: file, callSpan: span, depth: depth,
		path: path, mark: c.tensorCount(), stmt: path}
	return true
}

func (c *checker) popCall() { c.frame = c.frame.parent }

// shapeSym is a shape symbol bound at a call.
type shapeSym struct {
	val  int
	arg  int         // the argument that bound it
	span syntax.Span // the dimension in the parameter's type
}

// callFn inlines a call of a user function with argument values args.
func (c *checker) callFn(sc *scope, fn *fnDecl, args []Value, e *syntax.Call) Value {
	file := sc.path
	if fn.recursive {
		return poison{}
	}
	d := fn.decl
	if !c.checkArity(file, e, fn.name(), len(d.Params), fn.file, d.Name.Span) {
		return poison{}
	}
	for _, a := range args {
		if _, ok := a.(poison); ok {
			return poison{}
		}
	}
	spans := argSpans(e.Args)
	if d.Expr != nil {
		// A scalar function: numbers fold, whole tensors apply element-wise.
		return c.elementwise(sc, e.Span, fn.name(), args, spans, func(ec *elemCtx, xs []scalar) scalar {
			return c.inlineScalarFn(ec, fn, xs, file, e.Span)
		})
	}
	c.step(file, e.Span)
	fs := newScope(nil, fn.scope, fn.file)
	if !c.bindParams(sc, fs, fn, args, e) {
		return poison{}
	}
	if !c.pushCall(fn, file, e.Span) {
		return poison{}
	}
	c.pushScopeName(fn.name())
	c.execBlock(fs, d.Body)
	fr := c.frame
	c.popScopeName()
	c.popCall()
	return c.finishCall(fs, fn, fr, e)
}

// bindParams binds the parameters of fn in fs to the arguments, unifying
// shape symbols and checking types.
func (c *checker) bindParams(sc *scope, fs *scope, fn *fnDecl, args []Value, e *syntax.Call) bool {
	file := sc.path
	d := fn.decl
	paramNames := map[string]bool{}
	for _, p := range d.Params {
		paramNames[p.Name.Name] = true
	}
	ok := true
	// Numbers and untyped parameters first, so that dimensions may use them.
	for i, p := range d.Params {
		if prev, dup := fs.vars[p.Name.Name]; dup {
			dd := c.errorAt(fn.file, p.Name.Span, "redefined", "", "parameter %s is declared twice", p.Name.Name)
			related(dd, fn.file, prev.def, "the first declaration of %s", p.Name.Name)
			ok = false
			continue
		}
		arg := args[i]
		at := e.Args[i].NodeSpan()
		switch {
		case p.Type == nil:
			v := c.settle(sc, arg)
			if _, isTuple := v.(*tupleVal); isTuple {
				c.errorAt(file, at, "arity", "unpack the results first: a, b = f(...)", "%s gives several results; an argument is one value", c.text(file, at))
				ok = false
			}
			fs.bind(p.Name.Name, v, p.Name.Span, p)
		case p.Type.Dims == nil && (p.Type.Name.Name == "int" || p.Type.Name.Name == "float"):
			n, isNum := arg.(number)
			if !isNum || (p.Type.Name.Name == "int" && !n.isInt) {
				dd := c.errorAt(file, at, "type", "", "argument %s of %s must be %s, but %s is %s", p.Name.Name, fn.name(), article(p.Type.Name.Name), c.text(file, at), describe(arg))
				related(dd, fn.file, p.Span, "parameter %s is declared here", p.Name.Name)
				ok = false
				fs.bind(p.Name.Name, poison{}, p.Name.Span, p)
				continue
			}
			if p.Type.Name.Name == "float" {
				n = floatNum(n.float())
			}
			fs.bind(p.Name.Name, n, p.Name.Span, p)
		}
	}
	syms := map[string]*shapeSym{}
	var symOrder []string
	type pending struct {
		param int
		dim   int
		expr  syntax.Expr
	}
	var later []pending
	known := map[[2]int]int{}
	c.known = known
	tensors := make([]*tensorVal, len(d.Params))
	dvars := map[string]bool{} // the dtype variables bound so far
	for i, p := range d.Params {
		if p.Type == nil || (p.Type.Dims == nil && (p.Type.Name.Name == "int" || p.Type.Name.Name == "float")) {
			continue
		}
		at := e.Args[i].NodeSpan()
		dt, isDType := dtypeNamed(p.Type.Name.Name)
		if !isDType && isDTypeVarName(p.Type.Name.Name) {
			var good bool
			if dt, good = c.bindDTypeVar(sc, fs, fn, e, i, args[i], dvars); !good {
				ok = false
				continue
			}
			isDType = true
		}
		if !isDType {
			c.errorAt(fn.file, p.Type.Name.Span, "type", "parameter types are int, float, or tensor types such as f32[N, D]", "unknown type %s", p.Type.Name.Name)
			ok = false
			continue
		}
		tv, isTensor := c.settle(sc, args[i]).(*tensorVal)
		if !isTensor {
			if _, bad := args[i].(poison); !bad {
				dd := c.errorAt(file, at, "type", "", "argument %s of %s must be a tensor %s, but %s is %s", p.Name.Name, fn.name(), c.text(fn.file, p.Type.Span), c.text(file, at), describe(args[i]))
				related(dd, fn.file, p.Span, "parameter %s is declared here", p.Name.Name)
			}
			ok = false
			fs.bind(p.Name.Name, poison{}, p.Name.Span, p)
			continue
		}
		fs.bind(p.Name.Name, tv, p.Name.Span, p)
		tensors[i] = tv
		if tv.dtype() != dt {
			want := c.text(fn.file, p.Type.Span)
			if isDTypeVarName(p.Type.Name.Name) {
				want += fmt.Sprintf(" (%s is %s, from an earlier argument)", p.Type.Name.Name, dt)
			}
			dd := c.errorAt(file, at, "type", fmt.Sprintf("convert it first: y = %s(%s)", dt, c.text(file, at)),
				"argument %s of %s must be %s, but %s is %s", p.Name.Name, fn.name(), want, c.text(file, at), tv.typeString())
			related(dd, fn.file, p.Span, "parameter %s is declared here", p.Name.Name)
			ok = false
			continue
		}
		dims := p.Type.Dims
		if dims == nil {
			dims = []syntax.Expr{}
		}
		if len(dims) != len(tv.shape) {
			dd := c.errorAt(file, at, "shape", c.rankHint(sc, fn, e, i, len(tv.shape)), "argument %s of %s must have %s (%s), but %s is %s",
				p.Name.Name, fn.name(), plural(len(dims), "dimension"), c.text(fn.file, p.Type.Span), c.text(file, at), tv.typeString())
			related(dd, fn.file, p.Span, "parameter %s is declared here", p.Name.Name)
			ok = false
			continue
		}
		for k, de := range dims {
			name, isName := de.(*syntax.Name)
			if isName && !paramNames[name.Name] && fn.scope.lookupTop(name.Name) == nil {
				s := syms[name.Name]
				if s == nil {
					syms[name.Name] = &shapeSym{val: tv.shape[k], arg: i, span: de.NodeSpan()}
					symOrder = append(symOrder, name.Name)
					continue
				}
				if s.val != tv.shape[k] {
					c.shapeMismatch(sc, fn, e, i, tv, fmt.Sprintf("%s = %d", name.Name, s.val), syms, s)
					ok = false
					break
				}
				continue
			}
			later = append(later, pending{param: i, dim: k, expr: de})
		}
	}
	for _, n := range symOrder {
		s := syms[n]
		fs.bind(n, intNum(s.val), s.span, nil)
	}
	failed := map[int]bool{}
	for _, l := range later {
		if failed[l.param] || tensors[l.param] == nil {
			continue
		}
		want, good := c.evalInt(fs, l.expr, "a dimension")
		if !good {
			ok = false
			failed[l.param] = true
			continue
		}
		known[[2]int{l.param, l.dim}] = want
		if got := tensors[l.param].shape[l.dim]; got != want {
			c.shapeMismatch(sc, fn, e, l.param, tensors[l.param], fmt.Sprintf("%s = %d", c.text(fn.file, l.expr.NodeSpan()), want), syms, nil)
			ok = false
			failed[l.param] = true
		}
	}
	return ok
}

// bindDTypeVar gives the dtype variable of parameter i's type its dtype:
// argument i's float dtype if it is the first argument declared with it,
// else the dtype it already has (which argument i must then have; bindParams
// reports it if not). dvars records the variables bound so far.
func (c *checker) bindDTypeVar(sc *scope, fs *scope, fn *fnDecl, e *syntax.Call, i int, arg Value, dvars map[string]bool) (te.DType, bool) {
	p := fn.decl.Params[i]
	name := p.Type.Name.Name
	if dvars[name] {
		return fs.vars[name].val.(dtypeVar).dt, true
	}
	tv, isTensor := c.settle(sc, arg).(*tensorVal)
	if !isTensor {
		return te.F32, true // bindParams reports the argument
	}
	if !tv.dtype().IsFloat() {
		at := e.Args[i].NodeSpan()
		dd := c.errorAt(sc.path, at, "type", fmt.Sprintf("convert it first: y = f32(%s)", c.text(sc.path, at)),
			"argument %s of %s must be a float tensor (%s is f32, f16 or bf16), but %s is %s",
			p.Name.Name, fn.name(), name, c.text(sc.path, at), tv.typeString())
		related(dd, fn.file, p.Span, "parameter %s is declared here", p.Name.Name)
		return 0, false
	}
	dvars[name] = true
	fs.bind(name, dtypeVar{name: name, dt: tv.dtype()}, p.Type.Name.Span, nil)
	return tv.dtype(), true
}

// shapeMismatch reports an argument whose shape does not fit its parameter's
// type.
func (c *checker) shapeMismatch(sc *scope, fn *fnDecl, e *syntax.Call, i int, tv *tensorVal, why string, syms map[string]*shapeSym, bound *shapeSym) {
	file := sc.path
	p := fn.decl.Params[i]
	at := e.Args[i].NodeSpan()
	want := c.expectedType(fn, p, syms)
	d := c.errorAt(file, at, "shape", "",
		"argument %s of %s has the wrong shape: expected %s, got %s (%s)", p.Name.Name, fn.name(), want, tv.typeString(), why)
	related(d, fn.file, p.Span, "parameter %s is declared %s", p.Name.Name, c.text(fn.file, p.Type.Span))
	if bound != nil && bound.arg != i {
		bp := fn.decl.Params[bound.arg]
		related(d, file, e.Args[bound.arg].NodeSpan(), "%s was bound to %d by argument %s", c.text(fn.file, bound.span), bound.val, bp.Name.Name)
	}
}

// expectedType formats a parameter's type with the shape symbols bound so far
// replaced by their values, e.g. "f32[K, N] = f32[3, N]".
func (c *checker) expectedType(fn *fnDecl, p *syntax.Param, syms map[string]*shapeSym) string {
	written := c.text(fn.file, p.Type.Span)
	parts := make([]string, len(p.Type.Dims))
	changed := false
	pi := 0
	for i, q := range fn.decl.Params {
		if q == p {
			pi = i
		}
	}
	for k, de := range p.Type.Dims {
		parts[k] = c.text(fn.file, de.NodeSpan())
		if v, ok := c.known[[2]int{pi, k}]; ok {
			parts[k] = fmt.Sprint(v)
			changed = true
		}
		if n, ok := de.(*syntax.Name); ok {
			if s := syms[n.Name]; s != nil {
				parts[k] = fmt.Sprint(s.val)
				changed = true
			}
		}
	}
	if !changed {
		return written
	}
	return fmt.Sprintf("%s = %s[%s]", written, p.Type.Name.Name, strings.Join(parts, ", "))
}

func article(t string) string {
	if t == "int" {
		return "an int"
	}
	return "a " + t
}

// finishCall checks a call's returned values against the declared results.
func (c *checker) finishCall(fs *scope, fn *fnDecl, fr *frame, e *syntax.Call) Value {
	d := fn.decl
	if !fr.returned {
		if len(d.Results) > 0 {
			c.errorAt(fn.file, d.Name.Span, "type", "end the body with return", "%s declares results but returns nothing", fn.name())
			return poison{}
		}
		return noneVal{}
	}
	res := fr.results
	for _, r := range res {
		if _, ok := r.(poison); ok {
			return poison{}
		}
	}
	if len(d.Results) > 0 {
		if len(res) != len(d.Results) {
			dd := c.errorAt(fn.file, fr.resultSpans[0], "arity", "", "%s declares %s but returns %d", fn.name(), plural(len(d.Results), "result"), len(res))
			related(dd, fn.file, d.Results[0].Span, "the results are declared here")
			return poison{}
		}
		ok := true
		for i, rt := range d.Results {
			if !c.checkResult(fs, fn, rt, res[i], fr.resultSpans[i]) {
				ok = false
			}
		}
		if !ok {
			return poison{}
		}
	}
	if len(res) == 1 {
		return res[0]
	}
	return &tupleVal{elems: res}
}

// checkResult checks a returned value against its declared type.
func (c *checker) checkResult(fs *scope, fn *fnDecl, rt *syntax.TypeExpr, v Value, at syntax.Span) bool {
	switch rt.Name.Name {
	case "int", "float":
		if rt.Dims == nil {
			n, ok := v.(number)
			if !ok || (rt.Name.Name == "int" && !n.isInt) {
				dd := c.errorAt(fn.file, at, "type", "", "%s returns %s, but the declared result is %s", fn.name(), describe(v), rt.Name.Name)
				related(dd, fn.file, rt.Span, "the result is declared here")
				return false
			}
			return true
		}
	}
	dt, ok := dtypeNamed(rt.Name.Name)
	if b := fs.lookupLocal(rt.Name.Name); b != nil && isDTypeVarName(rt.Name.Name) {
		if v, isVar := b.val.(dtypeVar); isVar {
			dt, ok = v.dt, true
		}
	}
	if !ok {
		c.errorAt(fn.file, rt.Name.Span, "type", "", "unknown type %s", rt.Name.Name)
		return false
	}
	tv, ok := v.(*tensorVal)
	if !ok {
		dd := c.errorAt(fn.file, at, "type", "", "%s returns %s, but the declared result is %s", fn.name(), describe(v), c.text(fn.file, rt.Span))
		related(dd, fn.file, rt.Span, "the result is declared here")
		return false
	}
	dims := rt.Dims
	want, good := c.evalDims(fs, dims)
	if !good {
		return false
	}
	if tv.dtype() != dt || !sameShape(tv.shape, want) {
		dd := c.errorAt(fn.file, at, "shape", "", "%s returns %s, but the declared result is %s = %s",
			fn.name(), tv.typeString(), c.text(fn.file, rt.Span), typeString(dt, want))
		related(dd, fn.file, rt.Span, "the result is declared here")
		return false
	}
	return true
}

// checkRecursion finds the functions that call themselves, directly or
// through others, reports each cycle once, and marks its functions so that
// calls to them are not inlined.
func (c *checker) checkRecursion(files []*fileScope) {
	var fns []*fnDecl
	seenFile := map[*fileScope]bool{}
	for _, f := range files {
		if f == nil || seenFile[f] {
			continue
		}
		seenFile[f] = true
		for _, n := range f.order {
			if fn, ok := f.names[n].(*fnDecl); ok {
				fns = append(fns, fn)
			}
		}
	}
	type edge struct {
		to   *fnDecl
		span syntax.Span
	}
	calls := map[*fnDecl][]edge{}
	for _, fn := range fns {
		locals := map[string]bool{}
		for _, p := range fn.decl.Params {
			locals[p.Name.Name] = true
		}
		visitCalls(fn.decl, func(id syntax.Ident) {
			if locals[id.Name] {
				return
			}
			if g, ok := fn.scope.lookupTop(id.Name).(*fnDecl); ok {
				calls[fn] = append(calls[fn], edge{g, id.Span})
			}
		})
	}
	// Depth-first search for cycles; each cycle is reported at the call that
	// closes it.
	state := map[*fnDecl]int{}
	var stack []*fnDecl
	var visit func(fn *fnDecl)
	visit = func(fn *fnDecl) {
		state[fn] = 1
		stack = append(stack, fn)
		for _, ed := range calls[fn] {
			switch state[ed.to] {
			case 0:
				visit(ed.to)
			case 1:
				var cycle []*fnDecl
				for i := len(stack) - 1; i >= 0; i-- {
					cycle = append([]*fnDecl{stack[i]}, cycle...)
					if stack[i] == ed.to {
						break
					}
				}
				c.reportCycle(cycle, fn, ed.span)
			}
		}
		stack = stack[:len(stack)-1]
		state[fn] = 2
	}
	for _, fn := range fns {
		if state[fn] == 0 {
			visit(fn)
		}
	}
}

func (c *checker) reportCycle(cycle []*fnDecl, last *fnDecl, span syntax.Span) {
	for _, f := range cycle {
		f.recursive = true
	}
	if len(cycle) == 1 {
		c.errorAt(last.file, span, "recursion", "functions are inlined at each call, so they cannot recurse; unroll with a for loop",
			"%s calls itself", last.name())
		return
	}
	names := make([]string, 0, len(cycle)+1)
	for _, f := range cycle {
		names = append(names, f.name())
	}
	names = append(names, cycle[0].name())
	d := c.errorAt(last.file, span, "recursion", "functions are inlined at each call, so they cannot recurse",
		"%s are mutually recursive: %s", strings.Join(names[:len(names)-1], " and "), strings.Join(names, " calls "))
	for _, f := range cycle[:len(cycle)-1] {
		related(d, f.file, f.decl.Name.Span, "%s is declared here", f.name())
	}
}

// visitCalls calls f for the name of every call in a function's body.
func visitCalls(fn *syntax.FnDecl, f func(syntax.Ident)) {
	var expr func(e syntax.Expr)
	expr = func(e syntax.Expr) {
		switch e := e.(type) {
		case *syntax.Unary:
			expr(e.X)
		case *syntax.Binary:
			expr(e.X)
			expr(e.Y)
		case *syntax.Call:
			if n, ok := e.Fun.(*syntax.Name); ok {
				f(n.Ident)
			} else {
				expr(e.Fun)
			}
			for _, a := range e.Args {
				expr(a)
			}
		case *syntax.IndexExpr:
			expr(e.X)
			for _, a := range e.Indices {
				expr(a)
			}
		case *syntax.Reduce:
			expr(e.Body)
		case *syntax.Paren:
			expr(e.X)
		case *syntax.ListExpr:
			for _, a := range e.Elems {
				expr(a)
			}
		case *syntax.Comprehension:
			expr(e.Elem)
			expr(e.Range)
		case *syntax.RangeExpr:
			expr(e.Lo)
			expr(e.Hi)
		}
	}
	var stmts func(ss []syntax.Stmt)
	stmts = func(ss []syntax.Stmt) {
		for _, s := range ss {
			switch s := s.(type) {
			case *syntax.AssignStmt:
				expr(s.Value)
				for _, t := range s.Targets {
					for _, i := range t.Indices {
						expr(i)
					}
				}
				for _, w := range s.Where {
					expr(w.Range)
				}
			case *syntax.ForStmt:
				expr(s.Range)
				stmts(s.Body)
			case *syntax.ReturnStmt:
				for _, v := range s.Values {
					expr(v)
				}
			case *syntax.ConstDecl:
				expr(s.Value)
			case *syntax.OutputStmt:
				for _, it := range s.Items {
					if it.Value != nil {
						expr(it.Value)
					}
				}
			}
		}
	}
	if fn.Expr != nil {
		expr(fn.Expr)
	}
	for _, p := range fn.Params {
		if p.Type != nil {
			for _, d := range p.Type.Dims {
				expr(d)
			}
		}
	}
	stmts(fn.Body)
}

// rankHint returns advice for argument i of a call of fn that has rank
// dimensions where fn wants another number: the standard library's layout
// functions exist once per rank (the digit in the name), and reshapeN takes
// a vector, which ravelM makes of a tensor of rank M.
func (c *checker) rankHint(sc *scope, fn *fnDecl, e *syntax.Call, i, rank int) string {
	if c.prelude == nil || fn.scope != c.prelude || i != 0 {
		return ""
	}
	name := fn.name()
	base := strings.TrimRight(name, "0123456789")
	if base == name {
		return ""
	}
	args := make([]string, len(e.Args))
	for k, a := range e.Args {
		args[k] = c.text(sc.path, a.NodeSpan())
	}
	if base == "reshape" {
		ravel := "ravel" + strconv.Itoa(rank)
		if c.prelude.lookupTop(ravel) == nil {
			return ""
		}
		args[0] = ravel + "(" + args[0] + ")"
		return fmt.Sprintf("%s reads a vector row-major: ravel the tensor first, %s(%s)", name, name, strings.Join(args, ", "))
	}
	if other := base + strconv.Itoa(rank); c.prelude.lookupTop(other) != nil {
		return fmt.Sprintf("the digit in %s is the rank of its input: for a tensor of rank %d, call %s(%s)", name, rank, other, strings.Join(args, ", "))
	}
	return ""
}
