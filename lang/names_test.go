package lang

import (
	"strings"
	"testing"

	"tec/te"
)

// TestNames checks the names of the compute tensors, in program order, that
// source snippets lower to: a statement's name on what it binds, call/inner
// on the tensors made inside a call, and suffixes where a name repeats.
func TestNames(t *testing.T) {
	const header = `
fn causal_attn(q: f32[T, D], k: f32[T, D], v: f32[T, D]) -> f32[T, D] {
  scores[i, j] = select(j <= i, sum[d](q[i, d] * k[j, d]), -1e9) where i in 0..T, j in 0..T
  p = softmax(scores)
  return matmul(p, v)
}
fn twice(x: f32[N]) -> f32[N] {
  h[i] = x[i] * 2.0
  return h + 1.0
}
fn outer(x: f32[N]) -> f32[N] {
  g = twice(x)
  return g * 3.0
}
fn split(x: f32[N]) -> (f32[N], f32[N]) {
  mid[i] = x[i] * 0.5
  lo[i] = mid[i] - 1.0
  hi[i] = mid[i] + 1.0
  return lo, hi
}
fn scale(x: f32[N], y: f32[N]) -> f32[N] {
  add[i] = x[i] * y[i]
  return add + y
}
fn id(x: f32[N]) -> f32[N] {
  return x
}
model m {
  input x: f32[4, 4]
  input v: f32[4]
  param w: f32[2, 4, 4]
  param b: f32[2, 4]
`
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"nested calls in one statement", `
  f = linear(gelu(linear(x, w[0], b[0])), w[1], b[1])
  output o = f * 2.0`,
			[]string{"f/linear", "f/gelu", "f", "o"}},
		{"a call's intermediates", `
  a = causal_attn(x, x, x)
  output o = a * 2.0`,
			[]string{"a/scores", "a/p/mx", "a/p/e", "a/p/s", "a/p", "a", "o"}},
		{"calls within calls", `
  f = outer(v)
  output o = f * 2.0`,
			[]string{"f/g/h", "f/g", "f", "o"}},
		{"a loop", `
  h = x
  for l in 0..2 {
    h = gelu(linear(h, w[l], b[l]))
  }
  output o = h * 2.0`,
			[]string{"h/linear", "h", "h/linear.1", "h.1", "o"}},
		{"several results", `
  p, q = split(v)
  r = p * q
  output o = r + p + q`,
			[]string{"split/mid", "p", "q", "r", "o"}},
		{"a statement's name wins", `
  f = scale(v + v, v)
  output o = f * 2.0`,
			[]string{"f/add.1", "f/add", "f", "o"}},
		{"an output's call", `
  output o = linear(x, w[0], b[0])`,
			[]string{"o"}},
		{"a bound tensor keeps its name", `
  a[i] = v[i] * 2.0
  c = a
  d = id(a)
  output o = c + d`,
			[]string{"a", "o"}},
		{"a list", `
  hs = [v * 2.0 for k in 0..2]
  output o = hs[0] + hs[1]`,
			[]string{"hs", "hs.1", "o"}},
		{"an element of a list", `
  hs = [v for k in 0..2]
  hs[1] = twice(v)
  output o = hs[1] * 2.0`,
			[]string{"hs/h", "hs", "o"}},
		{"a constant tensor", `
  output o = linear(zeros(f32[4, 4]), w[0], b[0])`,
			[]string{"o/zeros", "o"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := header + tc.body + "\n}\n"
			p, ds := Check("names.te", []byte(src), Config{})
			if ds.HasErrors() || p == nil {
				t.Fatalf("check failed:\n%s", render("names.te", []byte(src), ds))
			}
			var got []string
			for _, tt := range p.Tensors {
				if tt.Kind == te.Compute {
					got = append(got, tt.Name)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("compute tensors %q, want %q\n%s", got, tc.want, p)
			}
		})
	}
}

// TestConstCallsFunction checks top-level constants that call functions,
// which run before any model is lowered: a function call must not need the
// model's program, and a tensor made on the way is an error only when it is
// the constant's value.
func TestConstCallsFunction(t *testing.T) {
	const model = `
model m {
  input x: f32[M]
  output y = x * 2.0
}
`
	for _, tc := range []struct {
		name, src string
		want      string // an error message, or "" for none
	}{
		{"scalar function", "fn sq(v) = v * v\nconst M = sq(3)\n", ""},
		{"block function", "fn twice(n: int) -> int {\n  return n * 2\n}\nconst M = twice(2)\n", ""},
		{"a tensor on the way", "fn g(n: int) -> int {\n  t = zeros(f32[2])\n  return n + 1\n}\nconst M = g(2)\n", ""},
		{"a tensor", "fn g(n: int) {\n  t = zeros(f32[2])\n  return t\n}\nconst M = g(2)\n", "constant M must be a number, not a tensor f32[2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := []byte(tc.src + model)
			p, ds := Check("const.te", src, Config{})
			out := render("const.te", src, ds)
			switch {
			case tc.want == "" && (ds.HasErrors() || p == nil):
				t.Errorf("check failed:\n%s", out)
			case tc.want != "" && !strings.Contains(out, tc.want):
				t.Errorf("diagnostics lack %q:\n%s", tc.want, out)
			case strings.Contains(out, "internal"):
				t.Errorf("internal error:\n%s", out)
			}
		})
	}
}
