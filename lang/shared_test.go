package lang

import (
	"math"
	"runtime/debug"
	"testing"

	"tec/internal/numeric"
	"tec/te"
)

// TestBindOnce checks that an argument that a scalar function uses twice is
// computed once when it holds a reduction (issue 23: silu(sum[d](...) + b)
// computed the sum twice) or is large, and that the results are those of
// the program that binds it by hand.
func TestBindOnce(t *testing.T) {
	const decls = `fn silu(v) = v * sigmoid(v)
fn twice(v, k) = v * k + v
model m {
  input x: f32[4, 8]
  input w: f32[8]
  input b: f32[4]
  input ids: i32[4]
`
	tests := []struct {
		name string
		def  string // defines y
		ref  string // defines y by hand, with the argument bound once
		// reduces is the number of reductions the evaluator computes per
		// element of y, over the whole program (tensors counted as trees).
		reduces int
	}{
		{"reduction", "y[i] = silu(sum[d](x[i, d] * w[d]) + b[i])",
			"s[i] = sum[d](x[i, d] * w[d]) + b[i]\n  y[i] = s[i] * sigmoid(s[i])", 1},
		{"nested calls", "y[i] = silu(silu(max[d](x[i, d])))",
			"s[i] = max[d](x[i, d])\n  t[i] = s[i] * sigmoid(s[i])\n  y[i] = t[i] * sigmoid(t[i])", 1},
		{"reduction over an enclosing axis", "y[i] = sum[e](silu(sum[d](x[i, d] * x[e % 4, d]))) where e in 0..8",
			"s[i, e] = sum[d](x[i, d] * x[e % 4, d]) where e in 0..8\n  y[i] = sum[e](s[i, e] * sigmoid(s[i, e])) where e in 0..8", 2},
		{"a parameter used once", "y[i] = sigmoid_fn(sum[d](x[i, d]))", "y[i] = sigmoid(sum[d](x[i, d]))", 1},
		{"two arguments", "y[i] = twice(sum[d](x[i, d]), b[i])",
			"s[i] = sum[d](x[i, d])\n  y[i] = s[i] * b[i] + s[i]", 1},
		// Bound once, the sum would be evaluated at i = 0, where x[i - 1]
		// is out of bounds: it is computed under the guard.
		{"under a guard", "y[i] = select(i >= 1, silu(sum[d](x[i - 1, d])), 0.0) where i in 0..4",
			"s[i] = select(i >= 1, sum[d](x[i - 1, d]), 0.0) where i in 0..4\n  y[i] = select(i >= 1, s[i] * sigmoid(s[i]), 0.0) where i in 0..4", 1},
		// The guard and the sum use the enclosing axis j: the tensor is
		// over i and j.
		{"under a guard on an enclosing axis", "y[i] = sum[j](select(i + j >= 1, silu(sum[d](x[i + j - 1, d])), 0.0)) where i in 0..2, j in 0..2",
			"s[i, j] = select(i + j >= 1, sum[d](x[i + j - 1, d]), 0.0) where i in 0..2, j in 0..2\n  y[i] = sum[j](select(i + j >= 1, s[i, j] * sigmoid(s[i, j]), 0.0)) where i in 0..2, j in 0..2", 2},
		// A gather is never proven in bounds (a select on the data may
		// guard it): the argument stays inlined.
		{"gather", "y[i] = silu(sum[d](x[ids[i], d]))", "y[i] = sum[d](x[ids[i], d]) * sigmoid(sum[d](x[ids[i], d]))", 2},
		// Two guards, one on a variable the argument does not use, which the
		// tensor leaves out: the other proves its loads.
		{"under two guards", "y[i] = sum[j](select(i >= 1 && j < 1, silu(sum[d](x[i - 1, d])), 0.0)) where i in 0..4, j in 0..2",
			"s[i] = select(i >= 1, sum[d](x[i - 1, d]), 0.0) where i in 0..4\n  y[i] = sum[j](select(i >= 1 && j < 1, s[i] * sigmoid(s[i]), 0.0)) where i in 0..4, j in 0..2", 2},
		{"whole tensors", "y = silu(b * 2.0)", "s = b * 2.0\n  y = s * sigmoid(s)", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := decls + "  " + tt.def + "\n  output y\n}\n"
			p, ds := Check("m.te", []byte(src), Config{})
			if ds.HasErrors() {
				t.Fatalf("check failed:\n%s", render("m.te", []byte(src), ds))
			}
			refSrc := decls + "  " + tt.ref + "\n  output y\n}\n"
			ref, ds := Check("ref.te", []byte(refSrc), Config{})
			if ds.HasErrors() {
				t.Fatalf("check of the reference failed:\n%s", render("ref.te", []byte(refSrc), ds))
			}
			if got := treeReduces(p); got != tt.reduces {
				t.Errorf("%d reductions computed, want %d:\n%s", got, tt.reduces, p)
			}
			if got, want := treeReduces(p), treeReduces(ref); got != want {
				t.Errorf("%d reductions computed, but the reference computes %d:\n%s", got, want, p)
			}
			feeds := numeric.SeededFeeds(p, 1)
			out, err := te.Evaluate(p, feeds, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := te.Evaluate(ref, feeds, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range want["y"].Data {
				if out["y"].Data[k] != v {
					t.Fatalf("y = %v, want %v", out["y"].Data, want["y"].Data)
				}
			}
		})
	}
}

// treeReduces counts the reductions of p's tensor bodies, each expression
// walked as a tree, as the evaluator and the kernels compute it.
func treeReduces(p *te.Program) int {
	n := 0
	for _, t := range p.Tensors {
		if t.Body == nil {
			continue
		}
		te.Walk(t.Body, func(x te.Expr) bool {
			if _, ok := x.(*te.Reduce); ok {
				n++
			}
			return true
		})
	}
	return n
}

// TestBindOnceLarge checks that nested calls of a function that uses its
// parameter five times (gelu) stay linear in size: without binding, the
// innermost argument would be repeated 5^8 times.
func TestBindOnceLarge(t *testing.T) {
	src := `model m {
  input x: f32[4]
  y = gelu(gelu(gelu(gelu(gelu(gelu(gelu(gelu(x))))))))
  output y
}`
	p, ds := Check("m.te", []byte(src), Config{})
	if ds.HasErrors() {
		t.Fatalf("check failed:\n%s", render("m.te", []byte(src), ds))
	}
	nodes := 0
	for _, tn := range p.Tensors {
		if tn.Body != nil {
			te.Walk(tn.Body, func(te.Expr) bool { nodes++; return true })
		}
	}
	if nodes > 5000 {
		t.Errorf("the program has %d expression nodes, want at most 5000", nodes)
	}
	feeds := numeric.SeededFeeds(p, 1)
	out, err := te.Evaluate(p, feeds, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range feeds["x"].Data {
		for range 8 {
			v = 0.5 * v * (1 + math.Tanh(0.7978845608*(v+0.044715*v*v*v)))
		}
		if d := out["y"].Data[k] - v; math.Abs(d) > 1e-12 {
			t.Errorf("y[%d] = %v, want %v", k, out["y"].Data[k], v)
		}
	}
}

// TestWalkDAGDeep checks that walkDAG visits a chain far deeper than the
// goroutine's stack allows recursion (a 10 MB sum of 2.5 million terms
// overflowed Go's stack in tec check), once per distinct node, parents
// first and the first child's subtree before the second's.
func TestWalkDAGDeep(t *testing.T) {
	defer debug.SetMaxStack(debug.SetMaxStack(1 << 20))
	x := &te.ConstExpr{Value: 1, DType: te.F32}
	y := &te.ConstExpr{Value: 2, DType: te.F32}
	var e te.Expr = x
	const n = 200000
	for range n {
		e = &te.Binary{Op: te.Add, X: e, Y: y} // y shared by every node
	}
	var order []te.Expr
	walkDAG(e, func(v te.Expr) { order = append(order, v) })
	if len(order) != n+2 {
		t.Fatalf("%d nodes visited, want %d", len(order), n+2)
	}
	// Depth first, first child first: the chain's n additions, then x,
	// then y (met first as the deepest addition's second operand).
	if order[0] != e || order[n] != x || order[n+1] != y {
		t.Errorf("order: first %p (root %p), [n] %p (x %p), [n+1] %p (y %p)", order[0], e, order[n], x, order[n+1], y)
	}
}
