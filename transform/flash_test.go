package transform

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"tec/internal/numeric"
	"tec/lang"
	"tec/te"
)

// decodeAttention is a decode step's attention over a cache of T
// positions, masked past the run-time pos[b], with grouped-query heads
// (query head n reads key/value head n / 2), as examples/llama.te writes
// it.
const decodeAttention = `
const B = 4
const T = 64
const NH = 4
const DH = 8

model decode {
  input pos: i32[B]
  input q: f32[B, NH, DH]
  input kc: f32[B, NH / 2, T, DH]
  input vc: f32[B, NH / 2, T, DH]
  sc[b, n, t] = select(t <= pos[b], sum[e](q[b, n, e] * kc[b, n / 2, t, e]) * 2.0, -inf)
  mx[b, n] = max[t](sc[b, n, t])
  pr[b, n, t] = exp(sc[b, n, t] - mx[b, n])
  den[b, n] = sum[t](pr[b, n, t])
  ctx[b, n, e] = sum[t](pr[b, n, t] * vc[b, n / 2, t, e]) / den[b, n]
  output ctx
}
`

func checkProgram(t *testing.T, name, src string) *te.Program {
	t.Helper()
	p, diags := lang.Check(name, []byte(src), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return p
}

// TestSplitSoftmax splits the attention into 2 to 64 chunks (down to one
// position each), its scores with them and not, and compares the outputs
// with the unsplit program's in the reference evaluator for positions at
// the first, a middle and the last slot and mixed per sequence, where
// whole chunks lie past pos[b] (their partials NaN, dropped by the
// merge). The chunks' maxima differ by far more than the tolerance, so
// that a merge that did not rescale the partials to the merged max fails.
// With the scores whole and grouped (Split.Group), sc has the two query
// heads of a key head as rows. With the scores split, the partials read sc/chunk, the key/value heads
// are not grouped, and the merge is one tensor: the merged max and
// denominator inlined in the context, gone as tensors.
func TestSplitSoftmax(t *testing.T) {
	p := checkProgram(t, "attn.te", decodeAttention)
	sites := SoftmaxSites(p)
	if len(sites) != 1 {
		t.Fatalf("%d softmax sites; want 1", len(sites))
	}
	s := sites[0]
	if s.Max.Name != "mx" || s.Scores.Name != "sc" || s.Length != 64 || len(s.Weights) != 1 || len(s.Sums) != 2 {
		t.Fatalf("site: max %s, scores %s, length %d, %d weights, %d sums", s.Max.Name, s.Scores.Name, s.Length, len(s.Weights), len(s.Sums))
	}
	if got, want := fmt.Sprint(s.ChunkCounts(8, 64)), "[2 4 8]"; got != want {
		t.Errorf("ChunkCounts(8, 64) = %s; want %s", got, want)
	}
	if !s.OwnScores {
		t.Errorf("OwnScores false; want true (sc is read by mx and pr alone)")
	}
	if !s.Groupable() {
		t.Errorf("Groupable false; want true (query head n reads key head n / 2)")
	}
	for _, sp := range []Split{
		{Chunks: 2}, {Chunks: 4}, {Chunks: 16}, {Chunks: 64},
		{Chunks: 2, Scores: true}, {Chunks: 8, Scores: true}, {Chunks: 64, Scores: true},
		{Chunks: 1, Group: true}, {Chunks: 4, Group: true}, {Chunks: 64, Group: true},
		{Chunks: 8, Scores: true, Group: true}, // split scores are not grouped
	} {
		c := sp.Chunks
		q, err := SplitSoftmax(p, func(*SoftmaxSite) Split { return sp })
		if err != nil {
			t.Fatal(err)
		}
		if c > 1 {
			for _, name := range []string{"mx/chunk", "den/chunk", "ctx/chunk"} {
				if q.Lookup(name) == nil {
					t.Fatalf("%+v: no %s in\n%s", sp, name, q)
				}
			}
			if ctx := q.Lookup("ctx/chunk"); sp.Scores && len(ctx.Shape) != 4 || !sp.Scores && len(ctx.Shape) != 5 {
				t.Errorf("%+v: ctx/chunk of shape %v; want the query heads grouped (5 axes) only with the scores whole", sp, ctx.Shape)
			}
		}
		split := map[string]bool{"sc/chunk": sp.Scores, "sc": !sp.Scores, "mx": !sp.Scores, "den": !sp.Scores}
		for name, want := range split {
			if got := q.Lookup(name) != nil; got != want {
				t.Errorf("%+v: %s in the program: %v; want %v", sp, name, got, want)
			}
		}
		if sc := q.Lookup("sc"); sc != nil && fmt.Sprint(sc.Shape) != map[bool]string{false: "[4 4 64]", true: "[4 2 2 64]"}[sp.Group] {
			t.Errorf("%+v: sc of shape %v; want its heads grouped in pairs exactly where Group", sp, sc.Shape)
		}
		for _, pos := range [][]float64{{0, 0, 0, 0}, {31, 32, 33, 17}, {63, 63, 63, 63}, {63, 0, 9, 40}} {
			in := numeric.SeededFeeds(p, 3)
			copy(in["pos"].Data, pos)
			want, err := te.Evaluate(p, in, te.EvalOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := te.Evaluate(q, in, te.EvalOptions{KeepAll: true})
			if err != nil {
				t.Fatalf("%+v pos %v: %v", sp, pos, err)
			}
			if e := numeric.RelError(got["ctx"], want["ctx"]); !(e < 1e-5) {
				t.Errorf("%+v pos %v: relative error %g", sp, pos, e)
			}
			if c == 4 && pos[0] == 63 && pos[1] == 63 {
				if spread := chunkSpread(got["mx/chunk"]); spread < 1 {
					t.Errorf("the chunks' maxima differ by %g: too little to test the rescale", spread)
				}
			}
		}
	}
}

// chunkSpread returns the largest difference between two chunks' maxima
// of one row of m_c (its last axis the chunks).
func chunkSpread(mc *te.Array) float64 {
	c := mc.Shape[len(mc.Shape)-1]
	spread := 0.0
	for r := 0; r < len(mc.Data); r += c {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range mc.Data[r : r+c] {
			lo, hi = min(lo, v), max(hi, v)
		}
		spread = max(spread, hi-lo)
	}
	return spread
}

// TestSoftmaxSitesRefused checks the forms SplitSoftmax leaves alone: the
// weights an output, read by something other than a sum over the axis,
// or summed non-linearly.
func TestSoftmaxSitesRefused(t *testing.T) {
	for _, tc := range []struct{ name, change, to string }{
		{"weights an output", "output ctx", "output ctx, pr"},
		{"weights read element-wise", "output ctx", "w2[b, n, t] = pr[b, n, t] * 2.0\n  output ctx, w2"},
		{"sum not linear", "sum[t](pr[b, n, t])", "sum[t](pr[b, n, t] * pr[b, n, t])"},
		{"max of a sum", "exp(sc[b, n, t] - mx[b, n])", "exp(sc[b, n, t] - mx[b, n]) + 1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(decodeAttention, tc.change, tc.to, 1)
			p := checkProgram(t, "attn.te", src)
			if sites := SoftmaxSites(p); len(sites) != 0 {
				t.Errorf("%d sites; want none", len(sites))
			}
		})
	}
}

// TestOwnScores checks that scores read by anything but the site's max
// and weights, or an output, are not the site's own: splitting them would
// leave their other readers the whole tensor too.
func TestOwnScores(t *testing.T) {
	for _, tc := range []struct {
		name, change, to string
		own              bool
	}{
		{"own", "", "", true},
		{"scores an output", "output ctx", "output ctx, sc", false},
		{"scores read elsewhere", "output ctx", "s2[b, n, t] = sc[b, n, t] * 2.0\n  output ctx, s2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := checkProgram(t, "attn.te", strings.Replace(decodeAttention, tc.change, tc.to, 1))
			sites := SoftmaxSites(p)
			if len(sites) != 1 || sites[0].OwnScores != tc.own {
				t.Fatalf("%d sites, own scores %v; want 1, %v", len(sites), len(sites) > 0 && sites[0].OwnScores, tc.own)
			}
			q, err := SplitSoftmax(p, func(*SoftmaxSite) Split { return Split{Chunks: 4, Scores: true} })
			if err != nil {
				t.Fatal(err)
			}
			if got := q.Lookup("sc/chunk") != nil; got != tc.own {
				t.Errorf("sc/chunk made: %v; want %v", got, tc.own)
			}
		})
	}
}

// TestSplitSoftmaxRejectsRagged reports a chunk count that does not divide
// the axis.
func TestSplitSoftmaxRejectsRagged(t *testing.T) {
	p := checkProgram(t, "attn.te", decodeAttention)
	_, err := SplitSoftmax(p, func(*SoftmaxSite) Split { return Split{Chunks: 3} })
	if err == nil || !strings.Contains(err.Error(), "3 chunks do not divide mx's 64 positions") {
		t.Errorf("err = %v", err)
	}
}

// TestSplitSoftmaxRandom splits the decode attention of random shapes
// (batch, heads, key/value heads that divide them, head size, cache) at
// random positions, in a random chunk count, its scores whole, grouped or
// split, and compares the context with the unsplit program's in the
// reference evaluator.
func TestSplitSoftmaxRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 19))
	for i := range 100 {
		b, nkv, g := 1+rng.IntN(3), 1+rng.IntN(3), []int{1, 2, 3, 4, 8}[rng.IntN(5)]
		nh, dh := nkv*g, 1+rng.IntN(9)
		ts := []int{4, 6, 12, 16, 30, 64}
		tt := ts[rng.IntN(len(ts))]
		src := strings.NewReplacer("const B = 4", fmt.Sprintf("const B = %d", b), "const T = 64", fmt.Sprintf("const T = %d", tt),
			"const NH = 4", fmt.Sprintf("const NH = %d", nh), "const DH = 8", fmt.Sprintf("const DH = %d", dh),
			"NH / 2", fmt.Sprint(nkv), "n / 2", fmt.Sprintf("n / %d", g)).Replace(decodeAttention)
		p := checkProgram(t, "attn.te", src)
		sites := SoftmaxSites(p)
		if len(sites) != 1 {
			t.Fatalf("case %d: %d sites in\n%s", i, len(sites), src)
		}
		counts := append([]int{1}, sites[0].ChunkCounts(1, tt)...)
		sp := Split{Chunks: counts[rng.IntN(len(counts))], Scores: rng.IntN(3) == 0, Group: rng.IntN(2) == 0}
		if sp.Chunks == 1 {
			sp.Scores = false
		}
		q, err := SplitSoftmax(p, func(*SoftmaxSite) Split { return sp })
		if err != nil {
			t.Fatalf("case %d %+v: %v", i, sp, err)
		}
		grouped := sp.Group && !sp.Scores && g > 1
		if sc := q.Lookup("sc"); sc != nil && (len(sc.Shape) == 4) != grouped {
			t.Errorf("case %d %+v, %d heads a key head: sc of shape %v", i, sp, g, sc.Shape)
		}
		in := numeric.SeededFeeds(p, uint64(i))
		for j := range in["pos"].Data {
			in["pos"].Data[j] = float64(rng.IntN(tt))
		}
		want, err := te.Evaluate(p, in, te.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := te.Evaluate(q, in, te.EvalOptions{})
		if err != nil {
			t.Fatalf("case %d %+v: %v", i, sp, err)
		}
		if e := numeric.RelError(got["ctx"], want["ctx"]); !(e < 1e-9) {
			t.Errorf("case %d (B=%d NH=%d NKV=%d DH=%d T=%d) %+v: relative error %g", i, b, nh, nkv, dh, tt, sp, e)
		}
	}
}
