package lang

import (
	"sort"
	"strings"

	"tec/lang/syntax"
)

// FuncDoc documents a function of the standard library.
type FuncDoc struct {
	Name string
	// Signature is the declaration's header as written, without "fn":
	// "softmax(x: f32[M, N]) -> f32[M, N]" or "relu(v)" for a scalar
	// function.
	Signature string
	// Doc is the comment directly above the declaration, without the '#'s.
	Doc string
	// File and Line locate the declaration: "stdlib/norm.te", 1-based.
	File string
	Line int
	// Source is the declaration's text, from "fn" to its end.
	Source string
}

// Summary returns the first line of the doc comment, or "".
func (d FuncDoc) Summary() string {
	first, _, _ := strings.Cut(d.Doc, "\n")
	return first
}

// StdlibFuncs returns the functions of the standard library sorted by name.
func StdlibFuncs() []FuncDoc {
	var out []FuncDoc
	for _, pf := range parsedPrelude() {
		if pf.err != nil {
			continue // the stdlib tests keep every file parsing
		}
		for _, d := range pf.ast.Decls {
			if fd, ok := d.(*syntax.FnDecl); ok {
				out = append(out, funcDoc(pf.name, pf.src, pf.ast, fd))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func funcDoc(file string, src []byte, f *syntax.File, fd *syntax.FnDecl) FuncDoc {
	text := func(s syntax.Span) string {
		return strings.Join(strings.Fields(string(src[s.Start.Offset:s.End.Offset])), " ")
	}
	var params, results []string
	for _, p := range fd.Params {
		params = append(params, text(p.Span))
	}
	for _, r := range fd.Results {
		results = append(results, text(r.Span))
	}
	sig := fd.Name.Name + "(" + strings.Join(params, ", ") + ")"
	switch len(results) {
	case 0:
	case 1:
		sig += " -> " + results[0]
	default:
		sig += " -> (" + strings.Join(results, ", ") + ")"
	}
	return FuncDoc{
		Name:      fd.Name.Name,
		Signature: sig,
		Doc:       leadingComment(f.Comments, fd.Span.Start.Line),
		File:      file,
		Line:      fd.Span.Start.Line,
		Source:    string(src[fd.Span.Start.Offset:fd.Span.End.Offset]),
	}
}

// leadingComment returns the text of the comments that fill the lines
// directly above line, without their '#' and one following space.
func leadingComment(comments []syntax.Comment, line int) string {
	var lines []string
	want := line - 1
	for i := len(comments) - 1; i >= 0 && want > 0; i-- {
		c := comments[i]
		if c.Span.Start.Line > want {
			continue
		}
		if c.Span.Start.Line < want || c.Span.Start.Col != 1 {
			break
		}
		t := strings.TrimPrefix(c.Text, "#")
		lines = append(lines, strings.TrimPrefix(t, " "))
		want--
	}
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	return strings.Join(lines, "\n")
}

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
// documentation, as docs/language.md describes them.
func Builtins() []BuiltinDoc {
	return []BuiltinDoc{
		{"exp", "exp(x)", "e to the power x, element-wise; also a compile-time function", ElemFunc},
		{"log", "log(x)", "natural logarithm, element-wise; also a compile-time function", ElemFunc},
		{"sqrt", "sqrt(x)", "square root, element-wise; also a compile-time function", ElemFunc},
		{"rsqrt", "rsqrt(x)", "1 / sqrt(x), element-wise; also a compile-time function", ElemFunc},
		{"tanh", "tanh(x)", "hyperbolic tangent, element-wise", ElemFunc},
		{"sigmoid", "sigmoid(x)", "1 / (1 + exp(-x)), element-wise", ElemFunc},
		{"erf", "erf(x)", "the error function, element-wise", ElemFunc},
		{"sin", "sin(x)", "sine of an angle in radians, element-wise; also a compile-time function", ElemFunc},
		{"cos", "cos(x)", "cosine of an angle in radians, element-wise; also a compile-time function", ElemFunc},
		{"abs", "abs(x)", "absolute value, element-wise; also a compile-time function", ElemFunc},
		{"pow", "pow(a, b)", "a to the power b, element-wise; also a compile-time function", ElemFunc},
		{"max", "max(a, b) | max[k](e)", "the larger of two values, or with axes the maximum of e over them (a reduction)", Reduction},
		{"min", "min(a, b) | min[k](e)", "the smaller of two values, or with axes the minimum of e over them (a reduction)", Reduction},
		{"sum", "sum[k, ...](e)", "the sum of e over every value of the fresh axes (a reduction)", Reduction},
		{"prod", "prod[k, ...](e)", "the product of e over every value of the fresh axes (a reduction)", Reduction},
		{"argmax", "argmax[k, ...](e)", "the i32 position (row-major over the axes) of the first greatest value of e; NaN is never chosen", Reduction},
		{"argmin", "argmin[k, ...](e)", "the i32 position (row-major over the axes) of the first least value of e; NaN is never chosen", Reduction},
		{"select", "select(c, a, b)", "a where c holds, else b; only the chosen branch is evaluated, and c narrows the ranges checked in each branch", ElemFunc},
		{"f32", "f32 | f32[dims] | f32(e)", "32-bit float: a dtype, a tensor type, or a cast", DType},
		{"f16", "f16 | f16[dims] | f16(e)", "16-bit float: a dtype, a tensor type, or a cast (the tensor is stored as f16)", DType},
		{"bf16", "bf16 | bf16[dims] | bf16(e)", "bfloat16: a dtype, a tensor type, or a cast", DType},
		{"i32", "i32 | i32[dims] | i32(e)", "32-bit integer: a dtype, a tensor type, or a cast (truncates towards zero)", DType},
		{"bool", "bool | bool[dims] | bool(e)", "boolean: a dtype, a tensor type, or a cast", DType},
		{"int", "int(x)", "a compile-time number truncated towards zero; as a parameter type, a compile-time int", ElemFunc},
		{"float", "float(x)", "a compile-time number as a float; as a parameter type, a compile-time number", ElemFunc},
		{"len", "len(xs)", "the length of a compile-time list", ElemFunc},
		{"inf", "inf", "positive infinity, a compile-time float; -inf is the identity of max (select(c, x, -inf))", Constant},
		{"zeros", "zeros(f32[dims])", "a constant tensor of zeros, stored in the type given", Constructor},
		{"ones", "ones(f32[dims])", "a constant tensor of ones, stored in the type given", Constructor},
		{"full", "full(f32[dims], v)", "a constant tensor filled with v, stored in the type given", Constructor},
		{"stack", "stack(xs)", "a tensor of shape [len(xs), ...] from a list of equal-shaped tensors", Constructor},
	}
}
