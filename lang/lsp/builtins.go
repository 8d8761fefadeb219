package lsp

// builtin describes a name of the language's universe scope, for hover and
// completion.
type builtin struct {
	name, signature, doc string
	kind                 builtinKind
}

type builtinKind int

const (
	elemFunc builtinKind = iota // an element or compile-time function
	reduction
	dtype
	constructor
)

// builtins returns the builtin names with their documentation, from
// docs/language.md.
func builtins() []builtin {
	return []builtin{
		{"exp", "exp(x)", "e to the power x, element-wise; also a compile-time function", elemFunc},
		{"log", "log(x)", "natural logarithm, element-wise; also a compile-time function", elemFunc},
		{"sqrt", "sqrt(x)", "square root, element-wise; also a compile-time function", elemFunc},
		{"rsqrt", "rsqrt(x)", "1 / sqrt(x), element-wise; also a compile-time function", elemFunc},
		{"tanh", "tanh(x)", "hyperbolic tangent, element-wise", elemFunc},
		{"sigmoid", "sigmoid(x)", "1 / (1 + exp(-x)), element-wise", elemFunc},
		{"erf", "erf(x)", "the error function, element-wise", elemFunc},
		{"abs", "abs(x)", "absolute value, element-wise; also a compile-time function", elemFunc},
		{"pow", "pow(a, b)", "a to the power b, element-wise; also a compile-time function", elemFunc},
		{"max", "max(a, b) | max[k](e)", "the larger of two values, or with axes the maximum of e over them (a reduction)", reduction},
		{"min", "min(a, b) | min[k](e)", "the smaller of two values, or with axes the minimum of e over them (a reduction)", reduction},
		{"sum", "sum[k, ...](e)", "the sum of e over every value of the fresh axes (a reduction)", reduction},
		{"prod", "prod[k, ...](e)", "the product of e over every value of the fresh axes (a reduction)", reduction},
		{"select", "select(c, a, b)", "a where c holds, else b; only the chosen branch is evaluated, and c narrows the ranges checked in each branch", elemFunc},
		{"f32", "f32 | f32[dims] | f32(e)", "32-bit float: a dtype, a tensor type, or a cast", dtype},
		{"f16", "f16 | f16[dims] | f16(e)", "16-bit float: a dtype, a tensor type, or a cast (the tensor is stored as f16)", dtype},
		{"bf16", "bf16 | bf16[dims] | bf16(e)", "bfloat16: a dtype, a tensor type, or a cast", dtype},
		{"i32", "i32 | i32[dims] | i32(e)", "32-bit integer: a dtype, a tensor type, or a cast (truncates towards zero)", dtype},
		{"bool", "bool | bool[dims] | bool(e)", "boolean: a dtype, a tensor type, or a cast", dtype},
		{"int", "int(x)", "a compile-time number truncated towards zero; as a parameter type, a compile-time int", elemFunc},
		{"float", "float(x)", "a compile-time number as a float; as a parameter type, a compile-time number", elemFunc},
		{"len", "len(xs)", "the length of a compile-time list", elemFunc},
		{"zeros", "zeros(f32[dims])", "a constant tensor of zeros, stored in the type given", constructor},
		{"ones", "ones(f32[dims])", "a constant tensor of ones, stored in the type given", constructor},
		{"full", "full(f32[dims], v)", "a constant tensor filled with v, stored in the type given", constructor},
		{"stack", "stack(xs)", "a tensor of shape [len(xs), ...] from a list of equal-shaped tensors", constructor},
	}
}

// lookupBuiltin returns the builtin called name.
func lookupBuiltin(name string) (builtin, bool) {
	for _, b := range builtins() {
		if b.name == name {
			return b, true
		}
	}
	return builtin{}, false
}

// keywords returns the reserved words, with what each introduces.
func keywords() [][2]string {
	return [][2]string{
		{"import", `import "path.te": the functions and constants of another file`},
		{"const", "const NAME = expr: a compile-time number (-D NAME=VALUE overrides one at top level)"},
		{"fn", "fn NAME(params) -> results { body } or fn NAME(params) = expr: a function, inlined at each call"},
		{"model", "model NAME { body }: an entry point"},
		{"input", "input x: f32[N, D]: an activation the caller supplies"},
		{"param", "param w: f32[D]: a weight, bound by name from an .npz or filled from a seed"},
		{"output", "output y, z = expr: the model's outputs"},
		{"for", "for v in lo..hi { ... }: a loop unrolled at compile time"},
		{"in", "v in lo..hi: a range"},
		{"return", "return a, b: a function's results"},
		{"where", "where i in 0..n: states the range of an index variable or reduction axis"},
	}
}
