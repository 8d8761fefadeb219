package kir

import (
	"math"

	"tec/te"
)

// MaxResidentBlocks bounds the blocks of an all-resident grid: SMs times
// the blocks each holds, which no GPU brings near (an H100 has 132 SMs of
// at most 32 blocks). Widen assumes blockIdx.x and gridDim.x stay below it
// in such a grid.
const MaxResidentBlocks = 1 << 16

// interval is a closed range [lo, hi] of integers. Bounds are float64 so
// that products of large bounds do not wrap; they are exact within ±2^53,
// far beyond the i32 limits they are compared with.
type interval struct{ lo, hi float64 }

var (
	anyI32  = interval{math.MinInt32, math.MaxInt32}
	anyBool = interval{0, 1}
)

func (a interval) fits32() bool { return a.lo >= math.MinInt32 && a.hi <= math.MaxInt32 }

func union(a, b interval) interval { return interval{math.Min(a.lo, b.lo), math.Max(a.hi, b.hi)} }

// hull returns the smallest interval holding the values vs.
func hull(vs ...float64) interval {
	r := interval{math.Inf(1), math.Inf(-1)}
	for _, v := range vs {
		if math.IsNaN(v) {
			return interval{math.Inf(-1), math.Inf(1)}
		}
		r.lo, r.hi = math.Min(r.lo, v), math.Max(r.hi, v)
	}
	return r
}

// Widen rewrites the i32 arithmetic of every kernel of m whose values may
// leave the i32 range to i64, as the package's section on index widths
// describes. Expressions that stay within i32 are left as they are (the
// same nodes), so that a module without such arithmetic is unchanged.
func Widen(m *Module) {
	for _, k := range m.Kernels {
		w := &widener{k: k, vars: map[*Var]interval{}, assigned: map[*Var]bool{}}
		WalkStmts(k.Body, func(s Stmt) bool {
			if a, ok := s.(*Assign); ok {
				w.assigned[a.Var] = true
			}
			return true
		})
		w.stmts(k.Body)
	}
}

// widener rewrites one kernel.
type widener struct {
	k        *Kernel
	vars     map[*Var]interval // i32 and i64 variables defined so far
	assigned map[*Var]bool
}

func (w *widener) stmts(body []Stmt) {
	for _, s := range body {
		w.stmt(s)
	}
}

func (w *widener) stmt(s Stmt) {
	switch s := s.(type) {
	case *Let:
		v, r := w.expr(s.Value)
		if v.Type() == te.I64 && !w.assigned[s.Var] {
			s.Var.T = te.I64
		} else {
			v = narrow(v)
		}
		s.Value = v
		if w.assigned[s.Var] {
			r = anyI32
		}
		w.vars[s.Var] = r
	case *For:
		var lo, hi interval
		s.Lo, lo = w.narrowExpr(s.Lo)
		s.Hi, hi = w.narrowExpr(s.Hi)
		w.vars[s.Var] = interval{lo.lo, math.Max(lo.lo, hi.hi-1)}
		w.stmts(s.Body)
	case *If:
		s.Cond, _ = w.narrowExpr(s.Cond)
		w.stmts(s.Then)
		w.stmts(s.Else)
	case *Stage:
		w.stmts(s.Body)
	default:
		EditExprs(s, func(e *Expr) { *e, _ = w.narrowExpr(*e) })
	}
}

// narrowExpr rewrites e and narrows an i64 result to i32.
func (w *widener) narrowExpr(e Expr) (Expr, interval) {
	if e == nil {
		return nil, interval{}
	}
	x, r := w.expr(e)
	return narrow(x), r
}

// narrow converts an i64 expression to i32, saturating (kir's "Index
// widths"); other expressions are returned as they are.
func narrow(e Expr) Expr {
	if e != nil && e.Type() == te.I64 {
		return &Cast{To: te.I32, X: e}
	}
	return e
}

// wide converts an i32 expression to i64.
func wide(e Expr) Expr {
	switch {
	case e.Type() == te.I64:
		return e
	case isConst(e):
		return &Const{Value: e.(*Const).Value, T: te.I64}
	}
	return &Cast{To: te.I64, X: e}
}

func isConst(e Expr) bool { _, ok := e.(*Const); return ok }

// expr returns e rewritten (e itself where nothing changes) and the
// interval of its value; the interval of a float expression is unused.
func (w *widener) expr(e Expr) (Expr, interval) {
	switch e := e.(type) {
	case *Const:
		r := interval{e.Value, e.Value}
		if e.T == te.I32 && !r.fits32() {
			return &Const{Value: e.Value, T: te.I64}, r
		}
		return e, r
	case *Var:
		if r, ok := w.vars[e]; ok {
			return e, r
		}
		return e, anyI32
	case *Special:
		return e, w.special(e.Reg)
	case *Load:
		idx, _ := w.narrowExpr(e.Index)
		r := anyI32
		if e.Buf.DType == te.Bool {
			r = anyBool
		}
		if idx == e.Index {
			return e, r
		}
		return &Load{Buf: e.Buf, Index: idx}, r
	case *Unary:
		x, rx := w.expr(e.X)
		if e.Op != te.Neg && e.Op != te.Abs || !isInt(x.Type()) {
			if x == e.X {
				return e, anyI32
			}
			return &Unary{Op: e.Op, X: x}, anyI32
		}
		r := hull(-rx.lo, -rx.hi)
		if e.Op == te.Abs {
			r = hull(math.Abs(rx.lo), math.Abs(rx.hi))
			if rx.lo <= 0 && rx.hi >= 0 {
				r.lo = 0
			}
		}
		if x.Type() == te.I64 || !r.fits32() {
			return &Unary{Op: e.Op, X: wide(x)}, r
		}
		if x == e.X {
			return e, r
		}
		return &Unary{Op: e.Op, X: x}, r
	case *Binary:
		return w.binary(e)
	case *Select:
		c, _ := w.narrowExpr(e.Cond)
		t, rt := w.expr(e.Then)
		f, rf := w.expr(e.Else)
		if t.Type() == te.I64 || f.Type() == te.I64 {
			t, f = wide(t), wide(f)
		}
		r := union(rt, rf)
		if c == e.Cond && t == e.Then && f == e.Else {
			return e, r
		}
		return &Select{Cond: c, Then: t, Else: f}, r
	case *Cast:
		x, rx := w.expr(e.X)
		if x.Type() == te.I64 && e.To != te.I32 && e.To != te.F32 {
			x = narrow(x) // i64 converts to i32 and f32 alone
		}
		r := anyI32
		switch from := x.Type(); {
		case e.To == te.Bool:
			r = anyBool
		case e.To == te.I32 && from == te.Bool:
			r = anyBool
		case e.To == te.I32 && from == te.I32, e.To == te.I64:
			r = rx
		}
		if x == e.X {
			return e, r
		}
		return &Cast{To: e.To, X: x}, r
	case *Shuffle:
		x, r := w.narrowExpr(e.X)
		mask, _ := w.narrowExpr(e.Mask)
		if x == e.X && mask == e.Mask {
			return e, r
		}
		s := *e
		s.X, s.Mask = x, mask
		return &s, r
	case *Bounded:
		x, _ := w.narrowExpr(e.X)
		at, _ := w.narrowExpr(e.At)
		r := interval{0, float64(e.N - 1)}
		if x == e.X && at == e.At {
			return e, r
		}
		b := *e
		b.X, b.At = x, at
		return &b, r
	}
	return e, anyI32
}

func isInt(t te.DType) bool { return t == te.I32 || t == te.I64 }

// special returns the interval of a special register in the kernel.
func (w *widener) special(r SpecialReg) interval {
	block := float64(w.k.Block)
	if w.k.Block <= 0 {
		block = 1024
	}
	blocks := float64(w.k.Grid.Blocks)
	if w.k.Grid.Resident && (w.k.Grid.Blocks <= 0 || w.k.Grid.Blocks > MaxResidentBlocks) {
		blocks = MaxResidentBlocks
	}
	if blocks <= 0 {
		blocks = math.MaxInt32
	}
	switch r {
	case ThreadIdx:
		return interval{0, block - 1}
	case BlockDim:
		return interval{block, block}
	case BlockIdx:
		return interval{0, blocks - 1}
	case GridDim:
		return interval{1, blocks}
	}
	return anyI32
}

// binary rewrites an operation: an integer one whose operand is i64 or
// whose result may leave i32 is computed in i64.
func (w *widener) binary(e *Binary) (Expr, interval) {
	x, rx := w.expr(e.X)
	y, ry := w.expr(e.Y)
	if !isInt(x.Type()) || !isInt(y.Type()) {
		if x == e.X && y == e.Y {
			return e, anyBool
		}
		return Bin(e.Op, x, y), anyBool
	}
	r := anyBool
	arith := !e.Op.IsComparison() && !e.Op.IsLogical()
	if arith {
		r = binaryInterval(e.Op, rx, ry)
	}
	if x.Type() == te.I64 || y.Type() == te.I64 || arith && !r.fits32() {
		return Bin(e.Op, wide(x), wide(y)), r
	}
	if x == e.X && y == e.Y {
		return e, r
	}
	return Bin(e.Op, x, y), r
}

// binaryInterval bounds the integer operation x op y with te's flooring
// division and non-negative modulo.
func binaryInterval(op te.BinaryOp, x, y interval) interval {
	switch op {
	case te.Add:
		return interval{x.lo + y.lo, x.hi + y.hi}
	case te.Sub:
		return interval{x.lo - y.hi, x.hi - y.lo}
	case te.Mul:
		return hull(x.lo*y.lo, x.lo*y.hi, x.hi*y.lo, x.hi*y.hi)
	case te.Max:
		return interval{math.Max(x.lo, y.lo), math.Max(x.hi, y.hi)}
	case te.Min:
		return interval{math.Min(x.lo, y.lo), math.Min(x.hi, y.hi)}
	case te.Div:
		if y.lo > 0 { // a positive divisor: monotonic in each operand
			return hull(math.Floor(x.lo/y.lo), math.Floor(x.lo/y.hi), math.Floor(x.hi/y.lo), math.Floor(x.hi/y.hi))
		}
		// Any divisor: the quotient is at most |x| in magnitude, but
		// x / -1 negates.
		m := math.Max(math.Abs(x.lo), math.Abs(x.hi))
		return interval{-m, m}
	case te.Mod:
		// The floored modulo has the divisor's sign and is smaller than it.
		if y.lo > 0 {
			if x.lo >= 0 && x.hi < y.lo {
				return x
			}
			return interval{0, y.hi - 1}
		}
		m := math.Max(math.Abs(y.lo), math.Abs(y.hi))
		return interval{-(m - 1), m - 1}
	}
	return anyI32
}
