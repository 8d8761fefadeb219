package lower

import (
	"math"

	"tec/backend/kir"
	"tec/contraction"
	"tec/schedule"
	"tec/te"
)

// gen translates te expressions into kir expressions and statements for one
// thread. Reductions become loops that accumulate in registers; they are
// emitted into the current statement list, before the expression that uses
// their value.
type gen struct {
	bufs map[*te.Tensor]*kir.Buffer
	env  map[*te.Var]kir.Expr // iteration variables in scope
	out  *[]kir.Stmt
	// done holds reductions already computed, by the kernel's cooperative
	// code, and the registers holding their values.
	done map[*te.Reduce]kir.Expr
	// m is the module lowered into, whose error record and gathers a
	// gather's index reports to.
	m *kir.Module
}

func (g *gen) emit(s ...kir.Stmt) { *g.out = append(*g.out, s...) }

// into runs f with statements emitted into a fresh list, and returns it.
func (g *gen) into(f func()) []kir.Stmt {
	var body []kir.Stmt
	outer := g.out
	g.out = &body
	f()
	g.out = outer
	return body
}

// convert returns x as a value of register type t.
func convert(x kir.Expr, t te.DType) kir.Expr {
	if x.Type() == t {
		return x
	}
	return &kir.Cast{To: t, X: x}
}

// index translates a quasi-affine index, folding variables bound to
// constants and writing negative terms as subtractions.
func (g *gen) index(x te.Index) kir.Expr {
	k := x.Const
	var e kir.Expr
	for _, t := range x.Terms {
		var a kir.Expr
		switch t.Atom.Op {
		case te.AtomVar:
			a = g.env[t.Atom.Var]
			if c, ok := a.(*kir.Const); ok {
				k += t.Coef * int(c.Value)
				continue
			}
		case te.AtomDiv:
			a = kir.Div(g.index(*t.Atom.Arg), kir.I(t.Atom.Divisor))
		default:
			a = kir.Mod(g.index(*t.Atom.Arg), kir.I(t.Atom.Divisor))
		}
		coef := t.Coef
		if coef < 0 {
			coef = -coef
		}
		if coef != 1 {
			a = kir.Mul(a, kir.I(coef))
		}
		switch {
		case e == nil && t.Coef < 0:
			e = &kir.Unary{Op: te.Neg, X: a}
		case e == nil:
			e = a
		case t.Coef < 0:
			e = kir.Sub(e, a)
		default:
			e = kir.Add(e, a)
		}
	}
	switch {
	case e == nil:
		return kir.I(k)
	case k > 0:
		return kir.Add(e, kir.I(k))
	case k < 0:
		return kir.Sub(e, kir.I(-k))
	}
	return e
}

// flat returns the row-major element offset of idx in a tensor of shape.
func (g *gen) flat(shape []int, idx []te.Index) kir.Expr {
	var off te.Index
	stride := 1
	for d := len(shape) - 1; d >= 0; d-- {
		off = off.Add(idx[d].Simplify().Scale(stride))
		stride *= shape[d]
	}
	return g.index(off)
}

// bounded returns x, an index into dimension dim (of size n) of table,
// bounded by a kir.Bounded that reports an index out of range to the
// module's error record, as a new gather of the module.
func (g *gen) bounded(x kir.Expr, table *kir.Buffer, dim, n int) kir.Expr {
	b := &kir.Bounded{X: x, N: n, Buf: table, Dim: dim}
	if g.m == nil {
		return b
	}
	if g.m.ErrorRecord == nil {
		g.m.ErrorRecord = kir.NewErrorRecord()
		g.m.Buffers = append(g.m.Buffers, g.m.ErrorRecord)
	}
	site, at := kir.SiteOf(x, table, dim, n)
	b.Record, b.Site, b.At = g.m.ErrorRecord, len(g.m.Gathers), at
	g.m.Gathers = append(g.m.Gathers, site)
	return b
}

// gather translates a load with run-time indexes: each gathered dimension's
// index is read (the index tensor's load), offset, and bounded by a
// kir.Bounded, which the simulator checks and a device clamps and reports;
// then the
// table is read at the static part of the offset plus each bounded index
// times its dimension's stride.
func (g *gen) gather(l *te.Load) kir.Expr {
	shape := l.Tensor.Shape
	buf := g.bufs[l.Tensor]
	static := make([]te.Index, len(l.Index))
	copy(static, l.Index)
	var dyn []kir.Expr
	stride := 1
	for d := len(shape) - 1; d >= 0; d-- {
		if x := l.Gathered(d); x != nil {
			v := convert(g.expr(x), te.I32)
			if _, zero := l.Index[d].IsConst(); !zero || l.Index[d].Const != 0 {
				v = kir.Add(v, g.index(l.Index[d].Simplify()))
			}
			var at kir.Expr = g.bounded(v, buf, d, shape[d])
			if stride != 1 {
				at = kir.Mul(at, kir.I(stride))
			}
			dyn = append(dyn, at)
			static[d] = te.Index{}
		}
		stride *= shape[d]
	}
	off := g.flat(shape, static)
	for _, x := range dyn {
		if c, ok := off.(*kir.Const); ok && c.Value == 0 {
			off = x
			continue
		}
		off = kir.Add(off, x)
	}
	return kir.Ld(buf, off)
}

// expr translates e; the result has the register type of te.TypeOf(e).
func (g *gen) expr(e te.Expr) kir.Expr {
	switch e := e.(type) {
	case *te.ConstExpr:
		if v := e.Value; e.DType == te.I32 && v == math.Trunc(v) && !math.IsInf(v, 0) {
			// Kept as it is, as the reference evaluates it: one past
			// the i32 range makes its arithmetic i64 (kir.Widen).
			return &kir.Const{Value: e.Value, T: te.I32}
		}
		return &kir.Const{Value: te.Round(e.DType, e.Value), T: kir.ValueType(e.DType)}
	case *te.IndexExpr:
		return g.index(e.Index.Simplify())
	case *te.Load:
		if e.IsGather() {
			return g.gather(e)
		}
		return kir.Ld(g.bufs[e.Tensor], g.flat(e.Tensor.Shape, e.Index))
	case *te.Unary:
		x := g.expr(e.X)
		switch e.Op {
		case te.Not:
			return &kir.Unary{Op: e.Op, X: convert(x, te.Bool)}
		case te.Neg, te.Abs:
			if x.Type() == te.Bool {
				x = convert(x, te.F32)
			}
			return &kir.Unary{Op: e.Op, X: x}
		}
		return &kir.Unary{Op: e.Op, X: convert(x, te.F32)}
	case *te.Binary:
		x, y := g.expr(e.X), g.expr(e.Y)
		switch {
		case e.Op.IsLogical():
			return kir.Bin(e.Op, convert(x, te.Bool), convert(y, te.Bool))
		case e.Op.IsComparison():
			t := te.I32
			if x.Type() == te.F32 || y.Type() == te.F32 {
				t = te.F32
			}
			if x.Type() == te.Bool && y.Type() == te.Bool && (e.Op == te.Eq || e.Op == te.Ne) {
				t = te.Bool
			}
			return kir.Bin(e.Op, convert(x, t), convert(y, t))
		}
		t := te.TypeOf(e)
		return kir.Bin(e.Op, convert(x, t), convert(y, t))
	case *te.Select:
		return g.selectExpr(e)
	case *te.Cast:
		x := g.expr(e.X)
		if e.To == te.F32 {
			return convert(x, te.F32)
		}
		return &kir.Cast{To: e.To, X: x}
	case *te.Reduce:
		if v, ok := g.done[e]; ok {
			return v
		}
		return g.reduce(e)
	}
	panic("lower: unknown te expression")
}

// selectExpr translates a select. Only the chosen branch is evaluated where
// that matters: a branch that reduces runs under an If, and a select whose
// condition depends only on indexes stays a lazy kir select. A select whose
// condition reads data and whose branches load only in bounds is evaluated
// eagerly (both branches, then a choice), which is what a GPU does with cheap
// branches and keeps the static report exact.
//
// A select whose condition the variables' ranges decide is its chosen
// branch alone: the other branch never runs and may load out of bounds
// (select(i - 2 >= 0, x[i - 2], 0.0) where i in 0..1), which the kir
// verifier rightly rejects in code that could run.
func (g *gen) selectExpr(e *te.Select) kir.Expr {
	t := te.TypeOf(e)
	if v, ok := te.ConstCondition(e.Cond); ok {
		if v {
			return convert(g.expr(e.Then), t)
		}
		return convert(g.expr(e.Else), t)
	}
	if te.HasReduce(e.Then) || te.HasReduce(e.Else) {
		c := convert(g.expr(e.Cond), te.Bool)
		r := kir.NewVar("sel", t)
		zero := &kir.Const{T: t}
		g.emit(&kir.Let{Var: r, Value: zero})
		then := g.into(func() { g.emit(&kir.Assign{Var: r, Value: convert(g.expr(e.Then), t)}) })
		els := g.into(func() { g.emit(&kir.Assign{Var: r, Value: convert(g.expr(e.Else), t)}) })
		g.emit(&kir.If{Cond: c, Then: then, Else: els})
		return r
	}
	c := convert(g.expr(e.Cond), te.Bool)
	if te.HasLoad(e.Cond) && te.LoadsInBounds(e.Then) && te.LoadsInBounds(e.Else) {
		a, b := kir.NewVar("then", t), kir.NewVar("else", t)
		g.emit(&kir.Let{Var: a, Value: convert(g.expr(e.Then), t)}, &kir.Let{Var: b, Value: convert(g.expr(e.Else), t)})
		return &kir.Select{Cond: c, Then: a, Else: b}
	}
	return &kir.Select{Cond: c, Then: convert(g.expr(e.Then), t), Else: convert(g.expr(e.Else), t)}
}

// identity returns the neutral element of op in register type t.
func identity(op te.ReduceOp, t te.DType) *kir.Const {
	v := op.Identity()
	if t == te.I32 && math.IsInf(v, 0) {
		if v > 0 {
			v = math.MaxInt32
		} else {
			v = math.MinInt32
		}
	}
	return &kir.Const{Value: v, T: t}
}

// combine returns acc op v.
func combine(op te.ReduceOp, acc, v kir.Expr) kir.Expr {
	switch op {
	case te.ReduceMax:
		return kir.Bin(te.Max, acc, v)
	case te.ReduceMin:
		return kir.Bin(te.Min, acc, v)
	case te.Prod:
		return kir.Mul(acc, v)
	}
	return kir.Add(acc, v)
}

// argReduce emits serial loops that find the row-major position over e's
// axes of the first greatest (argmax) or least (argmin) value of e's body,
// and returns the register holding it. The comparison is strict, so ties
// keep the first position, and a NaN is never chosen.
func (g *gen) argReduce(e *te.Reduce) kir.Expr {
	vt := te.F32
	if te.TypeOf(e.Body) == te.I32 {
		vt = te.I32
	}
	best := kir.NewVar("best", vt)
	at := kir.NewVar("arg", te.I32)
	found := kir.NewVar("found", te.Bool)
	g.emit(&kir.Let{Var: best, Value: identity(e.Op.ValueOp(), vt)}, &kir.Let{Var: at, Value: kir.I(0)},
		&kir.Let{Var: found, Value: kir.B(false)})
	var loops []*kir.For
	var pos kir.Expr
	for _, a := range e.Axes {
		v := kir.NewVar(a.Name, te.I32)
		g.env[a] = v
		loops = append(loops, &kir.For{Var: v, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(a.Extent), Step: 1})
		if pos == nil {
			pos = v
		} else {
			pos = kir.Add(kir.Mul(pos, kir.I(a.Extent)), v)
		}
	}
	if pos == nil {
		pos = kir.I(0)
	}
	inner := g.into(func() {
		v := kir.NewVar("v", vt)
		g.emit(&kir.Let{Var: v, Value: convert(g.expr(e.Body), vt)})
		cmp := te.Gt
		if e.Op == te.Argmin {
			cmp = te.Lt
		}
		// The first value that is not NaN is taken whatever it is (a row
		// of -inf gives 0, as the evaluator does), later ones only when
		// strictly better.
		first := kir.And(&kir.Unary{Op: te.Not, X: found}, kir.Eq(v, v))
		c := kir.NewVar("better", te.Bool)
		g.emit(&kir.Let{Var: c, Value: kir.Bin(te.Or, kir.Bin(cmp, v, best), first)},
			&kir.If{Cond: c, Then: []kir.Stmt{&kir.Assign{Var: best, Value: v}, &kir.Assign{Var: at, Value: pos},
				&kir.Assign{Var: found, Value: kir.B(true)}}})
	})
	for i := len(loops) - 1; i >= 0; i-- {
		loops[i].Body = inner
		inner = []kir.Stmt{loops[i]}
	}
	g.emit(inner...)
	for _, a := range e.Axes {
		delete(g.env, a)
	}
	return at
}

// zeroPastPositions returns the condition outside which the terms of the
// sum e are exactly 0 (contraction.ZeroPast), when it reads a run-time
// scalar (a decode step's positions) and one of e's axes.
func zeroPastPositions(e *te.Reduce) (te.Expr, bool) {
	if e.Op != te.Sum {
		return nil, false
	}
	c, ok := contraction.ZeroPast(e.Body)
	if !ok {
		return nil, false
	}
	scalar, axis := false, false
	te.Walk(c, func(x te.Expr) bool {
		switch x := x.(type) {
		case *te.Load:
			scalar = true
		case *te.IndexExpr:
			for _, a := range e.Axes {
				axis = axis || x.Index.Uses(a)
			}
		}
		return true
	})
	return c, scalar && axis
}

// zeroTest returns the test of the terms of r that may be nonzero
// (zeroPastPositions), or nil when every term may be. Its run-time
// scalars that do not vary with r's axes are loaded here, once, before
// r's loops; done forgets them after the loops.
func (g *gen) zeroTest(r *te.Reduce) (test te.Expr, done func()) {
	c, ok := zeroPastPositions(r)
	if !ok {
		return nil, func() {}
	}
	var hoisted []*te.Var
	test = te.Replace(c, func(x te.Expr) te.Expr {
		switch x := x.(type) {
		case *te.Load:
			for _, ix := range x.Index {
				for _, a := range r.Axes {
					if ix.Uses(a) {
						return x
					}
				}
			}
			v := kir.NewVar(x.Tensor.Name, te.I32)
			g.emit(&kir.Let{Var: v, Value: convert(g.expr(x), te.I32)})
			tv := &te.Var{Name: x.Tensor.Name, Extent: 1 << 30}
			g.env[tv] = v
			hoisted = append(hoisted, tv)
			return &te.IndexExpr{Index: te.VarIndex(tv)}
		case *te.Unary, *te.Binary:
			return nil // rebuilt over their operands
		}
		return x
	})
	return test, func() {
		for _, v := range hoisted {
			delete(g.env, v)
		}
	}
}

// addTerm emits acc = acc op r's body, r's axes bound; under test (see
// zeroTest) when it is set: no loads and no adds past the run-time
// positions, where the terms are exactly 0.
func (g *gen) addTerm(r *te.Reduce, acc *kir.Var, t te.DType, test te.Expr) {
	add := g.into(func() {
		g.emit(&kir.Assign{Var: acc, Value: combine(r.Op, acc, convert(g.expr(r.Body), t))})
	})
	if test != nil {
		add = []kir.Stmt{&kir.If{Cond: g.expr(test), Then: add}}
	}
	g.emit(add...)
}

// reduce emits serial loops that reduce e into a register, and returns it.
func (g *gen) reduce(e *te.Reduce) kir.Expr {
	if e.Op.IsArg() {
		return g.argReduce(e)
	}
	// The reductions nested in e's body that do not move with its axes
	// are computed once, before its loops (cost.RequestBytes counts
	// them so).
	inv := te.InvariantReductions(e)
	for _, n := range inv {
		if _, ok := g.done[n]; !ok {
			v := g.reduce(n)
			if g.done == nil {
				g.done = map[*te.Reduce]kir.Expr{}
			}
			g.done[n] = v
			defer delete(g.done, n)
		}
	}
	t := te.TypeOf(e)
	acc := kir.NewVar("acc", t)
	g.emit(&kir.Let{Var: acc, Value: identity(e.Op, t)})
	var loops []*kir.For
	factors, _ := schedule.ReduceUnroll(e)
	for i, a := range e.Axes {
		v := kir.NewVar(a.Name, te.I32)
		g.env[a] = v
		loop := &kir.For{Var: v, Kind: kir.Serial, Lo: kir.I(0), Hi: kir.I(a.Extent), Step: 1}
		switch u := factors[i]; {
		case u == a.Extent:
			loop.Kind = kir.Unrolled
		case u > 1:
			loop.Unroll = u
		}
		loops = append(loops, loop)
	}
	test, forget := g.zeroTest(e)
	defer forget()
	inner := g.into(func() { g.addTerm(e, acc, t, test) })
	for i := len(loops) - 1; i >= 0; i-- {
		loops[i].Body = inner
		inner = []kir.Stmt{loops[i]}
	}
	g.emit(inner...)
	for _, a := range e.Axes {
		delete(g.env, a)
	}
	return acc
}
