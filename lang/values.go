package lang

import (
	"fmt"
	"strings"

	"tec/lang/syntax"
	"tec/te"
)

// Value is what a name is bound to at compile time: a number, a tensor (a
// whole tensor or a view of one), a pending element-wise expression over
// whole tensors, a list, a tuple, a type, an index variable, an element
// value (a scalar function's parameter) or poison.
type Value interface {
	// kind describes the kind of value in messages: "a number", "a list", ...
	kind() string
}

// tensorVal is a tensor of the program, or a view of one: the tensor t with
// its leading len(prefix) indices fixed. A view creates no tensor; loads
// through it prepend the fixed indices.
type tensorVal struct {
	t      *te.Tensor
	prefix []int
	shape  []int
}

func wholeTensor(t *te.Tensor) *tensorVal { return &tensorVal{t: t, shape: t.Shape} }

func (v *tensorVal) dtype() te.DType { return v.t.DType }
func (v *tensorVal) isView() bool    { return len(v.prefix) > 0 }

// typeString formats the tensor's type, e.g. "f32[4, 8]".
func (v *tensorVal) typeString() string { return typeString(v.dtype(), v.shape) }

// lazyVal is an element-wise expression over whole tensors that has not yet
// been made a tensor: checker.elemAt gives its element at an index. It becomes
// one tensor when bound to a name, passed to a function, put in a list or
// returned, so that y = relu(x * 2 + r) is a single tensor expression.
type lazyVal struct {
	shape []int
	// The element at an index is apply of the operands' elements there
	// (checker.elemAt): args are numbers, tensors and element-wise values,
	// at spans in file.
	file  string
	args  []Value
	spans []syntax.Span
	apply func(ec *elemCtx, xs []scalar) scalar
	span  syntax.Span
	// label says what made the value (gelu, add), for the name of its
	// tensor when it is materialised but not bound.
	label string
}

// listVal is a compile-time list. Lists are values: element assignment makes
// a new list.
type listVal struct{ elems []Value }

// tupleVal holds the results of a function with several results.
type tupleVal struct{ elems []Value }

// typeVal is a type written as a value: f32[B, H] in zeros(f32[B, H]).
type typeVal struct {
	dtype te.DType
	dims  []int
}

// dtypeVar is the dtype that a dtype variable of a function (T in
// fn linear(x: T[M, K], ...)) stands for in one call: a float dtype, taken
// from the first argument declared with it. T(e) converts to it, and
// T[dims] is a tensor type of it.
type dtypeVar struct {
	name string
	dt   te.DType
}

// isDTypeVarName reports whether a type name that is no dtype declares a
// dtype variable: it starts with an upper-case letter (T, DT).
func isDTypeVarName(name string) bool {
	_, isDType := dtypeNamed(name)
	return !isDType && name != "" && name[0] >= 'A' && name[0] <= 'Z'
}

// indexVar is an index variable of a tensor definition or a reduction axis.
type indexVar struct {
	v    *te.Var
	name string
	file string
	span syntax.Span
	// fixed is set for variables whose range is known when they are made (the
	// axes of a materialised element-wise expression).
	fixed bool
	uses  []directUse
	// where is the range stated by a where clause, when there is one.
	where *whereRange
}

// directUse is an access that uses an index variable alone as an index.
type directUse struct {
	size int
	what string // e.g. "dimension 0 of x"
	file string
	span syntax.Span
}

// elemVal is an element value bound to a name: a scalar function's parameter.
type elemVal struct{ s scalar }

// noneVal is the result of a function that returns nothing.
type noneVal struct{}

// poison is bound to a name whose definition failed, so that its uses are not
// reported again.
type poison struct{}

func (number) kind() string     { return "a number" }
func (*tensorVal) kind() string { return "a tensor" }
func (*lazyVal) kind() string   { return "a tensor" }
func (*listVal) kind() string   { return "a list" }
func (*tupleVal) kind() string  { return "a tuple" }
func (typeVal) kind() string    { return "a type" }
func (dtypeVar) kind() string   { return "a dtype" }
func (*indexVar) kind() string  { return "an index variable" }
func (elemVal) kind() string    { return "an element value" }
func (noneVal) kind() string    { return "nothing" }
func (poison) kind() string     { return "an invalid value" }

// describe formats a value's kind and type for messages, e.g. "a tensor
// f32[4, 8]", "a list of 3 elements", "the int 4".
func describe(v Value) string {
	switch v := v.(type) {
	case number:
		if v.isInt {
			return "the int " + v.String()
		}
		return "the float " + v.String()
	case *tensorVal:
		return "a tensor " + v.typeString()
	case *lazyVal:
		return "a tensor of shape " + shapeString(v.shape)
	case *listVal:
		return "a list of " + plural(len(v.elems), "element")
	case *tupleVal:
		return fmt.Sprintf("%d results (unpack them: a, b = ...)", len(v.elems))
	case typeVal:
		return "the type " + typeString(v.dtype, v.dims)
	case dtypeVar:
		return fmt.Sprintf("the dtype %s (%s)", v.name, v.dt)
	}
	return v.kind()
}

func typeString(dt te.DType, shape []int) string { return dt.String() + shapeString(shape) }

func shapeString(shape []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, d)
	}
	b.WriteByte(']')
	return b.String()
}

func sameShape(a, b []int) bool { return te.SameShape(a, b) }
