package onnx

import "testing"

// TestPolynomial writes polynomials in the consts of two dimensions.
func TestPolynomial(t *testing.T) {
	dims := []symbolicDim{{name: "batch", ident: "B"}, {name: "seq", ident: "S"}}
	for _, tt := range []struct {
		c    []int64 // constant, B, S, B·S
		want string
	}{
		{[]int64{0, 1, 0, 0}, "B"},
		{[]int64{0, 75, 0, 0}, "B * 75"},
		{[]int64{1, 0, 0, 64}, "B * S * 64 + 1"},
		{[]int64{-1, 3, -1, 0}, "B * 3 - S - 1"},
		{[]int64{0, -2, 0, 0}, "-B * 2"},
		{[]int64{0, 0, 0, 0}, "0"},
	} {
		if got := polynomial(tt.c, dims); got != tt.want {
			t.Errorf("polynomial(%v) = %q, want %q", tt.c, got, tt.want)
		}
	}
}

// TestNeedsParens: a sum between delimiters and a product anywhere but
// after a division or remainder keep their value unparenthesised.
func TestNeedsParens(t *testing.T) {
	for _, tt := range []struct {
		expr, before, after string
		want                bool
	}{
		{"B", "x[i0 / ", "]", false},
		{"B * 25", "f32[", ", 3]", false},
		{"B * 25", "x[i0 / ", "]", true},
		{"B * 25", "x[i0 % ", "]", true},
		{"B * 25", "i1 * ", " + 3", false},
		{"B * 25 + 1", "f32[", ", 3]", false},
		{"B * 25 + 1", "where i in 0..", "\n", false},
		{"B * 25 + 1", "x[i0 * ", "]", true},
		{"B - 1", "x[i0, ", " - i1]", true},
		{"-B * 2", "y = x * ", "\n", true},
	} {
		if got := needsParens(tt.expr, tt.before, tt.after); got != tt.want {
			t.Errorf("needsParens(%q, %q, %q) = %v, want %v", tt.expr, tt.before, tt.after, got, tt.want)
		}
	}
}
