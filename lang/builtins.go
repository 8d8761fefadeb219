package lang

import (
	"errors"
	"math"
	"sort"

	"tec/te"
)

// BuiltinKind classifies a builtin name.
type BuiltinKind int

// The kinds of builtins.
const (
	ElemFunc    BuiltinKind = iota // an element or compile-time function
	Reduction                      // a reduction, or a two-argument element function
	DType                          // a dtype, tensor type and cast
	Constructor                    // a tensor constructor
	Constant                       // a compile-time number
)

// BuiltinDoc documents a name of the universe scope, which every file sees.
type BuiltinDoc struct {
	Name, Signature, Doc string
	Kind                 BuiltinKind
}

// Builtins returns the names of the universe scope with their
// documentation, in the order docs/language.md describes them.
func Builtins() []BuiltinDoc {
	out := make([]BuiltinDoc, len(universe.list))
	for i := range universe.list {
		out[i] = universe.list[i].documentation()
	}
	return out
}

// LookupBuiltin returns the documentation of the builtin called name, and
// whether there is one.
func LookupBuiltin(name string) (BuiltinDoc, bool) {
	b, ok := universe.byName[name]
	if !ok {
		return BuiltinDoc{}, false
	}
	return b.documentation(), true
}

// A builtin is a name of the universe scope, which every file sees behind
// its own declarations, its imports and the prelude: what a use of it
// lowers to, how it folds on compile-time numbers, and its documentation.
type builtin struct {
	name string
	kind BuiltinKind
	// signature shows the forms of a use: "max(a, b) | max[k](e)".
	signature string
	doc       string
	// arity is the number of arguments of a call name(...); 0 for a name
	// that is not called so (inf, sum[k](e)).
	arity int
	lower lowering
	// fold applies name(...) to compile-time numbers; nil for a builtin
	// that is not arithmetic on numbers.
	fold foldFunc
}

func (b *builtin) documentation() BuiltinDoc {
	return BuiltinDoc{Name: b.name, Signature: b.signature, Doc: b.doc, Kind: b.kind}
}

// A foldFunc applies a builtin to as many compile-time numbers as its
// arity says.
type foldFunc func(args []number) (number, error)

// A lowerForm says what a use of a builtin becomes.
type lowerForm int

const (
	lowerUnary    lowerForm = iota + 1 // name(x) is a te.Unary
	lowerBinary                        // name(a, b) is a te.Binary
	lowerCast                          // name(x) is a te.Cast; the name is also a dtype
	lowerSelect                        // select(c, a, b) is a te.Select
	lowerReduce                        // only name[axes](e), a te.Reduce
	lowerConvert                       // name(x) is a compile-time number, folded
	lowerLen                           // len(xs) is the length of a compile-time list
	lowerFill                          // name(type, ...) is a constant tensor
	lowerStack                         // stack(xs) is a tensor of the list's tensors
	lowerConstant                      // the name is a compile-time number
)

// A lowering says what a use of a builtin becomes in the tensor-expression
// program. The field that its form names holds the TE op.
type lowering struct {
	form   lowerForm
	unary  te.UnaryOp  // of lowerUnary
	binary te.BinaryOp // of lowerBinary
	dtype  te.DType    // of lowerCast
	value  number      // of lowerConstant
	// reduces says that name[axes](e) is a te.Reduce by reduce.
	reduces bool
	reduce  te.ReduceOp
}

func unaryOp(op te.UnaryOp) lowering   { return lowering{form: lowerUnary, unary: op} }
func binaryOp(op te.BinaryOp) lowering { return lowering{form: lowerBinary, binary: op} }
func castTo(dt te.DType) lowering      { return lowering{form: lowerCast, dtype: dt} }
func constant(v number) lowering       { return lowering{form: lowerConstant, value: v} }

// reduction is the lowering of a name used only as name[axes](e).
func reduction(op te.ReduceOp) lowering {
	return lowering{form: lowerReduce, reduces: true, reduce: op}
}

// binaryOrReduction is the lowering of a name that is both a two-argument
// element function and a reduction: max(a, b) and max[k](e).
func binaryOrReduction(op te.BinaryOp, r te.ReduceOp) lowering {
	return lowering{form: lowerBinary, binary: op, reduces: true, reduce: r}
}

// builtinTable returns every builtin, in the order docs/language.md
// describes them.
func builtinTable() []builtin {
	return []builtin{
		{name: "exp", kind: ElemFunc, arity: 1, lower: unaryOp(te.Exp), fold: floatFunc(math.Exp),
			signature: "exp(x)", doc: "e to the power x, element-wise; also a compile-time function"},
		{name: "log", kind: ElemFunc, arity: 1, lower: unaryOp(te.Log), fold: floatFunc(math.Log),
			signature: "log(x)", doc: "natural logarithm, element-wise; also a compile-time function"},
		{name: "sqrt", kind: ElemFunc, arity: 1, lower: unaryOp(te.Sqrt), fold: floatFunc(math.Sqrt),
			signature: "sqrt(x)", doc: "square root, element-wise; also a compile-time function"},
		{name: "rsqrt", kind: ElemFunc, arity: 1, lower: unaryOp(te.Rsqrt), fold: floatFunc(func(v float64) float64 { return 1 / math.Sqrt(v) }),
			signature: "rsqrt(x)", doc: "1 / sqrt(x), element-wise; also a compile-time function"},
		{name: "tanh", kind: ElemFunc, arity: 1, lower: unaryOp(te.Tanh), fold: floatFunc(math.Tanh),
			signature: "tanh(x)", doc: "hyperbolic tangent, element-wise"},
		{name: "sigmoid", kind: ElemFunc, arity: 1, lower: unaryOp(te.Sigmoid), fold: floatFunc(func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }),
			signature: "sigmoid(x)", doc: "1 / (1 + exp(-x)), element-wise"},
		{name: "erf", kind: ElemFunc, arity: 1, lower: unaryOp(te.Erf), fold: floatFunc(math.Erf),
			signature: "erf(x)", doc: "the error function, element-wise"},
		{name: "sin", kind: ElemFunc, arity: 1, lower: unaryOp(te.Sin), fold: floatFunc(math.Sin),
			signature: "sin(x)", doc: "sine of an angle in radians, element-wise; also a compile-time function"},
		{name: "cos", kind: ElemFunc, arity: 1, lower: unaryOp(te.Cos), fold: floatFunc(math.Cos),
			signature: "cos(x)", doc: "cosine of an angle in radians, element-wise; also a compile-time function"},
		{name: "abs", kind: ElemFunc, arity: 1, lower: unaryOp(te.Abs), fold: foldAbs,
			signature: "abs(x)", doc: "absolute value, element-wise; also a compile-time function"},
		{name: "pow", kind: ElemFunc, arity: 2, lower: binaryOp(te.Pow), fold: foldPow,
			signature: "pow(a, b)", doc: "a to the power b, element-wise; also a compile-time function"},
		{name: "max", kind: Reduction, arity: 2, lower: binaryOrReduction(te.Max, te.ReduceMax), fold: foldPick(false, math.Max),
			signature: "max(a, b) | max[k](e)", doc: "the larger of two values, or with axes the maximum of e over them (a reduction)"},
		{name: "min", kind: Reduction, arity: 2, lower: binaryOrReduction(te.Min, te.ReduceMin), fold: foldPick(true, math.Min),
			signature: "min(a, b) | min[k](e)", doc: "the smaller of two values, or with axes the minimum of e over them (a reduction)"},
		{name: "sum", kind: Reduction, lower: reduction(te.Sum),
			signature: "sum[k, ...](e)", doc: "the sum of e over every value of the fresh axes (a reduction)"},
		{name: "prod", kind: Reduction, lower: reduction(te.Prod),
			signature: "prod[k, ...](e)", doc: "the product of e over every value of the fresh axes (a reduction)"},
		{name: "argmax", kind: Reduction, lower: reduction(te.Argmax),
			signature: "argmax[k, ...](e)", doc: "the i32 position (row-major over the axes) of the first greatest value of e; NaN is never chosen"},
		{name: "argmin", kind: Reduction, lower: reduction(te.Argmin),
			signature: "argmin[k, ...](e)", doc: "the i32 position (row-major over the axes) of the first least value of e; NaN is never chosen"},
		{name: "select", kind: ElemFunc, arity: 3, lower: lowering{form: lowerSelect},
			signature: "select(c, a, b)", doc: "a where c holds, else b; only the chosen branch is evaluated, and c narrows the ranges checked in each branch"},
		{name: "f32", kind: DType, arity: 1, lower: castTo(te.F32), fold: foldCast(te.F32),
			signature: "f32 | f32[dims] | f32(e)", doc: "32-bit float: a dtype, a tensor type, or a cast"},
		{name: "f16", kind: DType, arity: 1, lower: castTo(te.F16), fold: foldCast(te.F16),
			signature: "f16 | f16[dims] | f16(e)", doc: "16-bit float: a dtype, a tensor type, or a cast (the tensor is stored as f16)"},
		{name: "bf16", kind: DType, arity: 1, lower: castTo(te.BF16), fold: foldCast(te.BF16),
			signature: "bf16 | bf16[dims] | bf16(e)", doc: "bfloat16: a dtype, a tensor type, or a cast"},
		{name: "i32", kind: DType, arity: 1, lower: castTo(te.I32), fold: foldCast(te.I32),
			signature: "i32 | i32[dims] | i32(e)", doc: "32-bit integer: a dtype, a tensor type, or a cast (truncates towards zero)"},
		{name: "bool", kind: DType, arity: 1, lower: castTo(te.Bool), fold: foldCast(te.Bool),
			signature: "bool | bool[dims] | bool(e)", doc: "boolean: a dtype, a tensor type, or a cast"},
		{name: "int", kind: ElemFunc, arity: 1, lower: lowering{form: lowerConvert}, fold: foldInt,
			signature: "int(x)", doc: "a compile-time number truncated towards zero; as a parameter type, a compile-time int"},
		// float(x) folds as f32(x) does: it leaves a number exact.
		{name: "float", kind: ElemFunc, arity: 1, lower: lowering{form: lowerConvert}, fold: foldCast(te.F32),
			signature: "float(x)", doc: "a compile-time number as a float; as a parameter type, a compile-time number"},
		{name: "len", kind: ElemFunc, arity: 1, lower: lowering{form: lowerLen},
			signature: "len(xs)", doc: "the length of a compile-time list"},
		{name: "inf", kind: Constant, lower: constant(floatNum(math.Inf(1))),
			signature: "inf", doc: "positive infinity, a compile-time float; -inf is the identity of max (select(c, x, -inf))"},
		{name: "zeros", kind: Constructor, arity: 1, lower: lowering{form: lowerFill},
			signature: "zeros(f32[dims])", doc: "a constant tensor of zeros, stored in the type given"},
		{name: "ones", kind: Constructor, arity: 1, lower: lowering{form: lowerFill},
			signature: "ones(f32[dims])", doc: "a constant tensor of ones, stored in the type given"},
		{name: "full", kind: Constructor, arity: 2, lower: lowering{form: lowerFill},
			signature: "full(f32[dims], v)", doc: "a constant tensor filled with v, stored in the type given"},
		{name: "stack", kind: Constructor, arity: 1, lower: lowering{form: lowerStack},
			signature: "stack(xs)", doc: "a tensor of shape [len(xs), ...] from a list of equal-shaped tensors"},
	}
}

// builtinSet is the table of builtins with an index by name.
type builtinSet struct {
	list   []builtin // in the order of builtinTable
	byName map[string]*builtin
	names  []string // sorted, for did-you-mean suggestions
}

// universe holds the builtins. It is made once, at initialisation, and
// never written after.
var universe = newBuiltinSet(builtinTable())

func newBuiltinSet(list []builtin) *builtinSet {
	s := &builtinSet{list: list, byName: make(map[string]*builtin, len(list))}
	for i := range list {
		s.byName[list[i].name] = &list[i]
		s.names = append(s.names, list[i].name)
	}
	sort.Strings(s.names)
	return s
}

// lookupBuiltin returns the builtin called name, or nil.
func lookupBuiltin(name string) *builtin { return universe.byName[name] }

// builtinNames returns the names of the builtins, sorted. The caller must
// not modify the slice.
func builtinNames() []string { return universe.names }

// dtypeNamed returns the dtype that name stands for as a builtin.
func dtypeNamed(name string) (te.DType, bool) {
	if b := lookupBuiltin(name); b != nil && b.lower.form == lowerCast {
		return b.lower.dtype, true
	}
	return 0, false
}

// Constant folding. A cast of a number applies the cast's rounding, as it
// would at run time: f16(0.3) is 0.300048828125 and bf16(0.3) 0.30078125.
// (f32 and float leave numbers exact, as arithmetic is carried out in f32 or
// wider.)

// floatFunc folds a function of one float.
func floatFunc(f func(float64) float64) foldFunc {
	return func(args []number) (number, error) { return floatNum(f(args[0].float())), nil }
}

// foldCast folds a cast to dt.
func foldCast(dt te.DType) foldFunc {
	return func(args []number) (number, error) {
		v := args[0].float()
		switch dt {
		case te.I32:
			// As the cast computes at run time (te.Round): truncation
			// towards zero, saturation to the i32 range, NaN as 0.
			return intNum(int(te.Round(te.I32, v))), nil
		case te.F16, te.BF16:
			return floatNum(te.Round(dt, v)), nil
		case te.Bool:
			return boolNum(v != 0), nil
		}
		return floatNum(v), nil
	}
}

// foldPick folds min (less) or max: of two ints the one picked, else f of
// the floats.
func foldPick(less bool, f func(a, b float64) float64) foldFunc {
	return func(args []number) (number, error) {
		x, y := args[0], args[1]
		if x.isInt && y.isInt {
			if less == (x.i < y.i) {
				return x, nil
			}
			return y, nil
		}
		return floatNum(f(x.float(), y.float())), nil
	}
}

func foldAbs(args []number) (number, error) {
	x := args[0]
	switch {
	case !x.isInt:
		return floatNum(math.Abs(x.float())), nil
	case x.i < 0:
		return foldNeg(x)
	}
	return x, nil
}

// foldPow folds pow(a, b) and a ** b: exact for ints with b >= 0.
func foldPow(args []number) (number, error) {
	x, y := args[0], args[1]
	if !x.isInt || !y.isInt || y.i < 0 {
		return floatNum(math.Pow(x.float(), y.float())), nil
	}
	r := intNum(1)
	for k := 0; k < y.i; k++ {
		var err error
		if r, err = foldBinary("*", r, x); err != nil {
			return number{}, err
		}
		if r.i == 0 || r.i == 1 {
			break
		}
	}
	return r, nil
}

func foldInt(args []number) (number, error) {
	x := args[0]
	if x.isInt {
		return x, nil
	}
	v := x.float()
	if math.IsNaN(v) || v >= 1<<62 || v <= -(1<<62) {
		return number{}, errors.New("the value " + x.String() + " does not fit in an int")
	}
	return intNum(int(v)), nil
}
