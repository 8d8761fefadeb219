package generate

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"testing"

	"tec/lang"
	"tec/te"
)

// logOf returns the logs of ps: logits whose softmax is ps, normalised.
func logOf(ps ...float64) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = math.Log(p)
	}
	return out
}

// near reports whether a and b agree to tol, element by element.
func near(a, b []float64, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol {
			return false
		}
	}
	return true
}

// TestArgmaxIsTheModels checks Argmax, which greedy sampling picks,
// against the argmax that the models compute (the reference evaluator's
// argmax[t] over the same rows): the first greatest where values tie,
// -Inf never over a number.
func TestArgmaxIsTheModels(t *testing.T) {
	inf := math.Inf(1)
	rows := [][]float64{
		{1, 3, 3, 2},
		{3, 3, 3, 3},
		{-inf, -inf, 0.5, 0.5},
		{-1, -2, -1, -3},
		{0, 0, 7, 7},
		{-inf, -5, -inf, -6},
	}
	const src = "const B = 6\nconst V = 4\nmodel m {\n  input l: f32[B, V]\n  next[b] = argmax[t](l[b, t])\n  output next\n}\n"
	p, diags := lang.Check("argmax.te", []byte(src), lang.Config{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	l := te.NewArray(te.F32, []int{6, 4})
	for b, r := range rows {
		copy(l.Data[b*4:], r)
	}
	outs, err := te.Evaluate(p, map[string]*te.Array{"l": l}, te.EvalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for b, r := range rows {
		want := int(outs["next"].Data[b])
		if got := Argmax(r); got != want {
			t.Errorf("Argmax(%v) = %d, the model's argmax %d", r, got, want)
		}
		for _, seed := range []uint64{0, 1, 99} {
			s := Sampling{Seed: seed}
			if got, err := s.Sample(r, b, 3); err != nil || got != want {
				t.Errorf("greedy Sample(%v) = %d, %v; want %d", r, got, err, want)
			}
		}
	}
}

// TestProbs checks the filtered distributions against ones worked out by
// hand, each filter alone and together.
func TestProbs(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		name   string
		s      Sampling
		logits []float64
		want   []float64
	}{
		{"softmax", Sampling{Temperature: 1}, logOf(0.1, 0.2, 0.3, 0.4), []float64{0.1, 0.2, 0.3, 0.4}},
		{"temperature 0.5 squares", Sampling{Temperature: 0.5}, logOf(0.1, 0.2, 0.3, 0.4), []float64{0.01 / 0.3, 0.04 / 0.3, 0.09 / 0.3, 0.16 / 0.3}},
		{"temperature 2 takes roots", Sampling{Temperature: 2}, logOf(0.25, 0.25, 0.5), func() []float64 {
			z := 0.5 + 0.5 + math.Sqrt(0.5)
			return []float64{0.5 / z, 0.5 / z, math.Sqrt(0.5) / z}
		}()},
		{"a mask", Sampling{Temperature: 1}, []float64{-inf, math.Log(0.25), math.Log(0.75)}, []float64{0, 0.25, 0.75}},
		{"top-k 2", Sampling{Temperature: 1, TopK: 2}, logOf(0.1, 0.2, 0.3, 0.4), []float64{0, 0, 3.0 / 7, 4.0 / 7}},
		{"top-k 1", Sampling{Temperature: 1, TopK: 1}, logOf(0.1, 0.5, 0.3, 0.1), []float64{0, 1, 0, 0}},
		{"top-k keeps ties with the kth", Sampling{Temperature: 1, TopK: 2}, logOf(0.1, 0.3, 0.3, 0.3), []float64{0, 1.0 / 3, 1.0 / 3, 1.0 / 3}},
		{"top-k 1 keeps tied greatest", Sampling{Temperature: 1, TopK: 1}, logOf(0.4, 0.2, 0.4), []float64{0.5, 0, 0.5}},
		{"top-k past V", Sampling{Temperature: 1, TopK: 9}, logOf(0.1, 0.2, 0.3, 0.4), []float64{0.1, 0.2, 0.3, 0.4}},
		// cumulative, ascending: 0.05, 0.2, 0.5, 1; removed where ≤ 0.25
		{"top-p 0.75", Sampling{Temperature: 1, TopP: 0.75}, logOf(0.5, 0.05, 0.3, 0.15), []float64{0.625, 0, 0.375, 0}},
		{"top-p 0.9", Sampling{Temperature: 1, TopP: 0.9}, logOf(0.5, 0.05, 0.3, 0.15), []float64{0.5 / 0.95, 0, 0.3 / 0.95, 0.15 / 0.95}},
		{"top-p tiny keeps the top", Sampling{Temperature: 1, TopP: 1e-9}, logOf(0.3, 0.45, 0.25), []float64{0, 1, 0}},
		{"top-p 1 keeps all", Sampling{Temperature: 1, TopP: 1}, logOf(0.3, 0.45, 0.25), []float64{0.3, 0.45, 0.25}},
		{"top-p zero value keeps all", Sampling{Temperature: 1}, logOf(1e-30, 1-1e-30), []float64{1e-30, 1 - 1e-30}},
		// ties: the higher position comes first in the ascending order, so
		// is removed first: 1 (0.25), then 0 (cum 0.5), then 2
		{"top-p ties", Sampling{Temperature: 1, TopP: 0.6}, logOf(0.25, 0.25, 0.5), []float64{1.0 / 3, 0, 2.0 / 3}},
		// top-p over what top-k left: 0.2, 0.3, 0.4 renormalised to
		// 2/9, 3/9, 4/9; cumulative 2/9 ≤ 0.3 removed
		{"top-k then top-p", Sampling{Temperature: 1, TopK: 3, TopP: 0.7}, logOf(0.1, 0.2, 0.3, 0.4), []float64{0, 0, 3.0 / 7, 4.0 / 7}},
		{"greedy is one-hot", Sampling{TopK: 2, TopP: 0.5}, logOf(0.1, 0.4, 0.4, 0.1), []float64{0, 1, 0, 0}},
		{"a temperature tiny beside the gaps", Sampling{Temperature: 1e-300}, []float64{1, 2, 3}, []float64{0, 0, 1}},
		{"huge logits", Sampling{Temperature: 1}, []float64{1e308, 1e308}, []float64{0.5, 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.s.Probs(tt.logits)
			if err != nil {
				t.Fatal(err)
			}
			if !near(got, tt.want, 1e-12) {
				t.Errorf("Probs = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestProbsErrors: rows that nothing can be drawn from.
func TestProbsErrors(t *testing.T) {
	inf := math.Inf(1)
	tests := []struct {
		row  []float64
		want string
	}{
		{[]float64{1, math.NaN(), 2}, "the logits hold a NaN (the first at token 1)"},
		{[]float64{1, 2, inf}, "the logits hold a +Inf (the first at token 2)"},
		{[]float64{-inf, -inf}, "the logits are all -Inf (2 values): every token is masked"},
	}
	for _, s := range []Sampling{{}, {Temperature: 0.7, TopK: 1}} {
		for _, tt := range tests {
			_, err := s.Probs(tt.row)
			var re *RowError
			if err == nil || err.Error() != tt.want || !errors.As(err, &re) {
				t.Errorf("%v: Probs(%v) = %v, want %q", s, tt.row, err, tt.want)
			}
		}
	}
}

func TestSamplingCheck(t *testing.T) {
	tests := []struct {
		s    Sampling
		want string // "" for none
	}{
		{Sampling{}, ""},
		{Sampling{Temperature: 0.7, TopK: 40, TopP: 0.9, Seed: 3}, ""},
		{Sampling{Temperature: 1, TopP: 1}, ""},
		{Sampling{Temperature: -0.1}, "temperature -0.1: want 0 (greedy) or a positive number"},
		{Sampling{Temperature: math.Inf(1)}, "temperature +Inf"},
		{Sampling{Temperature: math.NaN()}, "temperature NaN"},
		{Sampling{Temperature: 1, TopK: -1}, "top-k -1: want 0 (off)"},
		{Sampling{Temperature: 1, TopP: 1.5}, "top-p 1.5: want a probability in (0, 1]"},
		{Sampling{Temperature: 1, TopP: -0.5}, "top-p -0.5"},
	}
	for _, tt := range tests {
		err := tt.s.Check()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)) {
			t.Errorf("%+v: %v, want %q", tt.s, err, tt.want)
		}
	}
}

// TestPick checks the inverse CDF: in position order, over the tokens of
// nonzero probability, and the last of them where u passes them all.
func TestPick(t *testing.T) {
	p := []float64{0.25, 0, 0.5, 0.25, 0}
	tests := []struct {
		u    float64
		want int
	}{{0, 0}, {0.2499, 0}, {0.25, 2}, {0.7499, 2}, {0.75, 3}, {0.999999, 3}, {1, 3}}
	for _, tt := range tests {
		if got := Pick(p, tt.u); got != tt.want {
			t.Errorf("Pick(%v, %v) = %d, want %d", p, tt.u, got, tt.want)
		}
	}
}

// pcgFirst is the first output of a PCG-DXSM generator of state
// (hi, lo), written from the algorithm (a 128-bit LCG step, then the
// double xorshift multiply of the new state) rather than math/rand/v2:
// what Sampling.Uniform documents.
func pcgFirst(hi, lo uint64) uint64 {
	const mulHi, mulLo = 2549297995355413924, 4865540595714422341
	const incHi, incLo = 6364136223846793005, 1442695040888963407
	h, l := bits.Mul64(lo, mulLo)
	h += hi*mulLo + lo*mulHi
	l, c := bits.Add64(l, incLo, 0)
	h, _ = bits.Add64(h, incHi, c)
	h ^= h >> 32
	h *= 0xda942042e4dd58b5
	h ^= h >> 48
	return h * (l | 1)
}

// TestUniform checks the documented derivation of the uniforms (which
// python/hf_sampling.py repeats) and that they depend on the seed, the
// sequence and the token alone.
func TestUniform(t *testing.T) {
	seen := map[float64]string{}
	for _, seed := range []uint64{0, 7, 1 << 63} {
		for _, seq := range []int{0, 1, 2, 300} {
			for _, k := range []int{0, 1, 2, 4095} {
				u := Sampling{Temperature: 1, Seed: seed}.Uniform(seq, k)
				want := float64(pcgFirst(seed, uint64(seq)<<32|uint64(k))>>11) / (1 << 53)
				key := fmt.Sprint(seed, seq, k)
				if u != want {
					t.Errorf("Uniform %s = %v, want %v", key, u, want)
				}
				if u < 0 || u >= 1 {
					t.Errorf("Uniform %s = %v, outside [0, 1)", key, u)
				}
				if other, ok := seen[u]; ok {
					t.Errorf("Uniform %s = Uniform %s = %v", key, other, u)
				}
				seen[u] = key
			}
		}
	}
}

// chiSquare returns Pearson's statistic of counts against probs (over the
// tokens of nonzero probability) and its degrees of freedom; a count of a
// token of zero probability makes it +Inf.
func chiSquare(counts []int, probs []float64) (float64, int) {
	n := 0
	for _, c := range counts {
		n += c
	}
	x, df := 0.0, -1
	for t, p := range probs {
		if p == 0 {
			if counts[t] > 0 {
				return math.Inf(1), 0
			}
			continue
		}
		e := p * float64(n)
		x += (float64(counts[t]) - e) * (float64(counts[t]) - e) / e
		df++
	}
	return x, df
}

// chiCritical is the chi-square statistic that df degrees of freedom
// exceed with probability about 1e-4 (Wilson and Hilferty's cube).
func chiCritical(df int) float64 {
	const z = 3.719 // the standard normal's 1 - 1e-4 quantile
	d := float64(df)
	c := 1 - 2/(9*d) + z*math.Sqrt(2/(9*d))
	return d * c * c * c
}

// TestSampleDistribution draws many tokens from fixed logits, over the
// tokens of a sequence, over sequences and over seeds, and checks by a
// chi-square test that they follow the filtered softmax, and that no
// filtered token is ever drawn. The draws are deterministic: this fails
// only where the sampler is biased (or a correct sampler lands in the
// 1e-4 tail, which these seeds do not).
func TestSampleDistribution(t *testing.T) {
	logits := []float64{0.3, -1.2, 2.0, 1.1, -0.4, 1.9, -3, 0.8}
	const n = 20000
	for _, s := range []Sampling{
		{Temperature: 1, Seed: 1},
		{Temperature: 0.7, TopK: 5, Seed: 2},
		{Temperature: 1.3, TopP: 0.8, Seed: 3},
		{Temperature: 0.9, TopK: 6, TopP: 0.9, Seed: 4},
	} {
		probs, err := s.Probs(logits)
		if err != nil {
			t.Fatal(err)
		}
		for _, how := range []struct {
			name string
			draw func(i int) (int, error)
		}{
			{"over the tokens of a sequence", func(i int) (int, error) { return s.Sample(logits, 1, i) }},
			{"over sequences", func(i int) (int, error) { return s.Sample(logits, i, 4) }},
			{"over seeds", func(i int) (int, error) {
				s2 := s
				s2.Seed = uint64(i) * 1000003
				return s2.Sample(logits, 0, 0)
			}},
		} {
			counts := make([]int, len(logits))
			for i := range n {
				tok, err := how.draw(i)
				if err != nil {
					t.Fatal(err)
				}
				counts[tok]++
			}
			x, df := chiSquare(counts, probs)
			if x > chiCritical(df) {
				t.Errorf("%v, %s: counts %v for probabilities %v: chi-square %.1f over %d degrees of freedom, beyond %.1f",
					s, how.name, counts, probs, x, df, chiCritical(df))
			}
		}
	}
	// The test has teeth: a sampler that drew from the unfiltered softmax,
	// or with a slightly skewed uniform, fails it.
	s := Sampling{Temperature: 0.7, TopK: 5, Seed: 2}
	probs, _ := s.Probs(logits)
	counts := make([]int, len(logits))
	for i := range n {
		u := s.Uniform(1, i)
		counts[Pick(probs, u*u*0.1+u*0.9)]++
	}
	if x, df := chiSquare(counts, probs); x <= chiCritical(df) {
		t.Errorf("a skewed uniform passes: chi-square %.1f over %d", x, df)
	}
	raw, _ := Sampling{Temperature: 0.7}.Probs(logits)
	counts = make([]int, len(logits))
	for i := range n {
		counts[Pick(raw, s.Uniform(1, i))]++
	}
	if x, _ := chiSquare(counts, probs); !math.IsInf(x, 1) {
		t.Errorf("draws from the unfiltered softmax pass: chi-square %.1f", x)
	}
}

// fakeLM is a LogitsRunner of B sequences over V tokens whose logits for
// a sequence depend on its last token and the position alone, not on b
// nor the batch: a sequence draws the same whatever the batch holds.
type fakeLM struct {
	b, v, p int
	calls   int // runs
	asked   int // Logits calls
	logits  *te.Array
	noNext  bool
}

func (f *fakeLM) Run(model string, in map[string]*te.Array) (*te.Array, error) {
	f.calls++
	f.logits = te.NewArray(te.F32, []int{f.b, f.v})
	next := te.NewArray(te.I32, []int{f.b})
	for b := range f.b {
		last, pos := 0.0, float64(f.p-1)
		if model == "prefill" {
			last = in[IDs].Data[b*f.p+f.p-1]
		} else {
			last, pos = in[IDs].Data[b], in[Pos].Data[b]
		}
		row := f.logits.Data[b*f.v : (b+1)*f.v]
		for t := range row {
			row[t] = math.Sin(float64(t)*1.7+last*0.9+pos*0.3) * 2
		}
		next.Data[b] = float64(Argmax(row))
	}
	if f.noNext {
		return nil, nil
	}
	return next, nil
}

func (f *fakeLM) Logits() (*te.Array, error) {
	f.asked++
	return f.logits, nil
}

// runLoop runs a Loop of the fake over a prompt of B sequences, each
// sequence b's prompt [b % 3, 1, 2].
func runLoop(t *testing.T, f *fakeLM, l Loop, steps int) *Result {
	t.Helper()
	prompt := te.NewArray(te.I32, []int{f.b, f.p})
	for b := range f.b {
		prompt.Data[b*f.p] = float64(b % 3)
		prompt.Data[b*f.p+1], prompt.Data[b*f.p+2] = 1, 2
	}
	l.Prefill, l.Decode, l.B, l.P = "prefill", "decode", f.b, f.p
	l.Label = func(step, pos int) string { return fmt.Sprintf("run %d at %d", step, pos) }
	res, err := l.Run(f, prompt, steps)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestLoopSamples checks the loop's sampling: greedy reads next alone and
// never the logits; a sampled run draws token k of sequence b as
// Sample(logits[b, :], b, k); the draws are the same for the same seed,
// differ for another, and a sequence's do not depend on the batch.
func TestLoopSamples(t *testing.T) {
	const steps = 6
	greedy := &fakeLM{b: 3, v: 16, p: 3}
	g := runLoop(t, greedy, Loop{}, steps)
	if greedy.asked != 0 {
		t.Errorf("greedy: Logits asked %d times, want never", greedy.asked)
	}
	s := Sampling{Temperature: 1.5, TopK: 12, TopP: 0.95, Seed: 11}
	f := &fakeLM{b: 3, v: 16, p: 3}
	var steps0 []Step
	res := runLoop(t, f, Loop{Sampling: s, Each: func(st Step) { steps0 = append(steps0, st) }}, steps)
	if f.asked != steps+1 {
		t.Errorf("sampling: Logits asked %d times, want %d", f.asked, steps+1)
	}
	if slices.EqualFunc(res.Tokens, g.Tokens, slices.Equal) {
		t.Errorf("sampling at temperature 1.5 gave the greedy tokens %v", g.Tokens)
	}
	// Replay: each token is the draw from the logits of its history.
	for b, toks := range res.Tokens {
		if len(toks) != steps+1 || res.Finish[b] != FinishSteps {
			t.Fatalf("sequence %d: %v (%s), want %d tokens", b, toks, res.Finish[b], steps+1)
		}
		last := float64(b % 3)
		for k, tok := range toks {
			in := map[string]*te.Array{}
			model := "decode"
			if k == 0 {
				model = "prefill"
				in[IDs] = &te.Array{DType: te.I32, Shape: []int{1, 3}, Data: []float64{last, 1, 2}}
			} else {
				in[IDs] = &te.Array{DType: te.I32, Shape: []int{1}, Data: []float64{last}}
				in[Pos] = &te.Array{DType: te.I32, Shape: []int{1}, Data: []float64{float64(3 + k - 1)}}
			}
			one := &fakeLM{b: 1, v: 16, p: 3}
			if _, err := one.Run(model, in); err != nil {
				t.Fatal(err)
			}
			want, err := s.Sample(one.logits.Data, b, k)
			if err != nil {
				t.Fatal(err)
			}
			if tok != want {
				t.Fatalf("sequence %d, token %d: %d, want the draw %d", b, k, tok, want)
			}
			if got := steps0[k].Next[b]; got != tok {
				t.Errorf("sequence %d, token %d: reported %d, kept %d", b, k, got, tok)
			}
			last = float64(tok)
		}
	}
	again := runLoop(t, &fakeLM{b: 3, v: 16, p: 3}, Loop{Sampling: s}, steps)
	if !slices.EqualFunc(again.Tokens, res.Tokens, slices.Equal) {
		t.Errorf("the same seed twice: %v, then %v", res.Tokens, again.Tokens)
	}
	other := s
	other.Seed = 12
	if o := runLoop(t, &fakeLM{b: 3, v: 16, p: 3}, Loop{Sampling: other}, steps); slices.EqualFunc(o.Tokens, res.Tokens, slices.Equal) {
		t.Errorf("seeds 11 and 12 draw the same %v", o.Tokens)
	}
	// Sequences 0 and 1 alone, in a batch of 2, then of 6 (whose 0 and 1
	// have the same prompts as here).
	for _, b := range []int{2, 6} {
		r := runLoop(t, &fakeLM{b: b, v: 16, p: 3}, Loop{Sampling: s}, steps)
		if !slices.EqualFunc(r.Tokens[:2], res.Tokens[:2], slices.Equal) {
			t.Errorf("batch of %d: sequences 0 and 1 drew %v, in a batch of 3 %v", b, r.Tokens[:2], res.Tokens[:2])
		}
	}
}

// TestLoopStops checks the end-of-sequence tokens and Stop: a sequence
// ends at its first, the token kept; later runs report NoToken for it,
// feed it its last token and ignore its outputs; the loop ends when every
// sequence has ended.
func TestLoopStops(t *testing.T) {
	const steps = 8
	f := &fakeLM{b: 3, v: 16, p: 3}
	free := runLoop(t, f, Loop{}, steps)
	// Pick an EOS that sequence 0 gives first at token 2, and see where
	// the others give it.
	eos := free.Tokens[0][2]
	if slices.Contains(free.Tokens[0][:2], eos) {
		t.Fatalf("sequence 0's tokens %v: token 2 is not its first %d", free.Tokens[0], eos)
	}
	var reported []Step
	f = &fakeLM{b: 3, v: 16, p: 3}
	res := runLoop(t, f, Loop{EOS: []int{eos}, Each: func(s Step) { reported = append(reported, s) }}, steps)
	longest := 0
	for b, toks := range res.Tokens {
		want := free.Tokens[b]
		finish := FinishSteps
		if i := slices.Index(want, eos); i >= 0 {
			want, finish = want[:i+1], FinishEOS
		}
		if !slices.Equal(toks, want) || res.Finish[b] != finish {
			t.Errorf("sequence %d: %v (%s), want %v (%s)", b, toks, res.Finish[b], want, finish)
		}
		longest = max(longest, len(want))
		for k, s := range reported {
			if got := s.Next[b]; k < len(want) && got != want[k] || k >= len(want) && got != NoToken {
				t.Errorf("sequence %d: run %d reported %d", b, k, got)
			}
		}
	}
	if len(reported) != longest || len(res.Steps) != longest-1 || f.calls != longest {
		t.Errorf("%d runs reported, %d step times, %d runs: want %d runs, until the last sequence ended", len(reported), len(res.Steps), f.calls, longest)
	}
	// All end at the prefill: no decode step runs.
	f = &fakeLM{b: 3, v: 16, p: 3}
	all := []int{free.Tokens[0][0], free.Tokens[1][0], free.Tokens[2][0]}
	res = runLoop(t, f, Loop{EOS: all}, steps)
	if f.calls != 1 || len(res.Steps) != 0 || !slices.Equal(res.Finish, []Finish{FinishEOS, FinishEOS, FinishEOS}) {
		t.Errorf("every sequence ended at the prefill: %d runs, %v", f.calls, res.Finish)
	}
	// Stop: sequence 1 after 3 tokens; Stop sees each token and the
	// tokens so far.
	res = runLoop(t, &fakeLM{b: 3, v: 16, p: 3}, Loop{Stop: func(seq int, toks []int) bool { return seq == 1 && len(toks) == 3 }}, steps)
	if len(res.Tokens[1]) != 3 || res.Finish[1] != FinishStop || len(res.Tokens[0]) != steps+1 || res.Finish[0] != FinishSteps {
		t.Errorf("Stop at 3 tokens of sequence 1: %v, %v", res.Tokens, res.Finish)
	}
	// Sampling with an end: the sampled tokens stop as the greedy do.
	s := Sampling{Temperature: 2, Seed: 5}
	sampled := runLoop(t, &fakeLM{b: 3, v: 16, p: 3}, Loop{Sampling: s}, steps)
	end := sampled.Tokens[2][3]
	i := slices.Index(sampled.Tokens[2], end)
	res = runLoop(t, &fakeLM{b: 3, v: 16, p: 3}, Loop{Sampling: s, EOS: []int{end}}, steps)
	if !slices.Equal(res.Tokens[2], sampled.Tokens[2][:i+1]) {
		t.Errorf("sampled, eos %d: %v, want %v", end, res.Tokens[2], sampled.Tokens[2][:i+1])
	}
}

// plainRunner is a Runner that gives no logits.
type plainRunner struct{ f *fakeLM }

func (p plainRunner) Run(model string, in map[string]*te.Array) (*te.Array, error) {
	return p.f.Run(model, in)
}

// TestLoopErrors: sampling without logits, a row that cannot be drawn
// from, a bad Sampling.
func TestLoopErrors(t *testing.T) {
	l := Loop{Prefill: "prefill", Decode: "decode", B: 1, P: 3, Label: func(step, pos int) string { return fmt.Sprint("run ", step) },
		Sampling: Sampling{Temperature: 1}}
	prompt := te.NewArray(te.I32, []int{1, 3})
	if _, err := l.Run(plainRunner{&fakeLM{b: 1, v: 4, p: 3}}, prompt, 2); err == nil || !strings.Contains(err.Error(), "which this Runner does not give") {
		t.Errorf("sampling a Runner without logits: %v", err)
	}
	nan := &nanLM{fakeLM: fakeLM{b: 2, v: 4, p: 3}}
	l.B = 2
	_, err := l.Run(nan, te.NewArray(te.I32, []int{2, 3}), 2)
	if want := "run 0: sequence 1: the logits hold a NaN (the first at token 2)"; err == nil || err.Error() != want {
		t.Errorf("a NaN at step 0: %v, want %q", err, want)
	}
	l.Sampling.TopP = 2
	if _, err := l.Run(nan, te.NewArray(te.I32, []int{2, 3}), 2); err == nil || !strings.Contains(err.Error(), "top-p 2") {
		t.Errorf("top-p 2: %v", err)
	}
	l.Sampling = Sampling{}
	bad := &fakeLM{b: 2, v: 4, p: 3, noNext: true}
	if _, err := l.Run(bad, te.NewArray(te.I32, []int{2, 3}), 2); err == nil || !strings.Contains(err.Error(), "no next token") {
		t.Errorf("no next: %v", err)
	}
}

// nanLM gives sequence 1 a NaN at token 2 in the first decode step.
type nanLM struct{ fakeLM }

func (n *nanLM) Logits() (*te.Array, error) {
	a, _ := n.fakeLM.Logits()
	if n.calls == 2 {
		a.Data[n.v+2] = math.NaN()
	}
	return a, nil
}

// TestGenerateWithSamples runs the toy pair on the reference evaluator
// through GenerateWith: sampled tokens that are the draws from the
// logits Host gives, and the plan's checks of sampling and EOS.
func TestGenerateWithSamples(t *testing.T) {
	pre, dec := pair(t, pairSource(t))
	pl, err := NewPlan(pre, dec)
	if err != nil {
		t.Fatal(err)
	}
	emb := te.NewArray(te.F32, []int{5, 4})
	for i := range emb.Data {
		emb.Data[i] = math.Sin(float64(i)) * 0.7
	}
	var logits [][]float64
	eval := func(p *te.Program, feeds map[string]*te.Array) (map[string]*te.Array, error) {
		outs, err := te.Evaluate(p, feeds, te.EvalOptions{})
		if err == nil {
			logits = append(logits, outs["logits"].Data)
		}
		return outs, err
	}
	h, err := NewHost(pl, map[string]*te.Array{"emb": emb}, eval)
	if err != nil {
		t.Fatal(err)
	}
	prompt := &te.Array{DType: te.I32, Shape: []int{2, 3}, Data: []float64{4, 3, 2, 1, 0, 4}}
	s := Sampling{Temperature: 3, Seed: 1}
	res, err := GenerateWith(h, pl, prompt, Options{Steps: 4, Sampling: s})
	if err != nil {
		t.Fatal(err)
	}
	for b, toks := range res.Tokens {
		for k, tok := range toks {
			want, err := s.Sample(logits[k][b*5:(b+1)*5], b, k)
			if err != nil || tok != want {
				t.Errorf("sequence %d token %d: %d, want %d (%v)", b, k, tok, want, err)
			}
		}
	}
	for _, tt := range []struct {
		o    Options
		want string
	}{
		{Options{Steps: 2, EOS: []int{5}}, "end-of-sequence token 5 is not in the vocabulary: the vocabulary is [0, 5)"},
		{Options{Steps: 2, EOS: []int{-1}}, "end-of-sequence token -1"},
		{Options{Steps: 2, Sampling: Sampling{Temperature: -1}}, "temperature -1"},
	} {
		if _, err := GenerateWith(h, pl, prompt, tt.o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.o, err, tt.want)
		}
	}
	// A decode step whose next is not an argmax of logits cannot sample.
	src := strings.Replace(pairSource(t), "next[b] = argmax[v](logits[b, v])\n  update kc[b, pos[b], e]", "next[b] = ids[b]\n  update kc[b, pos[b], e]", 1)
	pl2, err := NewPlan(pair(t, src))
	if err != nil {
		t.Fatal(err)
	}
	if err := pl2.CheckSampling(s); err == nil || !strings.Contains(err.Error(), "model decode's next is not the argmax of a tensor of logits") {
		t.Errorf("CheckSampling without decode logits: %v", err)
	}
	if err := pl2.CheckSampling(Sampling{}); err != nil {
		t.Errorf("greedy needs no logits: %v", err)
	}
}
