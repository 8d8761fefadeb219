package lang

import (
	"fmt"
	"strings"

	"tec/lang/syntax"
	"tec/te"
)

// axisNames name the axes of tensors made from whole-tensor expressions.
var axisNames = []string{"i", "j", "k", "l", "m", "n"}

func axisName(d int) string {
	if d < len(axisNames) {
		return axisNames[d]
	}
	return fmt.Sprintf("i%d", d)
}

// elementwise applies an element operation to whole values: numbers fold,
// and tensors of one shape (with numbers and rank-0 tensors broadcast) give a
// lazy element-wise tensor.
func (c *checker) elementwise(sc *scope, span syntax.Span, what string, args []Value, spans []syntax.Span,
	apply func(ec *elemCtx, xs []scalar) scalar) Value {
	file := sc.path
	var shape []int
	shapeArg := -1
	allNum := true
	for i, a := range args {
		switch a := a.(type) {
		case poison:
			return poison{}
		case number:
			continue
		case *tensorVal, *lazyVal:
			allNum = false
			s := valueShape(a)
			if len(s) == 0 {
				continue
			}
			if shapeArg < 0 {
				shape, shapeArg = s, i
				continue
			}
			if !sameShape(shape, s) {
				hint := "element-wise operands must have the same shape; numbers and rank-0 tensors combine with any"
				if op, isOp := strings.CutPrefix(what, "operator "); isOp && len(args) == 2 {
					target := c.stmtName()
					target = target[strings.LastIndexByte(target, '/')+1:]
					if b := broadcastHint(target, op, c.text(file, spans[shapeArg]), shape, c.text(file, spans[i]), s); b != "" {
						hint += "; to broadcast, write it element-wise: " + b
					}
				}
				d := c.errorAt(file, span, "shape", hint,
					"%s: the shapes differ: %s is %s, but %s is %s", what,
					c.text(file, spans[shapeArg]), shapeString(shape), c.text(file, spans[i]), shapeString(s))
				related(d, file, spans[shapeArg], "this operand has shape %s", shapeString(shape))
				return poison{}
			}
		default:
			c.errorAt(file, spans[i], "type", "", "%s needs numbers or tensors, but %s is %s", what, c.text(file, spans[i]), describe(a))
			return poison{}
		}
	}
	if allNum {
		xs := make([]scalar, len(args))
		for i, a := range args {
			xs[i] = numScalar(a.(number))
		}
		r := apply(newElemCtx(), xs)
		switch r.k {
		case sNum:
			return r.num
		case sBad:
			return poison{}
		}
		c.errorAt(file, span, "type", "", "%s: not a compile-time number", c.text(file, span))
		return poison{}
	}
	if shape == nil {
		shape = []int{}
	}
	return &lazyVal{shape: shape, span: span, label: elemLabel(what, len(args)),
		file: file, args: args, spans: spans, apply: apply}
}

// elemAt returns the element of l at ix (nil for a rank-0 value). A chain
// of element-wise operations whose first operands are element-wise in turn
// (y = x + x + ... + x, as long as the program) is evaluated along that
// chain iteratively, innermost first, in the order a recursion would take:
// the Go stack does not grow with the chain's length.
func (c *checker) elemAt(ec *elemCtx, l *lazyVal, ix []te.Index) scalar {
	chain := []*lazyVal{l}
	at := [][]te.Index{ix}
	for {
		cur := chain[len(chain)-1]
		next, ok := cur.firstLazy()
		if !ok {
			break
		}
		chain = append(chain, next)
		at = append(at, operandIndex(next, at[len(at)-1]))
	}
	var inner scalar
	for k := len(chain) - 1; k >= 0; k-- {
		l := chain[k]
		xs := make([]scalar, len(l.args))
		for i := range l.args {
			if i == 0 && k < len(chain)-1 {
				xs[0] = inner
			} else {
				xs[i] = c.operandAt(ec, l, i, at[k])
			}
			if xs[i].k == sBad {
				return badScalar
			}
		}
		inner = l.apply(ec, xs)
	}
	return inner
}

// firstLazy returns l's first operand when that is element-wise too.
func (l *lazyVal) firstLazy() (*lazyVal, bool) {
	if len(l.args) == 0 {
		return nil, false
	}
	next, ok := l.args[0].(*lazyVal)
	return next, ok
}

// operandIndex returns the index at which an operand of a value read at ix
// is read: ix, or nil for a rank-0 operand, which broadcasts.
func operandIndex(v Value, ix []te.Index) []te.Index {
	if len(valueShape(v)) == 0 {
		return nil
	}
	return ix
}

// operandAt returns operand i of l at ix, l's index.
func (c *checker) operandAt(ec *elemCtx, l *lazyVal, i int, ix []te.Index) scalar {
	switch a := l.args[i].(type) {
	case number:
		return numScalar(a)
	case *tensorVal:
		return c.load(ec, a, operandIndex(a, ix), l.file, l.spans[i], c.text(l.file, l.spans[i]), nil, nil)
	case *lazyVal:
		return c.elemAt(ec, a, operandIndex(a, ix))
	}
	return badScalar
}

// valueShape returns the shape of a tensor value.
func valueShape(v Value) []int {
	switch v := v.(type) {
	case *tensorVal:
		return v.shape
	case *lazyVal:
		return v.shape
	}
	return nil
}

// materialize makes a lazy element-wise expression one compute tensor.
func (c *checker) materialize(sc *scope, l *lazyVal) Value {
	ec := newElemCtx()
	axes := make([]*te.Var, len(l.shape))
	ix := make([]te.Index, len(l.shape))
	for d, n := range l.shape {
		axes[d] = te.NewVar(axisName(d), n)
		ix[d] = te.VarIndex(axes[d])
		ec.addVar(&indexVar{v: axes[d], name: axes[d].Name, fixed: true})
	}
	s := c.elemAt(ec, l, ix)
	if s.k == sBad {
		return poison{}
	}
	c.checkBounds(ec)
	return c.compute(sc.path, l.span, axes, s, c.madeName(l.label))
}

// compute adds a compute tensor named name over axes whose body is s, stored
// in the dtype that the language's rules give: a cast's type, i32 or bool for
// such bodies, and f32 otherwise.
func (c *checker) compute(file string, span syntax.Span, axes []*te.Var, s scalar, name string) *tensorVal {
	body := c.bindShared(file, span, s.toExpr(false))
	c.checkExactValues(file, span, body)
	dt := dagType(body)
	if cast, ok := body.(*te.Cast); ok {
		dt = cast.To
	}
	shape := make([]int, len(axes))
	for d, v := range axes {
		shape[d] = v.Extent
	}
	t := c.prog.add(&te.Tensor{Kind: te.Compute, DType: dt, Shape: shape, Axes: axes, Body: body}, name, file, span)
	return wholeTensor(t)
}

// asTensor makes v a tensor value, materialising a lazy expression. It
// returns nil for values that are not tensors.
func (c *checker) asTensor(sc *scope, v Value) Value {
	switch v := v.(type) {
	case *lazyVal:
		return c.materialize(sc, v)
	case *tensorVal, poison:
		return v
	}
	return nil
}

// settle materialises a lazy value; other values are returned as they are.
func (c *checker) settle(sc *scope, v Value) Value {
	if l, ok := v.(*lazyVal); ok {
		return c.materialize(sc, l)
	}
	return v
}

// constTensor makes zeros(t), ones(t) or full(t, v); name is the builtin's.
func (c *checker) constTensor(sc *scope, span syntax.Span, name string, t typeVal, v number) Value {
	axes := make([]*te.Var, len(t.dims))
	for d, n := range t.dims {
		axes[d] = te.NewVar(axisName(d), n)
	}
	var body te.Expr
	switch t.dtype {
	case te.I32:
		if !v.isInt {
			v = intNum(int(v.f))
		}
		body = &te.ConstExpr{Value: float64(v.i), DType: te.I32}
	case te.Bool:
		body = &te.ConstExpr{Value: boolValue(v.truth()), DType: te.Bool}
	default:
		body = &te.ConstExpr{Value: v.float(), DType: te.F32}
	}
	tt := c.prog.add(&te.Tensor{Kind: te.Compute, DType: t.dtype, Shape: append([]int(nil), t.dims...), Axes: axes, Body: body}, c.madeName(name), sc.path, span)
	return wholeTensor(tt)
}

// stack makes one tensor of the equal-shaped tensors of a list, selecting
// the element with a balanced tree of selects on the first index.
func (c *checker) stack(sc *scope, span syntax.Span, argSpan syntax.Span, v Value) Value {
	file := sc.path
	l, ok := v.(*listVal)
	if !ok {
		if _, bad := v.(poison); !bad {
			c.errorAt(file, argSpan, "type", "", "stack needs a list of tensors, but %s is %s", c.text(file, argSpan), describe(v))
		}
		return poison{}
	}
	if len(l.elems) == 0 {
		c.errorAt(file, argSpan, "type", "", "stack needs at least one tensor, but %s is empty", c.text(file, argSpan))
		return poison{}
	}
	ts := make([]*tensorVal, len(l.elems))
	for i, e := range l.elems {
		switch e := e.(type) {
		case *tensorVal:
			ts[i] = e
		case poison:
			return poison{}
		default:
			c.errorAt(file, argSpan, "type", "", "stack needs a list of tensors, but element %d of %s is %s", i, c.text(file, argSpan), describe(e))
			return poison{}
		}
		if ts[i].dtype() != ts[0].dtype() || !sameShape(ts[i].shape, ts[0].shape) {
			c.errorAt(file, argSpan, "shape", "", "stack needs tensors of one type, but element 0 of %s is %s and element %d is %s",
				c.text(file, argSpan), ts[0].typeString(), i, ts[i].typeString())
			return poison{}
		}
	}
	inner := ts[0].shape
	axes := make([]*te.Var, 1+len(inner))
	axes[0] = te.NewVar("s", len(ts))
	rest := make([]te.Index, len(inner))
	for d, n := range inner {
		axes[d+1] = te.NewVar(axisName(d), n)
		rest[d] = te.VarIndex(axes[d+1])
	}
	first := te.VarIndex(axes[0])
	var build func(lo, hi int) te.Expr
	build = func(lo, hi int) te.Expr {
		if hi-lo == 1 {
			return loadView(ts[lo], rest)
		}
		mid := (lo + hi) / 2
		cond := &te.Binary{Op: te.Lt, X: &te.IndexExpr{Index: first}, Y: &te.ConstExpr{Value: float64(mid), DType: te.I32}}
		return &te.Select{Cond: cond, Then: build(lo, mid), Else: build(mid, hi)}
	}
	shape := append([]int{len(ts)}, inner...)
	dt := ts[0].dtype()
	t := c.prog.add(&te.Tensor{Kind: te.Compute, DType: dt, Shape: shape, Axes: axes, Body: build(0, len(ts))}, c.madeName("stack"), file, span)
	return wholeTensor(t)
}

// loadView loads a tensor value (possibly a view) at ix.
func loadView(v *tensorVal, ix []te.Index) te.Expr {
	full := make([]te.Index, 0, len(v.prefix)+len(ix))
	for _, p := range v.prefix {
		full = append(full, te.Const(p))
	}
	return &te.Load{Tensor: v.t, Index: append(full, ix...)}
}

// copyTensor makes a new tensor named name holding the elements of v (a view
// or a placeholder given as an output).
func (c *checker) copyTensor(file string, span syntax.Span, v *tensorVal, name string) *tensorVal {
	axes := make([]*te.Var, len(v.shape))
	ix := make([]te.Index, len(v.shape))
	for d, n := range v.shape {
		axes[d] = te.NewVar(axisName(d), n)
		ix[d] = te.VarIndex(axes[d])
	}
	var body te.Expr = loadView(v, ix)
	if v.dtype() != te.TypeOf(body) {
		body = &te.Cast{To: v.dtype(), X: body}
	}
	t := c.prog.add(&te.Tensor{Kind: te.Compute, DType: v.dtype(), Shape: append([]int(nil), v.shape...), Axes: axes, Body: body}, name, file, span)
	return wholeTensor(t)
}

// broadcastHint returns the element-wise definition of y that broadcasts
// the operands a and b of op, of shapes sa and sb, as NumPy and PyTorch would
// (y[i, j] = x[i, j] + b[j] for x: [4, 6] and b: [6]), or "" where the
// operands are not plain names or the shapes do not broadcast. Shapes that
// do not broadcast from the right, but where one is the other's leading
// dimensions, are matched from the left (x: [4, 6] and b: [4]).
func broadcastHint(y, op, a string, sa []int, b string, sb []int) string {
	if !isPlainName(a) || !isPlainName(b) || !isPlainName(y) {
		return ""
	}
	names := axisNames
	r := max(len(sa), len(sb))
	if r > len(names) || a == b {
		return ""
	}
	for _, n := range names[:r] {
		if n == a || n == b || n == y {
			return ""
		}
	}
	try := func(offA, offB int) string {
		ia, ib := make([]string, len(sa)), make([]string, len(sb))
		for d := range r {
			da, db := d-offA, d-offB
			okA, okB := da >= 0 && da < len(sa), db >= 0 && db < len(sb)
			switch {
			case okA && okB && sa[da] == sb[db]:
				ia[da], ib[db] = names[d], names[d]
			case okA && okB && sa[da] == 1:
				ia[da], ib[db] = "0", names[d]
			case okA && okB && sb[db] == 1:
				ia[da], ib[db] = names[d], "0"
			case okA && okB:
				return ""
			case okA:
				ia[da] = names[d]
			case okB:
				ib[db] = names[d]
			}
		}
		return fmt.Sprintf("%s[%s] = %s[%s] %s %s[%s]", y, strings.Join(names[:r], ", "), a, strings.Join(ia, ", "), op, b, strings.Join(ib, ", "))
	}
	if h := try(r-len(sa), r-len(sb)); h != "" {
		return h
	}
	return try(0, 0)
}

// isPlainName reports whether s is a name of the language.
func isPlainName(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}
