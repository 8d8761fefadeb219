package te

import (
	"math"
	"sync/atomic"
)

// Expr is a scalar expression: the body of a compute tensor. The concrete types
// are *ConstExpr, *IndexExpr, *Load, *Unary, *Binary, *Select, *Cast and *Reduce.
//
// Every expression has a type (see TypeOf): arithmetic is carried out in f32 or
// wider, comparisons and logic give bool, index values are i32.
//
// Expressions are immutable once built: TypeOf records the type of a
// Unary, Binary, Select or Reduce in the node, so that typing every node of
// an expression takes time linear in its size (x + x + ... + x typed node by
// node was quadratic). Build a new node rather than change an operand of one
// that may have been typed.
type Expr interface {
	exprNode()
}

// ConstExpr is a literal number of the given type.
type ConstExpr struct {
	Value float64
	DType DType
}

// IndexExpr uses an index expression as a value (type i32), e.g. in
// select(i < j, ...) or iota-like tensors.
type IndexExpr struct {
	Index Index
}

// Load reads one element of a tensor. len(Index) == len(Tensor.Shape), and every
// index is proven in bounds by the front end, or lies under a Select whose
// condition guarantees it.
//
// A gather (wte[ids[s], d]) reads a dimension at an index known only at run
// time: Gather, when not nil, has one entry per dimension, and where
// Gather[d] is not nil the index of dimension d is the value of the i32
// expression Gather[d] (typically a load of an integer tensor) plus
// Index[d]. Nothing proves such an index in bounds: the reference
// evaluator and the simulator report an index outside the dimension as an
// error, and a device clamps it into the dimension and records it in the
// module's error word (see docs/language.md, "Gather").
type Load struct {
	Tensor *Tensor
	Index  []Index
	Gather []Expr
}

// IsGather reports whether some dimension of l is read at a run-time index.
func (l *Load) IsGather() bool {
	for _, g := range l.Gather {
		if g != nil {
			return true
		}
	}
	return false
}

// IndexBounds returns the least and greatest index of dimension d that l
// may read when each variable ranges over [0, Extent), within the
// dimension: the whole dimension where the index is known only at run time.
func (l *Load) IndexBounds(d int) (lo, hi int) {
	n := l.Tensor.Shape[d]
	if l.Gathered(d) != nil {
		return 0, n - 1
	}
	lo, hi = l.Index[d].Simplify().ExtentBounds()
	return max(lo, 0), min(hi, n-1)
}

// Gathered returns the run-time part of dimension d's index, or nil when
// the dimension's index is Index[d] alone.
func (l *Load) Gathered(d int) Expr {
	if d < len(l.Gather) {
		return l.Gather[d]
	}
	return nil
}

// UnaryOp is an element-wise function of one argument.
type UnaryOp int

// The unary operations.
const (
	Neg UnaryOp = iota
	Not
	Exp
	Log
	Sqrt
	Rsqrt
	Tanh
	Sigmoid
	Erf
	Abs
	// RoundTF32 rounds an f32 value to TF32 precision (10 fraction bits,
	// f32's exponent range) to nearest, ties away from zero, as PTX's
	// cvt.rna.tf32.f32 does. The precision pass puts it around the
	// operands of contractions under --precision tf32; the language has no
	// spelling for it.
	RoundTF32
	// Sin and Cos are the sine and cosine of an angle in radians.
	Sin
	Cos
)

var unaryNames = [...]string{Neg: "neg", Not: "!", Exp: "exp", Log: "log", Sqrt: "sqrt",
	Rsqrt: "rsqrt", Tanh: "tanh", Sigmoid: "sigmoid", Erf: "erf", Abs: "abs", RoundTF32: "round_tf32",
	Sin: "sin", Cos: "cos"}

// String returns the operation's name in the language.
func (op UnaryOp) String() string { return unaryNames[op] }

// Unary applies an element-wise function.
type Unary struct {
	Op  UnaryOp
	X   Expr
	typ typeCache
}

// BinaryOp is an element-wise function of two arguments.
type BinaryOp int

// The binary operations. Div on i32 operands rounds towards negative infinity
// and Mod is never negative, as in index arithmetic.
const (
	Add BinaryOp = iota
	Sub
	Mul
	Div
	Mod
	Max
	Min
	Pow
	Lt
	Le
	Gt
	Ge
	Eq
	Ne
	And
	Or
)

var binaryNames = [...]string{Add: "+", Sub: "-", Mul: "*", Div: "/", Mod: "%", Max: "max", Min: "min",
	Pow: "pow", Lt: "<", Le: "<=", Gt: ">", Ge: ">=", Eq: "==", Ne: "!=", And: "&&", Or: "||"}

// String returns the operator or function name in the language.
func (op BinaryOp) String() string { return binaryNames[op] }

// IsComparison reports whether op compares its operands and yields bool.
func (op BinaryOp) IsComparison() bool { return op >= Lt && op <= Ne }

// IsLogical reports whether op is && or ||.
func (op BinaryOp) IsLogical() bool { return op == And || op == Or }

// Binary applies an element-wise function of two arguments.
type Binary struct {
	Op   BinaryOp
	X, Y Expr
	typ  typeCache
}

// Select is Then where Cond holds and Else elsewhere. Only the chosen branch is
// evaluated, so a branch may hold a load that is in bounds only where its
// condition says so (padding).
type Select struct {
	Cond, Then, Else Expr
	typ              typeCache
}

// Cast converts X to type To (rounding to the storage precision of To).
type Cast struct {
	To DType
	X  Expr
}

// ReduceOp is a reduction.
type ReduceOp int

// The reductions.
const (
	Sum ReduceOp = iota
	ReduceMax
	ReduceMin
	Prod
	// Argmax and Argmin yield the i32 position of the first greatest
	// (least) value of the body over the axes, counted row-major over the
	// axes; a NaN is never chosen over a number.
	Argmax
	Argmin
)

var reduceNames = [...]string{Sum: "sum", ReduceMax: "max", ReduceMin: "min", Prod: "prod", Argmax: "argmax", Argmin: "argmin"}

// IsArg reports whether op yields a position (argmax, argmin) rather than a
// value.
func (op ReduceOp) IsArg() bool { return op == Argmax || op == Argmin }

// ValueOp returns the reduction that combines the values an argmax or
// argmin compares (max, min); op itself for the others.
func (op ReduceOp) ValueOp() ReduceOp {
	switch op {
	case Argmax:
		return ReduceMax
	case Argmin:
		return ReduceMin
	}
	return op
}

// String returns the reduction's name in the language.
func (op ReduceOp) String() string { return reduceNames[op] }

// Identity returns the reduction's neutral element; for argmax and argmin,
// that of the values they compare.
func (op ReduceOp) Identity() float64 {
	switch op.ValueOp() {
	case ReduceMax:
		return math.Inf(-1)
	case ReduceMin:
		return math.Inf(1)
	case Prod:
		return 1
	default:
		return 0
	}
}

// Reduce combines Body over every point of its axes (accumulating in f32 or
// wider). Each axis is a fresh Var used only inside Body.
type Reduce struct {
	Op   ReduceOp
	Axes []*Var
	Body Expr
	typ  typeCache
}

func (*ConstExpr) exprNode() {}
func (*IndexExpr) exprNode() {}
func (*Load) exprNode()      {}
func (*Unary) exprNode()     {}
func (*Binary) exprNode()    {}
func (*Select) exprNode()    {}
func (*Cast) exprNode()      {}
func (*Reduce) exprNode()    {}

// TypeOf returns the type of an expression's value: Bool for comparisons, logic
// and Not; I32 for index values and for arithmetic on I32 operands only; the
// target of a Cast; otherwise F32 (the computation type of every float storage
// type).
//
// The type of a node whose type depends on its operands' is computed once
// and kept in the node (see Expr), so TypeOf takes constant time on a node
// typed before, and linear time in the nodes not yet typed.
func TypeOf(e Expr) DType {
	switch e := e.(type) {
	case *Unary:
		return e.typ.of(e)
	case *Binary:
		return e.typ.of(e)
	case *Select:
		return e.typ.of(e)
	case *Reduce:
		return e.typ.of(e)
	}
	return NodeType(e, TypeOf)
}

// typeCache holds the type of the expression node it is part of once
// TypeOf has computed it: 0 while unknown, else the DType plus one. It is
// read and written atomically, as expressions are typed from several
// goroutines at once.
type typeCache struct{ v uint32 }

// of returns the type of e, the node that holds c, computing it once.
func (c *typeCache) of(e Expr) DType {
	if v := atomic.LoadUint32(&c.v); v != 0 {
		return DType(v - 1)
	}
	t := NodeType(e, TypeOf)
	atomic.StoreUint32(&c.v, uint32(t)+1)
	return t
}

// NodeType returns the type of e as TypeOf does, taking its operands' types
// from operand instead of descending into them. A builder that knows the
// types of the operands it combines types each node in constant time, and a
// whole expression in linear time.
func NodeType(e Expr, operand func(Expr) DType) DType {
	switch e := e.(type) {
	case *ConstExpr:
		if e.DType.IsFloat() {
			return F32
		}
		return e.DType
	case *IndexExpr:
		return I32
	case *Load:
		if e.Tensor.DType.IsFloat() {
			return F32
		}
		return e.Tensor.DType
	case *Unary:
		switch e.Op {
		case Not:
			return Bool
		case Neg, Abs:
			return operand(e.X)
		}
		return F32
	case *Binary:
		if e.Op.IsComparison() || e.Op.IsLogical() {
			return Bool
		}
		x, y := operand(e.X), operand(e.Y)
		if x == I32 && y == I32 && e.Op != Pow {
			return I32
		}
		return F32
	case *Select:
		t, f := operand(e.Then), operand(e.Else)
		if t == f {
			return t
		}
		return F32
	case *Cast:
		if e.To.IsFloat() {
			return F32
		}
		return e.To
	case *Reduce:
		if t := operand(e.Body); t == I32 || e.Op.IsArg() {
			return I32
		}
		return F32
	}
	return F32
}

// Walk calls f for e and every sub-expression of e, parents before children.
// If f returns false the children of that node are skipped. The run-time
// indexes of a gather (Load.Gather) are children of its load.
func Walk(e Expr, f func(Expr) bool) {
	if !f(e) {
		return
	}
	switch e := e.(type) {
	case *Load:
		for _, g := range e.Gather {
			if g != nil {
				Walk(g, f)
			}
		}
	case *Unary:
		Walk(e.X, f)
	case *Binary:
		Walk(e.X, f)
		Walk(e.Y, f)
	case *Select:
		Walk(e.Cond, f)
		Walk(e.Then, f)
		Walk(e.Else, f)
	case *Cast:
		Walk(e.X, f)
	case *Reduce:
		Walk(e.Body, f)
	}
}

// Inputs returns the distinct tensors that e loads, in order of first load.
func Inputs(e Expr) []*Tensor {
	var ts []*Tensor
	seen := map[*Tensor]bool{}
	Walk(e, func(x Expr) bool {
		if l, ok := x.(*Load); ok && !seen[l.Tensor] {
			seen[l.Tensor] = true
			ts = append(ts, l.Tensor)
		}
		return true
	})
	return ts
}

// HasLoad reports whether e loads an element of a tensor (a gather's
// index included), so that its value is known only at run time.
func HasLoad(e Expr) bool {
	return Contains(e, func(x Expr) bool {
		_, ok := x.(*Load)
		return ok
	})
}

// LoadsInBounds reports whether every load of e is in bounds for every value
// of the variables its indexes use (each in [0, Extent)), so that e may be
// evaluated even where a select would not choose it.
func LoadsInBounds(e Expr) bool {
	ok := true
	Walk(e, func(x Expr) bool {
		if l, isLoad := x.(*Load); isLoad {
			if l.IsGather() {
				// A run-time index is never proven in bounds: evaluated
				// where a select would not choose it, it could raise the
				// error of an index out of range that the program guards.
				ok = false
				return false
			}
			for d, ix := range l.Index {
				lo, hi := ix.Simplify().ExtentBounds()
				if lo < 0 || hi >= l.Tensor.Shape[d] {
					ok = false
				}
			}
		}
		return ok
	})
	return ok
}

// UsedVars returns every variable that e uses in an index, of a load or as a
// value, after Simplify has removed trivial div and mod atoms.
func UsedVars(e Expr) map[*Var]bool {
	used := map[*Var]bool{}
	mark := func(x Index) {
		for _, v := range x.Simplify().Vars() {
			used[v] = true
		}
	}
	Walk(e, func(x Expr) bool {
		switch x := x.(type) {
		case *Load:
			for _, ix := range x.Index {
				mark(ix)
			}
		case *IndexExpr:
			mark(x.Index)
		}
		return true
	})
	return used
}
