package transform

import (
	"fmt"
	"testing"

	"tec/internal/numeric"
	"tec/precision"
	"tec/te"
)

// windowAttention is a windowed attention as Swin's: rows of 49 scores
// with a relative-position table read at (i - j) and a region mask, the
// weights summed (den) and weighting the values (ctx).
const windowAttention = `
model win {
  input q: f32[3, 49, 16]
  input k: f32[3, 49, 16]
  input v: f32[3, 49, 16]
  param table: f32[97]
  sc[h, i, j] = sum[e](q[h, i, e] * k[h, j, e]) * 0.25 + table[i - j + 48]
      + select(i / 7 == j / 7, 0.0, -100.0)
    where e in 0..16
  mx[h, i] = max[j](sc[h, i, j])
  p[h, i, j] = exp(sc[h, i, j] - mx[h, i])
  den[h, i] = sum[j](p[h, i, j])
  ctx[h, i, e] = sum[j](p[h, i, j] * v[h, j, e]) / den[h, i]
    where e in 0..16
  output ctx
}
`

// TestPadSoftmax pads a window attention's 49 positions to 56 in f16 (in
// f32 it is not padded): the scores and the weights have rows of 56, the
// max and the sums 56 terms, and the reference evaluator gives the same
// output as the unpadded program's (the padding's terms are exactly 0);
// the padded program's site is not padded again, and a site whose length
// is a multiple of 8 already, or that pad declines, is left as it is.
func TestPadSoftmax(t *testing.T) {
	p := precision.Apply(checkProgram(t, "win.te", windowAttention), precision.F16)
	if s := SoftmaxSites(checkProgram(t, "win.te", windowAttention)); len(s) != 1 || s[0].PaddedLength() != 0 {
		t.Errorf("f32 scores have a padded length")
	}
	sites := SoftmaxSites(p)
	if len(sites) != 1 || sites[0].PaddedLength() != 56 {
		t.Fatalf("%d sites, padded length %d; want 1 site padded to 56", len(sites), sites[0].PaddedLength())
	}
	q, padded := PadSoftmax(p, func(*SoftmaxSite) bool { return true })
	if len(padded) != 1 {
		t.Fatalf("%d sites padded; want 1", len(padded))
	}
	for name, want := range map[string]string{"sc": "[3 49 56]", "p": "[3 49 56]", "mx": "[3 49]", "ctx": "[3 49 16]"} {
		if got := fmt.Sprint(q.Lookup(name).Shape); got != want {
			t.Errorf("%s of shape %s; want %s", name, got, want)
		}
	}
	for name, want := range map[string]int{"den": 56, "ctx": 56, "mx": 56} {
		if r := te.TopReduces(q.Lookup(name).Body); len(r) != 1 || r[0].Axes[0].Extent != want {
			t.Errorf("%s reduces %v; want %d positions", name, r, want)
		}
	}
	in := numeric.SeededFeeds(p, 5)
	if e := outputError(t, p, q, in, "ctx"); e != 0 {
		t.Errorf("padded output differs from the unpadded by %g", e)
	}
	if s := SoftmaxSites(q); len(s) != 1 || s[0].Length != 56 || s[0].PaddedLength() != 0 {
		t.Errorf("the padded program's sites: %v; want one of 56 positions, not padded again", s)
	}
	if _, padded := PadSoftmax(p, func(*SoftmaxSite) bool { return false }); len(padded) != 0 {
		t.Errorf("%d sites padded where pad declines them all", len(padded))
	}
	p8 := precision.Apply(checkProgram(t, "attn.te", decodeAttention), precision.F16) // 64 positions
	if s := SoftmaxSites(p8); len(s) != 1 || s[0].PaddedLength() != 0 {
		t.Errorf("a site of 64 positions has a padded length")
	}
}
