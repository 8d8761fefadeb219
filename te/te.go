// Package te defines the tensor-expression (TE) intermediate representation that
// the whole compiler works on, and a reference evaluator that serves as the oracle
// for every later stage.
//
// A Program is a list of tensors in definition order. Placeholders (inputs and
// params) hold data supplied at run time; compute tensors are defined by a body
// expression over their output axes, in the style of TVM's te.compute:
//
//	y[i, j] = sum[k](x[i, k] * w[k, j]) + b[j]
//
// Index expressions are quasi-affine (see Index), so dependences can be analysed
// exactly. No tensor has more than MaxElements (2^30) elements: the front
// end rejects larger shapes where they are written or inferred, and the
// evaluator checks every shape again before it allocates (CheckShape).
// Package te imports nothing else of this module.
package te

import (
	"fmt"
	"strings"
)

// DType is the storage type of a tensor element.
type DType int

// The element types. Arithmetic is carried out in at least f32 precision whatever
// the storage type.
const (
	F32 DType = iota
	F16
	BF16
	I32
	Bool
	// I64 is a 64-bit integer: the type of the kernel IR's wide index
	// arithmetic (package kir's Widen), which no tensor of a program has
	// and the language does not name.
	I64
)

var dtypeNames = [...]string{F32: "f32", F16: "f16", BF16: "bf16", I32: "i32", Bool: "bool", I64: "i64"}

// String returns the language's name for the type ("f32", "f16", ...).
func (d DType) String() string {
	if d >= 0 && int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", int(d))
}

// Size returns the number of bytes one element occupies in memory.
func (d DType) Size() int {
	switch d {
	case F16, BF16:
		return 2
	case Bool:
		return 1
	case I64:
		return 8
	default:
		return 4
	}
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == F32 || d == F16 || d == BF16 }

// ParseDType returns the DType named s, and false if s names none.
func ParseDType(s string) (DType, bool) {
	for i, n := range dtypeNames {
		if n == s {
			return DType(i), true
		}
	}
	return 0, false
}

// Span locates a piece of source text. Lines and columns are 1-based and count
// runes; End is exclusive. The zero Span means "no source location".
type Span struct {
	File      string
	Line, Col int
	EndLine   int
	EndCol    int
}

// IsValid reports whether the span carries a location.
func (s Span) IsValid() bool { return s.Line > 0 }

// String formats the span's start as file:line:col.
func (s Span) String() string {
	if !s.IsValid() {
		return s.File
	}
	return fmt.Sprintf("%s:%d:%d", s.File, s.Line, s.Col)
}

// Kind says what defines a tensor.
type Kind int

// The kinds of tensor.
const (
	Input   Kind = iota // an activation supplied by the caller
	Param               // a weight supplied by the caller (or filled from a seed)
	Compute             // defined by a body expression
)

var kindNames = [...]string{Input: "input", Param: "param", Compute: "compute"}

// String returns "input", "param" or "compute".
func (k Kind) String() string { return kindNames[k] }

// Tensor is a node of the program: a placeholder or a compute op.
//
// For a compute tensor, Axes are its output iteration variables, one per
// dimension, with Axes[d].Extent == Shape[d], and Body gives the value of the
// element at those indices. Body may contain Reduce nodes anywhere.
type Tensor struct {
	ID    int // position in Program.Tensors
	Name  string
	Kind  Kind
	DType DType
	Shape []int
	Axes  []*Var
	Body  Expr

	// Span is where the tensor was defined in the source.
	Span Span
	// Scope names where the definition came from after inlining and unrolling,
	// outermost first, for example ["layer[3]", "attention"]. Tools use it to
	// group the thousands of tensors of an unrolled model.
	Scope []string

	// Update, when set on a compute tensor, makes it an in-place update of
	// an input (buffer donation): element x of the tensor is also written
	// to the input at Update.At(x), after every read of the input in the
	// step. See Update.
	Update *Update
}

// NumElements returns the product of the tensor's dimensions.
func (t *Tensor) NumElements() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Bytes returns the tensor's size in memory.
func (t *Tensor) Bytes() int64 { return int64(t.NumElements()) * int64(t.DType.Size()) }

// TypeString formats the tensor's type as in the language, e.g. "f32[4, 8]".
func (t *Tensor) TypeString() string {
	var b strings.Builder
	b.WriteString(t.DType.String())
	b.WriteByte('[')
	for i, d := range t.Shape {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, d)
	}
	b.WriteByte(']')
	return b.String()
}

// Program is a whole model lowered to tensor expressions. Tensors are in
// definition order, which is a topological order: a body refers only to tensors
// that come before it.
type Program struct {
	Name    string
	Tensors []*Tensor
	Outputs []*Tensor
}

// Placeholders returns the program's inputs and params in definition order.
func (p *Program) Placeholders() []*Tensor {
	var ps []*Tensor
	for _, t := range p.Tensors {
		if t.Kind != Compute {
			ps = append(ps, t)
		}
	}
	return ps
}

// Lookup returns the tensor named name, or nil.
func (p *Program) Lookup(name string) *Tensor {
	for _, t := range p.Tensors {
		if t.Name == name {
			return t
		}
	}
	return nil
}
