package te

import (
	"fmt"
	"math"
	"strings"
)

// scalarFn computes a scalar from the values of the iteration variables, which
// live in env at the slots the compiler assigned to them.
type scalarFn func(env []int) float64

// indexFn computes an index from the values of the iteration variables.
type indexFn func(env []int) int

// compiler turns the body of one compute tensor into closures over an integer
// slot environment: each Var gets a slot of env.
type compiler struct {
	ev     *evaluator
	t      *Tensor
	slots  map[*Var]int
	nslots int
	gemm   map[*Reduce]scalarFn // contractions already evaluated by GEMM
	// reduces holds the reductions compiled so far, so that a Reduce node
	// shared by two parts of a body is compiled (and its axes bound) once.
	reduces map[*Reduce]scalarFn
}

// bind gives v a fresh slot.
func (c *compiler) bind(v *Var) error {
	if v == nil {
		return fmt.Errorf("nil iteration variable")
	}
	if _, dup := c.slots[v]; dup {
		return fmt.Errorf("iteration variable %s is bound twice", v.Name)
	}
	if v.Extent < 0 {
		return fmt.Errorf("iteration variable %s has negative extent %d", v.Name, v.Extent)
	}
	c.slots[v] = c.nslots
	c.nslots++
	return nil
}

// slot returns v's slot, or an error if v is not bound where it is used.
func (c *compiler) slot(v *Var) (int, error) {
	s, ok := c.slots[v]
	if !ok {
		return 0, fmt.Errorf("variable %s is used outside its scope", v.Name)
	}
	return s, nil
}

// varRange is the range of a bound variable, for static bounds checks.
func varRange(v *Var) (lo, hi int) { return 0, v.Extent - 1 }

// cost estimates the work of evaluating e once, in element operations, to
// decide whether a tensor is worth splitting among goroutines.
func (c *compiler) cost(e Expr) int {
	n := 1
	Walk(e, func(x Expr) bool {
		if r, ok := x.(*Reduce); ok {
			if _, done := c.gemm[r]; done {
				return false
			}
			m := 1
			for _, v := range r.Axes {
				m *= max(v.Extent, 1)
			}
			n += m * c.cost(r.Body)
			return false
		}
		n++
		return true
	})
	return n
}

// affine is an affine index flattened to Const + Σ Coefs[i]·env[Slots[i]].
type affine struct {
	slots, coefs []int
	c            int
}

// flatten returns x as an affine form over slots, scaled by scale, added to a.
func (c *compiler) flatten(a *affine, x Index, scale int) error {
	a.c += x.Const * scale
	for _, t := range x.Terms {
		s, err := c.slot(t.Atom.Var)
		if err != nil {
			return err
		}
		coef := t.Coef * scale
		merged := false
		for i := range a.slots {
			if a.slots[i] == s {
				a.coefs[i] += coef
				merged = true
			}
		}
		if !merged {
			a.slots = append(a.slots, s)
			a.coefs = append(a.coefs, coef)
		}
	}
	return nil
}

// fn returns a closure evaluating a.
func (a *affine) fn() indexFn {
	k := a.c
	switch len(a.slots) {
	case 0:
		return func([]int) int { return k }
	case 1:
		s0, c0 := a.slots[0], a.coefs[0]
		if c0 == 1 && k == 0 {
			return func(env []int) int { return env[s0] }
		}
		return func(env []int) int { return k + c0*env[s0] }
	case 2:
		s0, c0, s1, c1 := a.slots[0], a.coefs[0], a.slots[1], a.coefs[1]
		return func(env []int) int { return k + c0*env[s0] + c1*env[s1] }
	case 3:
		s0, c0, s1, c1, s2, c2 := a.slots[0], a.coefs[0], a.slots[1], a.coefs[1], a.slots[2], a.coefs[2]
		return func(env []int) int { return k + c0*env[s0] + c1*env[s1] + c2*env[s2] }
	}
	slots, coefs := a.slots, a.coefs
	return func(env []int) int {
		s := k
		for i, sl := range slots {
			s += coefs[i] * env[sl]
		}
		return s
	}
}

// index compiles an index expression.
func (c *compiler) index(x Index) (indexFn, error) {
	if x.IsAffine() {
		var a affine
		if err := c.flatten(&a, x, 1); err != nil {
			return nil, err
		}
		return a.fn(), nil
	}
	k := x.Const
	coefs := make([]int, len(x.Terms))
	atoms := make([]indexFn, len(x.Terms))
	for i, t := range x.Terms {
		coefs[i] = t.Coef
		switch t.Atom.Op {
		case AtomVar:
			s, err := c.slot(t.Atom.Var)
			if err != nil {
				return nil, err
			}
			atoms[i] = func(env []int) int { return env[s] }
		case AtomDiv, AtomMod:
			if t.Atom.Arg == nil || t.Atom.Divisor <= 0 {
				return nil, fmt.Errorf("malformed index atom %s", t.Atom)
			}
			arg, err := c.index(*t.Atom.Arg)
			if err != nil {
				return nil, err
			}
			d := t.Atom.Divisor
			if t.Atom.Op == AtomDiv {
				atoms[i] = func(env []int) int { return floorDiv(arg(env), d) }
			} else {
				atoms[i] = func(env []int) int { return floorMod(arg(env), d) }
			}
		default:
			return nil, fmt.Errorf("unknown index atom kind %d", t.Atom.Op)
		}
	}
	return func(env []int) int {
		s := k
		for i, a := range atoms {
			s += coefs[i] * a(env)
		}
		return s
	}, nil
}

// load compiles a Load. Dimensions whose index is statically in bounds are not
// checked at run time; the others are, and a load out of bounds panics with a
// *runtimeError.
func (c *compiler) load(l *Load) (scalarFn, error) {
	if l.Tensor == nil {
		return nil, fmt.Errorf("load of a nil tensor")
	}
	arr, err := c.ev.value(l.Tensor)
	if err != nil {
		return nil, err
	}
	shape := l.Tensor.Shape
	if len(l.Index) != len(shape) {
		return nil, fmt.Errorf("load %s has %d indexes for %d dimensions", FormatExpr(l), len(l.Index), len(shape))
	}
	if len(l.Gather) != 0 && len(l.Gather) != len(shape) {
		return nil, fmt.Errorf("load %s has %d gather indexes for %d dimensions", FormatExpr(l), len(l.Gather), len(shape))
	}
	data := arr.Data
	strides := Strides(shape)
	if l.IsGather() {
		return c.gather(l, data, strides)
	}
	safe, affineAll := true, true
	for d, x := range l.Index {
		for _, v := range x.Vars() {
			if _, err := c.slot(v); err != nil {
				return nil, fmt.Errorf("load %s: %w", FormatExpr(l), err)
			}
		}
		if lo, hi := x.Bounds(varRange); lo < 0 || hi >= shape[d] {
			safe = false
		}
		affineAll = affineAll && x.IsAffine()
	}
	if safe && affineAll {
		var a affine
		for d, x := range l.Index {
			if err := c.flatten(&a, x, strides[d]); err != nil {
				return nil, err
			}
		}
		if len(a.slots) == 1 && a.coefs[0] == 1 && a.c == 0 {
			s := a.slots[0]
			return func(env []int) float64 { return data[env[s]] }, nil
		}
		off := a.fn()
		return func(env []int) float64 { return data[off(env)] }, nil
	}
	idx := make([]indexFn, len(l.Index))
	check := make([]bool, len(l.Index))
	for d, x := range l.Index {
		if idx[d], err = c.index(x); err != nil {
			return nil, err
		}
		lo, hi := x.Bounds(varRange)
		check[d] = lo < 0 || hi >= shape[d]
	}
	oob := func(env []int) {
		vals := make([]string, len(idx))
		for d, f := range idx {
			vals[d] = fmt.Sprint(f(env))
		}
		panic(&runtimeError{fmt.Sprintf("load %s[%s] out of bounds of %s", l.Tensor.Name, strings.Join(vals, ", "), l.Tensor.TypeString())})
	}
	return func(env []int) float64 {
		off := 0
		for d, f := range idx {
			i := f(env)
			if check[d] && (i < 0 || i >= shape[d]) {
				oob(env)
			}
			off += i * strides[d]
		}
		return data[off]
	}, nil
}

// gather compiles a load with run-time indexes. Every index is checked: one
// outside its dimension panics with a *runtimeError that names the index
// read, its value and the dimension, e.g. "gather index ids[3] = 50000 is
// outside wte's dimension 0 [0, 30522)".
func (c *compiler) gather(l *Load, data []float64, strides []int) (scalarFn, error) {
	shape := l.Tensor.Shape
	static := make([]indexFn, len(l.Index))
	dyn := make([]scalarFn, len(l.Index))
	for d, x := range l.Index {
		var err error
		if static[d], err = c.index(x); err != nil {
			return nil, fmt.Errorf("load %s: %w", FormatExpr(l), err)
		}
		if g := l.Gathered(d); g != nil {
			if TypeOf(g) != I32 {
				return nil, fmt.Errorf("load %s: gather index %s is %s, not i32", FormatExpr(l), FormatExpr(g), TypeOf(g))
			}
			if dyn[d], err = c.expr(g); err != nil {
				return nil, err
			}
		}
	}
	describe := c.gatherIndexText(l)
	return func(env []int) float64 {
		off := 0
		for d, f := range static {
			i := f(env)
			if dyn[d] != nil {
				i += int(dyn[d](env))
			}
			if i < 0 || i >= shape[d] {
				panic(&runtimeError{fmt.Sprintf("gather index %s = %d is outside %s's dimension %d [0, %d)",
					describe(d, env), i, tensorName(l.Tensor), d, shape[d])})
			}
			off += i * strides[d]
		}
		return data[off]
	}, nil
}

// gatherIndexText returns a function that writes the index of dimension d
// of the gather l as the user wrote it, with the positions of the tensor
// it reads evaluated: "ids[3]", "ids[0, 5] + 1".
func (c *compiler) gatherIndexText(l *Load) func(d int, env []int) string {
	return func(d int, env []int) string {
		g := l.Gathered(d)
		if g == nil {
			return l.Index[d].String()
		}
		s := FormatExpr(g)
		src, ok := g.(*Load)
		if !ok || src.IsGather() {
			// ids[s] + 1: name the element the value came from.
			src = nil
			Walk(g, func(x Expr) bool {
				if l, isLoad := x.(*Load); isLoad && src == nil && !l.IsGather() {
					src = l
				}
				return src == nil
			})
			ok = false
		}
		if src != nil {
			vals := make([]string, len(src.Index))
			for i, x := range src.Index {
				f, err := c.index(x)
				if err != nil {
					return s
				}
				vals[i] = fmt.Sprint(f(env))
			}
			s = fmt.Sprintf("%s[%s]", tensorName(src.Tensor), strings.Join(vals, ", "))
			if !ok {
				s = "from " + s
			}
		}
		switch off := l.Index[d]; {
		case off.Equal(Index{}):
		case len(off.Terms) == 0 && off.Const < 0:
			s += fmt.Sprintf(" - %d", -off.Const)
		default:
			s += " + " + off.String()
		}
		return s
	}
}

// expr compiles an expression.
func (c *compiler) expr(e Expr) (scalarFn, error) {
	switch e := e.(type) {
	case *ConstExpr:
		v := e.Value
		return func([]int) float64 { return v }, nil
	case *IndexExpr:
		f, err := c.index(e.Index)
		if err != nil {
			return nil, err
		}
		return func(env []int) float64 { return float64(f(env)) }, nil
	case *Load:
		return c.load(e)
	case *Unary:
		return c.unary(e)
	case *Binary:
		return c.binary(e)
	case *Select:
		cond, err := c.expr(e.Cond)
		if err != nil {
			return nil, err
		}
		th, err := c.expr(e.Then)
		if err != nil {
			return nil, err
		}
		el, err := c.expr(e.Else)
		if err != nil {
			return nil, err
		}
		return func(env []int) float64 {
			if cond(env) != 0 {
				return th(env)
			}
			return el(env)
		}, nil
	case *Cast:
		x, err := c.expr(e.X)
		if err != nil {
			return nil, err
		}
		to := e.To
		if to == F32 {
			return x, nil
		}
		return func(env []int) float64 { return Round(to, x(env)) }, nil
	case *Reduce:
		if f, ok := c.gemm[e]; ok {
			return f, nil
		}
		if f, ok := c.reduces[e]; ok {
			return f, nil
		}
		f, err := c.reduce(e)
		if err != nil {
			return nil, err
		}
		if c.reduces == nil {
			c.reduces = map[*Reduce]scalarFn{}
		}
		c.reduces[e] = f
		return f, nil
	case nil:
		return nil, fmt.Errorf("nil expression")
	}
	return nil, fmt.Errorf("unknown expression type %T", e)
}

func (c *compiler) unary(e *Unary) (scalarFn, error) {
	x, err := c.expr(e.X)
	if err != nil {
		return nil, err
	}
	var f func(float64) float64
	switch e.Op {
	case Neg:
		return func(env []int) float64 { return -x(env) }, nil
	case Not:
		return func(env []int) float64 { return b2f(x(env) == 0) }, nil
	case Exp:
		f = math.Exp
	case Log:
		f = math.Log
	case Sqrt:
		f = math.Sqrt
	case Rsqrt:
		return func(env []int) float64 { return 1 / math.Sqrt(x(env)) }, nil
	case Tanh:
		f = math.Tanh
	case Sigmoid:
		return func(env []int) float64 { return 1 / (1 + math.Exp(-x(env))) }, nil
	case Erf:
		f = math.Erf
	case Abs:
		f = math.Abs
	case RoundTF32:
		f = RoundTF32Value
	case Sin:
		f = math.Sin
	case Cos:
		f = math.Cos
	default:
		return nil, fmt.Errorf("unknown unary operation %d", e.Op)
	}
	return func(env []int) float64 { return f(x(env)) }, nil
}

func (c *compiler) binary(e *Binary) (scalarFn, error) {
	x, err := c.expr(e.X)
	if err != nil {
		return nil, err
	}
	y, err := c.expr(e.Y)
	if err != nil {
		return nil, err
	}
	ints := TypeOf(e.X) == I32 && TypeOf(e.Y) == I32
	switch e.Op {
	case Add:
		return func(env []int) float64 { return x(env) + y(env) }, nil
	case Sub:
		return func(env []int) float64 { return x(env) - y(env) }, nil
	case Mul:
		return func(env []int) float64 { return x(env) * y(env) }, nil
	case Div:
		if ints {
			return func(env []int) float64 {
				a, b := int(x(env)), int(y(env))
				if b == 0 {
					panic(&runtimeError{"integer division by zero"})
				}
				return float64(floorDiv(a, b))
			}, nil
		}
		return func(env []int) float64 { return x(env) / y(env) }, nil
	case Mod:
		if ints {
			return func(env []int) float64 {
				a, b := int(x(env)), int(y(env))
				if b == 0 {
					panic(&runtimeError{"integer modulo by zero"})
				}
				return float64(floorMod(a, b))
			}, nil
		}
		return func(env []int) float64 { return floatMod(x(env), y(env)) }, nil
	case Max:
		return func(env []int) float64 { return math.Max(x(env), y(env)) }, nil
	case Min:
		return func(env []int) float64 { return math.Min(x(env), y(env)) }, nil
	case Pow:
		return func(env []int) float64 { return math.Pow(x(env), y(env)) }, nil
	case Lt:
		return func(env []int) float64 { return b2f(x(env) < y(env)) }, nil
	case Le:
		return func(env []int) float64 { return b2f(x(env) <= y(env)) }, nil
	case Gt:
		return func(env []int) float64 { return b2f(x(env) > y(env)) }, nil
	case Ge:
		return func(env []int) float64 { return b2f(x(env) >= y(env)) }, nil
	case Eq:
		return func(env []int) float64 { return b2f(x(env) == y(env)) }, nil
	case Ne:
		return func(env []int) float64 { return b2f(x(env) != y(env)) }, nil
	case And:
		// Both operands are evaluated: they are loads and comparisons without
		// side effects, and a device evaluates both too.
		return func(env []int) float64 { return b2f(x(env) != 0 && y(env) != 0) }, nil
	case Or:
		return func(env []int) float64 { return b2f(x(env) != 0 || y(env) != 0) }, nil
	}
	return nil, fmt.Errorf("unknown binary operation %d", e.Op)
}

// reduce compiles a Reduce evaluated element by element.
func (c *compiler) reduce(r *Reduce) (scalarFn, error) {
	slots := make([]int, len(r.Axes))
	exts := make([]int, len(r.Axes))
	total := 1
	for i, v := range r.Axes {
		if err := c.bind(v); err != nil {
			return nil, fmt.Errorf("reduction axis: %w", err)
		}
		slots[i], exts[i] = c.slots[v], v.Extent
		total *= v.Extent
	}
	body, err := c.expr(r.Body)
	if err != nil {
		return nil, err
	}
	op, id := r.Op, r.Op.Identity()
	if op < Sum || op > Argmin {
		return nil, fmt.Errorf("unknown reduction %d", op)
	}
	if op.IsArg() {
		return argReduce(op, body, slots, exts, total), nil
	}
	if total == 0 {
		return func([]int) float64 { return id }, nil
	}
	if len(slots) == 1 {
		s, n := slots[0], exts[0]
		switch op {
		case Sum:
			return func(env []int) float64 {
				acc := 0.0
				for k := 0; k < n; k++ {
					env[s] = k
					acc += body(env)
				}
				return acc
			}, nil
		case ReduceMax:
			return func(env []int) float64 {
				acc := id
				for k := 0; k < n; k++ {
					env[s] = k
					acc = math.Max(acc, body(env))
				}
				return acc
			}, nil
		}
	}
	last := len(slots) - 1
	return func(env []int) float64 {
		for _, s := range slots {
			env[s] = 0
		}
		acc := id
		for range total {
			v := body(env)
			switch op {
			case Sum:
				acc += v
			case ReduceMax:
				acc = math.Max(acc, v)
			case ReduceMin:
				acc = math.Min(acc, v)
			case Prod:
				acc *= v
			}
			for d := last; d >= 0; d-- {
				s := slots[d]
				env[s]++
				if env[s] < exts[d] {
					break
				}
				env[s] = 0
			}
		}
		return acc
	}, nil
}

// argReduce returns the closure of an argmax or argmin: the row-major
// position over the axes of the first greatest (least) value of body. A
// NaN is never chosen over a number; the position is 0 when every value is
// NaN or there are none.
func argReduce(op ReduceOp, body scalarFn, slots, exts []int, total int) scalarFn {
	last := len(slots) - 1
	better := func(v, best float64) bool { return v > best }
	if op == Argmin {
		better = func(v, best float64) bool { return v < best }
	}
	return func(env []int) float64 {
		for _, s := range slots {
			env[s] = 0
		}
		best, at := math.NaN(), 0
		for p := range total {
			v := body(env)
			if !math.IsNaN(v) && (math.IsNaN(best) || better(v, best)) {
				best, at = v, p
			}
			for d := last; d >= 0; d-- {
				s := slots[d]
				env[s]++
				if env[s] < exts[d] {
					break
				}
				env[s] = 0
			}
		}
		return float64(at)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// floatMod returns x - y·floor(x/y), which has the sign of y.
func floatMod(x, y float64) float64 {
	m := math.Mod(x, y)
	if m != 0 && (m < 0) != (y < 0) {
		m += y
	}
	return m
}
