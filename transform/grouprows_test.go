package transform

import (
	"fmt"
	"strings"
	"testing"

	"tec/internal/numeric"
	"tec/te"
)

// TestSharedRows checks which contractions have rows that share a
// factor's loads: the grouped-query scores do; a factor that reads the
// axis in any other form, a sum of no such factor, a reduction other than
// a sum, or a group that does not divide the axis do not.
func TestSharedRows(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		dim, g     int
	}{
		{"grouped-query scores", "sum[e](q[b, n, e] * kc[b, n / 2, t, e])", 1, 2},
		{"under a select", "select(t <= pos[b], sum[e](q[b, n, e] * kc[b, n / 2, t, e]), -inf)", 1, 2},
		{"groups of four", "sum[e](q[b, n, e] * kc[b, n / 4, t, e])", 1, 4},
		{"no shared factor", "sum[e](q[b, n, e] * q[b, n, e])", 0, 0},
		{"no direct factor", "sum[e](kc[b, n / 2, t, e] * kc[b, n / 2, t, e])", 0, 0},
		{"a remainder", "sum[e](q[b, n, e] * kc[b, n % 2, t, e])", 0, 0},
		{"an axis that cancels", "sum[e](q[b, n, e] * kc[b, n / 2, t + n - n, e])", 1, 2},
		{"quotient and axis in one load", "sum[e](q[b, n, e] * kc[b, n / 2, n, e])", 0, 0},
		{"a max", "max[e](q[b, n, e] * kc[b, n / 2, t, e])", 0, 0},
		{"two sums", "sum[e](q[b, n, e] * kc[b, n / 2, t, e]) + sum[e](q[b, n, e])", 0, 0},
		{"mixed divisors", "sum[e](q[b, n, e] * kc[b, n / 2, t, e] * kc[b, n / 4, t, e])", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := checkProgram(t, "rows.te", rowsProgram(tc.body))
			dim, g := SharedRows(p.Lookup("sc"))
			if dim != tc.dim || g != tc.g {
				t.Errorf("SharedRows = %d, %d; want %d, %d", dim, g, tc.dim, tc.g)
			}
		})
	}
}

// rowsProgram is a program whose sc[b, n, t] has the body given, over
// q[b, n, e] and kc[b, n / 2, t, e] of four query heads.
func rowsProgram(body string) string {
	return fmt.Sprintf(`
model m {
  input pos: i32[2]
  input q: f32[2, 4, 8]
  input kc: f32[2, 4, 16, 8]
  sc[b, n, t] = %s where b in 0..2, n in 0..4, t in 0..16
  out[b, n] = sum[t](sc[b, n, t])
  output out
}
`, body)
}

// TestGroupRows groups the scores of the decode attention: sc becomes
// [b, n / 2, n % 2, t], its readers load it there, and every output is
// the reference's; an output, or a tensor the filter refuses, stays.
func TestGroupRows(t *testing.T) {
	p := checkProgram(t, "attn.te", decodeAttention)
	q := GroupRows(p, func(t *te.Tensor) bool { return t.Name == "sc" })
	sc := q.Lookup("sc")
	if got := fmt.Sprint(sc.Shape); got != "[4 2 2 64]" {
		t.Fatalf("sc of shape %s; want [4 2 2 64]", got)
	}
	text := q.String()
	for _, want := range []string{"q[b, n*2 + n_g, e] * kc[b, n, t, e]", "sc[b, (n / 2), (n % 2), t]"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
	for _, pos := range [][]float64{{0, 0, 0, 0}, {63, 0, 9, 40}} {
		in := numeric.SeededFeeds(p, 5)
		copy(in["pos"].Data, pos)
		if e := outputError(t, p, q, in, "ctx"); !(e < 1e-12) {
			t.Errorf("pos %v: relative error %g", pos, e)
		}
	}
	if same := GroupRows(p, func(*te.Tensor) bool { return false }); same.Lookup("sc").Shape[1] != 4 {
		t.Errorf("sc grouped without being asked")
	}
	out := checkProgram(t, "attn.te", strings.Replace(decodeAttention, "output ctx", "output ctx, sc", 1))
	if kept := GroupRows(out, func(*te.Tensor) bool { return true }); len(kept.Lookup("sc").Shape) != 3 {
		t.Errorf("the output sc grouped: its shape is the caller's")
	}
}

// outputError evaluates p and its rewrite q in the reference on in and
// returns the relative error of q's output name against p's.
func outputError(t *testing.T, p, q *te.Program, in map[string]*te.Array, name string) float64 {
	t.Helper()
	want, err := te.Evaluate(p, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := te.Evaluate(q, in, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return numeric.RelError(got[name], want[name])
}
