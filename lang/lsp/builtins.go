package lsp

import (
	"sync"

	"tec/lang"
)

// builtin describes a name of the language's universe scope, for hover and
// completion.
type builtin struct {
	name, signature, doc string
	kind                 builtinKind
}

type builtinKind int

// The kinds, in lang.BuiltinKind's order.
const (
	elemFunc builtinKind = iota // an element or compile-time function
	reduction
	dtype
	constructor
	constant
)

// builtins returns the builtin names with their documentation, from
// lang.Builtins, made once: the list does not change, and semantic tokens
// look up every name the checker did not reach.
var builtins = sync.OnceValue(func() []builtin {
	var out []builtin
	for _, b := range lang.Builtins() {
		out = append(out, builtin{b.Name, b.Signature, b.Doc, builtinKind(b.Kind)})
	}
	return out
})

// builtinIndex maps each builtin's name to its first entry in builtins.
var builtinIndex = sync.OnceValue(func() map[string]int {
	m := map[string]int{}
	for i, b := range builtins() {
		if _, ok := m[b.name]; !ok {
			m[b.name] = i
		}
	}
	return m
})

// lookupBuiltin returns the builtin called name.
func lookupBuiltin(name string) (builtin, bool) {
	if i, ok := builtinIndex()[name]; ok {
		return builtins()[i], true
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
		{"update", "update x[b, pos[b], e] = v: writes elements of the input x in place, after every read of it"},
	}
}
