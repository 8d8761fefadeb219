package lsp

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
