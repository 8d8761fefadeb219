package pipeline

import (
	"fmt"
	"testing"

	"tec/lang"
	"tec/precision"
)

// TestPadSoftmax checks the pad pass's choices, as the cost model prices
// each site alone: an attention over 196 positions in f16 (a ViT's 14×14
// patches) padded to 200, predicted faster (4 more positions give its
// weights 16-byte rows); one over 49 (Swin's windows) left as it is (7
// more positions cost its max and sums more than the loads gain); and in
// f32, or over 64 positions, no choice at all. The program is padded
// exactly where the choice says.
func TestPadSoftmax(t *testing.T) {
	const src = `
model win {
  input q: f32[%[1]d, %[2]d, %[3]d]
  input k: f32[%[1]d, %[2]d, %[3]d]
  input v: f32[%[1]d, %[2]d, %[3]d]
  sc[h, i, j] = sum[e](q[h, i, e] * k[h, j, e]) * 0.125 where e in 0..%[3]d
  mx[h, i] = max[j](sc[h, i, j])
  p[h, i, j] = exp(sc[h, i, j] - mx[h, i])
  den[h, i] = sum[j](p[h, i, j])
  ctx[h, i, e] = sum[j](p[h, i, j] * v[h, j, e]) / den[h, i] where e in 0..%[3]d
  output ctx
}
`
	for _, tc := range []struct {
		heads, positions, dim int
		mode                  precision.Mode
		choices               int
		padded                bool
	}{
		{16, 196, 64, precision.F16, 1, true},
		{16, 49, 32, precision.F16, 1, false},
		{16, 196, 64, precision.F32, 0, false},
		{16, 64, 32, precision.F16, 0, false},
	} {
		name := fmt.Sprintf("%d heads of %d positions, %s", tc.heads, tc.positions, tc.mode)
		p, diags := lang.Check("win.te", []byte(fmt.Sprintf(src, tc.heads, tc.positions, tc.dim)), lang.Config{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		q, choices, err := padSoftmax(precision.Apply(p, tc.mode), Options{Level: MaxLevel})
		if err != nil {
			t.Fatal(err)
		}
		if len(choices) != tc.choices {
			t.Fatalf("%s: choices %v; want %d", name, choices, tc.choices)
		}
		if tc.choices == 0 {
			continue
		}
		c := choices[0]
		if c.Max != "mx" || c.Positions != tc.positions || c.To != (tc.positions+7)/8*8 || c.Padded != tc.padded || !(c.Time > 0 && c.AsIs > 0) {
			t.Errorf("%s: %v; want mx's, padded %v", name, c, tc.padded)
		}
		if got := q.Lookup("sc").Shape[2] != tc.positions; got != c.Padded {
			t.Errorf("%s: scores of shape %v, padded %v; want the program padded where the choice is", name, q.Lookup("sc").Shape, c.Padded)
		}
	}
}
