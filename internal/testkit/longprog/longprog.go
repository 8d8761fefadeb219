// Package longprog generates long .te programs for measuring how the
// compiler's time grows with program length: chains of element-wise
// statements, chains mixing reductions and matrix products in, and one long
// sum of a single expression. Every program is valid and its size is
// exactly the number of statements (or terms) asked for, so that time per
// statement can be compared across sizes.
package longprog

import (
	"fmt"
	"strings"
)

// Kind names a family of generated programs.
type Kind string

// The families of programs.
const (
	// Chain is n element-wise statements, each reading the one before it
	// (and the input): t1[i] = x[i] * 0.5 + 1.0, t2[i] = t1[i] * t1[i], ...
	Chain Kind = "chain"
	// Mixed is n statements in which every fourth is a reduction, a matrix
	// product or a normalisation by a reduction, the rest element-wise.
	Mixed Kind = "mixed"
	// Sum is one statement, y = x + x + ... + x, of n terms.
	Sum Kind = "sum"
)

// Kinds lists the families in a fixed order.
func Kinds() []Kind { return []Kind{Chain, Mixed, Sum} }

// Generate returns the source of a program of kind k and size n (n >= 1):
// n statements for Chain and Mixed, n terms for Sum.
func Generate(k Kind, n int) (string, error) {
	if n < 1 {
		return "", fmt.Errorf("longprog: size %d: want at least 1", n)
	}
	switch k {
	case Chain:
		return chain(n), nil
	case Mixed:
		return mixed(n), nil
	case Sum:
		return sum(n), nil
	}
	return "", fmt.Errorf("longprog: unknown kind %q: want chain, mixed or sum", k)
}

// chain writes n element-wise statements over a vector.
func chain(n int) string {
	var b strings.Builder
	b.WriteString("model chain {\n  input x: f32[64]\n  t1[i] = x[i] * 0.5 + 1.0\n")
	for k := 2; k <= n; k++ {
		if k%2 == 0 {
			fmt.Fprintf(&b, "  t%d[i] = t%d[i] * t%d[i]\n", k, k-1, k-1)
		} else {
			fmt.Fprintf(&b, "  t%d[i] = t%d[i] * 0.5 + x[i]\n", k, k-1)
		}
	}
	fmt.Fprintf(&b, "  output t%d\n}\n", n)
	return b.String()
}

// mixed writes n statements over a 16x32 matrix, cycling through an
// element-wise statement, a row sum, a normalisation by it and a matrix
// product with a weight.
func mixed(n int) string {
	var b strings.Builder
	b.WriteString("model mixed {\n  input x: f32[16, 32]\n  param w: f32[32, 32]\n  t0[i, j] = x[i, j] * 0.5\n")
	last := 0 // the latest 16x32 tensor
	for k := 1; k < n; k++ {
		switch k % 4 {
		case 0:
			fmt.Fprintf(&b, "  t%d[i, j] = t%d[i, j] * 0.5 + x[i, j]\n", k, last)
			last = k
		case 1:
			fmt.Fprintf(&b, "  s%d[i] = sum[j](t%d[i, j])\n", k, last)
		case 2:
			fmt.Fprintf(&b, "  t%d[i, j] = t%d[i, j] / (s%d[i] * s%d[i] + 1.0)\n", k, last, k-1, k-1)
			last = k
		case 3:
			fmt.Fprintf(&b, "  t%d[i, j] = sum[k](t%d[i, k] * w[k, j])\n", k, last)
			last = k
		}
	}
	fmt.Fprintf(&b, "  output t%d\n}\n", last)
	return b.String()
}

// sum writes y = x + x + ... + x with n terms.
func sum(n int) string {
	var b strings.Builder
	b.Grow(len("model sum {\n  input x: f32[8]\n  y = x\n  output y\n}\n") + 4*n)
	b.WriteString("model sum {\n  input x: f32[8]\n  y = x")
	for range n - 1 {
		b.WriteString(" + x")
	}
	b.WriteString("\n  output y\n}\n")
	return b.String()
}
