package generate

import (
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"tec/internal/numeric"
	"tec/lang"
	"tec/te"
)

// pair returns the prefill and decode models of src.
func pair(t *testing.T, src string) (*te.Program, *te.Program) {
	t.Helper()
	var ps [2]*te.Program
	for i, m := range []string{"prefill", "decode"} {
		p, diags := lang.Check("pair.te", []byte(src), lang.Config{Model: m})
		if diags.HasErrors() {
			t.Fatalf("model %s:\n%v", m, diags.Error())
		}
		ps[i] = p
	}
	return ps[0], ps[1]
}

// tensorNames lists the names of ts for a message.
func tensorNames(ts []*te.Tensor) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.Name
	}
	return names(s)
}

func pairSource(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("testdata/pair.te")
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

func TestNewPlan(t *testing.T) {
	pl, err := NewPlan(pair(t, pairSource(t)))
	if err != nil {
		t.Fatal(err)
	}
	if pl.B != 2 || pl.P != 3 || pl.T != 8 || pl.TCache != "kc" || pl.TDim != 1 || pl.Vocab != 5 {
		t.Errorf("plan B %d P %d T %d (%s dim %d) vocab %d, want 2 3 8 (kc dim 1) 5", pl.B, pl.P, pl.T, pl.TCache, pl.TDim, pl.Vocab)
	}
	if tensorNames(pl.Caches) != "kc" || tensorNames(pl.Shared) != "emb" {
		t.Errorf("caches %s, shared %s; want kc and emb", tensorNames(pl.Caches), tensorNames(pl.Shared))
	}
}

// TestNewPlanErrors checks that each way two models can fail to fit the
// protocol is an error that says so.
func TestNewPlanErrors(t *testing.T) {
	tests := []struct {
		name       string
		from, to   string // replaced once in testdata/pair.te
		from2, to2 string
		want       string
	}{
		{name: "prefill without ids", from: "input ids: i32[B, P]", to: "input tok: i32[B, P]", from2: "emb[ids[b, s], e]", to2: "emb[tok[b, s], e]",
			want: "model prefill has no input ids: tec generate feeds it the prompts as ids: i32[B, P]"},
		{name: "prefill ids of rank 1", from: "input ids: i32[B, P]", to: "input ids: i32[B * P]", from2: "emb[ids[b, s], e]", to2: "emb[ids[b * P + s], e] where b in 0..B, s in 0..P",
			want: "model prefill's input ids is i32[6]"},
		{name: "decode without pos", from: "input pos: i32[B]", to: "input at: i32[B]", from2: "", to2: "",
			want: "model decode has no input pos"},
		{name: "decode ids of another batch", from: "model decode {\n  input ids: i32[B]", to: "model decode {\n  input ids: i32[B + 1]", from2: "x[b, e] = emb[ids[b], e]", to2: "x[b, e] = emb[ids[b], e] where b in 0..B",
			want: "model decode's input ids is i32[3]; with model prefill's 2 sequences"},
		{name: "no next", from: "  output logits, next\n}\n\nmodel decode", to: "  output logits\n}\n\nmodel decode",
			want: "model prefill has no output next"},
		{name: "next of floats", from: "next[b] = argmax[v](logits[b, v])\n  update kc[b, pos[b], e]", to: "next[b] = max[v](logits[b, v])\n  update kc[b, pos[b], e]",
			want: "model decode's output next is f32[2]"},
		{name: "decode updates nothing", from: "  update kc[b, pos[b], e] = x[b, e]\n", to: "",
			want: "model decode updates no input in place"},
		{name: "different caches", from: "model prefill {\n  input ids: i32[B, P]\n  input kc:", to: "model prefill {\n  input ids: i32[B, P]\n  input cache:", from2: "update kc[b, s, e]", to2: "update cache[b, s, e]",
			want: "the models update different inputs in place: prefill updates cache, decode updates kc"},
		{name: "caches of other shapes", from: "model prefill {\n  input ids: i32[B, P]\n  input kc: f32[B, T, E]", to: "model prefill {\n  input ids: i32[B, P]\n  input kc: f32[B, T + 1, E]",
			want: "cache kc is f32[2, 9, 4] in model prefill but f32[2, 8, 4] in model decode"},
		{name: "shared param of other shapes", from: "model decode {\n  input ids: i32[B]\n  input pos: i32[B]\n  input kc: f32[B, T, E]\n  param emb: f32[V, E]",
			to:   "model decode {\n  input ids: i32[B]\n  input pos: i32[B]\n  input kc: f32[B, T, E]\n  param emb: f32[V + 1, E]",
			want: "param emb is f32[5, 4] in model prefill but param f32[6, 4] in model decode"},
		{name: "decode update not at pos", from: "update kc[b, pos[b], e] = x[b, e]", to: "update kc[b, ids[b] % T, e] = x[b, e]",
			want: "model decode's update of cache kc does not write the slot at pos"},
	}
	src := pairSource(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := strings.Replace(src, tt.from, tt.to, 1)
			if s == src {
				t.Fatalf("%q is not in testdata/pair.te", tt.from)
			}
			if tt.from2 != "" {
				s = strings.Replace(s, tt.from2, tt.to2, 1)
			}
			if tt.name == "decode without pos" {
				s = strings.ReplaceAll(s, "pos[b]", "at[b]")
			}
			_, err := NewPlan(pair(t, s))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewPlan: %v\nwant an error containing %q", err, tt.want)
			}
		})
	}
}

func TestCheckStepsAndPrompt(t *testing.T) {
	pl, err := NewPlan(pair(t, pairSource(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := pl.CheckSteps(5); err != nil {
		t.Errorf("3 + 5 steps in 8 positions: %v", err)
	}
	err = pl.CheckSteps(6)
	for _, want := range []string{"the prompt's 3 tokens and 6 decode steps need 9 cache positions, but the caches hold 8 (dimension 1 of kc)", "--steps 5 or fewer", "-D T=9"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckSteps(6): %v\nwant it to say %q", err, want)
		}
	}
	good := te.NewArray(te.I32, []int{2, 3})
	if err := pl.CheckPrompt(good); err != nil {
		t.Errorf("CheckPrompt(zeros): %v", err)
	}
	tests := []struct {
		a    *te.Array
		want string
	}{
		{te.NewArray(te.I32, []int{2, 4}), "the prompt is i32[2, 4], but model prefill takes the prompts as ids: i32[2, 3] (B = 2 sequences of P = 3 tokens)"},
		{te.NewArray(te.F32, []int{2, 3}), "the prompt is f32[2, 3]"},
		{&te.Array{DType: te.I32, Shape: []int{2, 3}, Data: []float64{0, 1, 2, 3, 4, 5}}, "the prompt's token 5 at [1, 2] is not in the vocabulary [0, 5)"},
	}
	for _, tt := range tests {
		if err := pl.CheckPrompt(tt.a); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckPrompt(%v): %v\nwant %q", tt.a.Shape, err, tt.want)
		}
	}
}

// recorder is a Runner that records its calls and answers next[b] =
// (ids[b] + pos[b] + b) mod 5 for the decode step, b for the prefill.
type recorder struct {
	calls []string
}

func (r *recorder) Run(model string, in map[string]*te.Array) (*te.Array, error) {
	next := te.NewArray(te.I32, []int{2})
	if model == "prefill" {
		r.calls = append(r.calls, fmt.Sprintf("prefill ids %v", in[IDs].Data))
		next.Data = []float64{0, 1}
		return next, nil
	}
	r.calls = append(r.calls, fmt.Sprintf("decode ids %v pos %v", in[IDs].Data, in[Pos].Data))
	for b := range next.Data {
		next.Data[b] = math.Mod(in[IDs].Data[b]+in[Pos].Data[b]+float64(b), 5)
	}
	return next, nil
}

// TestGenerateFeedsTheProtocol checks what Generate feeds each step: the
// prompt, then each sequence's last token at position P + i.
func TestGenerateFeedsTheProtocol(t *testing.T) {
	pl, err := NewPlan(pair(t, pairSource(t)))
	if err != nil {
		t.Fatal(err)
	}
	prompt := &te.Array{DType: te.I32, Shape: []int{2, 3}, Data: []float64{4, 3, 2, 1, 0, 4}}
	r := &recorder{}
	res, err := Generate(r, pl, prompt, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"prefill ids [4 3 2 1 0 4]",
		"decode ids [0 1] pos [3 3]", // next (0+3+0)%5 = 3, (1+3+1)%5 = 0
		"decode ids [3 0] pos [4 4]", // (3+4)%5 = 2, (0+4+1)%5 = 0
		"decode ids [2 0] pos [5 5]", // (2+5)%5 = 2, (0+5+1)%5 = 1
	}
	if !slices.Equal(r.calls, want) {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(r.calls, "\n"), strings.Join(want, "\n"))
	}
	if got := fmt.Sprint(res.Tokens); got != "[[0 3 2 2] [1 0 0 1]]" {
		t.Errorf("tokens %s, want [[0 3 2 2] [1 0 0 1]]", got)
	}
	if len(res.Steps) != 3 {
		t.Errorf("%d step times, want 3", len(res.Steps))
	}
	if _, err := Generate(r, pl, prompt, 6); err == nil {
		t.Error("Generate with 3 + 6 > 8 positions: no error")
	}
}

// TestHostCarriesTheCaches runs the toy models on the reference evaluator
// through Host: the cache the prefill writes reaches every decode step,
// each of which adds its slot, so that at the end slot t holds the
// embedding of the token at position t; and each step's next token is the
// one the decode model gives on that cache.
func TestHostCarriesTheCaches(t *testing.T) {
	pre, dec := pair(t, pairSource(t))
	pl, err := NewPlan(pre, dec)
	if err != nil {
		t.Fatal(err)
	}
	emb := numeric.NewFilled(pre.Lookup("emb"), numeric.Random, 7)
	eval := func(p *te.Program, feeds map[string]*te.Array) (map[string]*te.Array, error) {
		return te.Evaluate(p, feeds, te.EvalOptions{})
	}
	h, err := NewHost(pl, map[string]*te.Array{"emb": emb}, eval)
	if err != nil {
		t.Fatal(err)
	}
	prompt := &te.Array{DType: te.I32, Shape: []int{2, 3}, Data: []float64{4, 3, 2, 1, 0, 4}}
	const steps = 5
	res, err := Generate(h, pl, prompt, steps)
	if err != nil {
		t.Fatal(err)
	}
	kc := h.state["kc"]
	for b := range 2 {
		seq := append(slices.Clone(prompt.Data[b*3:b*3+3]), toFloats(res.Tokens[b][:steps])...)
		for pos, tok := range seq {
			for e := range 4 {
				if got, want := kc.Data[(b*8+pos)*4+e], emb.Data[int(tok)*4+e]; got != want {
					t.Fatalf("sequence %d: kc[%d, %d, %d] = %v, want the embedding of token %v, %v", b, b, pos, e, got, tok, want)
				}
			}
		}
		for pos := len(seq); pos < 8; pos++ {
			if kc.Data[(b*8+pos)*4] != 0 {
				t.Errorf("sequence %d: slot %d past the last step was written", b, pos)
			}
		}
		// The last token is the argmax over the vocabulary of the sum of
		// the embeddings of every token before it.
		var h [4]float64
		for _, tok := range seq {
			for e := range 4 {
				h[e] += emb.Data[int(tok)*4+e]
			}
		}
		best, bestV := 0, math.Inf(-1)
		for v := range 5 {
			s := 0.0
			for e := range 4 {
				s += h[e] * emb.Data[v*4+e]
			}
			if s > bestV {
				best, bestV = v, s
			}
		}
		if last := res.Tokens[b][steps]; last != best {
			t.Errorf("sequence %d: last token %d, want %d", b, last, best)
		}
	}
	if h.Last["logits"] == nil {
		t.Error("Host.Last holds no logits")
	}
	if _, err := h.Run("other", nil); err == nil {
		t.Error("Run of a model not in the plan: no error")
	}
}

func toFloats(xs []int) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

func TestNewHostNeedsEveryShared(t *testing.T) {
	pl, err := NewPlan(pair(t, pairSource(t)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewHost(pl, nil, nil); err == nil || !strings.Contains(err.Error(), "no array for param emb") {
		t.Errorf("NewHost without emb: %v", err)
	}
}

// TestCheckLogits checks which rows of logits stop a generation: a NaN
// anywhere in the row, a +Inf, or nothing but -Inf; -Inf among finite
// values is a mask, and fine.
func TestCheckLogits(t *testing.T) {
	pl, err := NewPlan(pair(t, pairSource(t)))
	if err != nil {
		t.Fatal(err)
	}
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		row1 []float64 // sequence 1's row; sequence 0's is finite
		want string    // "" for no error
	}{
		{"finite", []float64{1, 2, 3, 4, 5}, ""},
		{"masked", []float64{-inf, 2, -inf, 4, 5}, ""},
		{"all NaN", []float64{nan, nan, nan, nan, nan},
			"sequence 1: the logits it picks its next token from, logits[1, :], are all NaN (5 values): there is no greatest to pick"},
		{"some NaN", []float64{1, 2, nan, 4, nan},
			"sequence 1: the logits it picks its next token from, logits[1, :], hold 2 NaN of 5 values (the first at logits[1, 2]): the greatest of the others would be a guess"},
		{"an overflow", []float64{1, inf, 3, 4, 5},
			"sequence 1: the logits it picks its next token from, logits[1, :], hold 1 +Inf of 5 values (the first at logits[1, 1]): an overflow, not a greatest"},
		{"all masked", []float64{-inf, -inf, -inf, -inf, -inf},
			"sequence 1: the logits it picks its next token from, logits[1, :], are all -Inf (5 values): every token is masked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &te.Array{DType: te.F32, Shape: []int{2, 5}, Data: append([]float64{0, 0, 0, 0, 0}, tt.row1...)}
			for _, model := range []string{"prefill", "decode"} {
				err := pl.CheckLogits(model, a)
				if tt.want == "" {
					if err != nil {
						t.Errorf("%s: %v", model, err)
					}
					continue
				}
				if err == nil || !strings.HasPrefix(err.Error(), tt.want+hintSep) {
					t.Errorf("%s: %v\nwant %q", model, err, tt.want)
				}
			}
		})
	}
	if err := pl.CheckLogits("decode", nil); err == nil {
		t.Error("CheckLogits(nil): no error")
	}
}

// TestGenerateStopsAtTheStep checks that the error names the step and the
// sequence: the decode step at position 5 gives sequence 1 NaN logits.
func TestGenerateStopsAtTheStep(t *testing.T) {
	pre, dec := pair(t, pairSource(t))
	pl, err := NewPlan(pre, dec)
	if err != nil {
		t.Fatal(err)
	}
	emb := numeric.NewFilled(pre.Lookup("emb"), numeric.Random, 7)
	eval := func(p *te.Program, feeds map[string]*te.Array) (map[string]*te.Array, error) {
		outs, err := te.Evaluate(p, feeds, te.EvalOptions{})
		if err == nil && p.Name == "decode" && feeds[Pos].Data[0] == 5 {
			outs["logits"].Data[7] = math.NaN()
		}
		return outs, err
	}
	h, err := NewHost(pl, map[string]*te.Array{"emb": emb}, eval)
	if err != nil {
		t.Fatal(err)
	}
	prompt := &te.Array{DType: te.I32, Shape: []int{2, 3}, Data: []float64{4, 3, 2, 1, 0, 4}}
	_, err = Generate(h, pl, prompt, 4)
	want := "decode step 2 (model decode, position 5): sequence 1: the logits it picks its next token from, logits[1, :], hold 1 NaN of 5 values (the first at logits[1, 2])"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Generate: %v\nwant %q...", err, want)
	}
}

// TestGenerateNaNLlama is the configuration: examples/llama.te at
// README's tiny sizes on the reference evaluator, made NaN by a negative
// EPS (the RMS norm's square root of a negative), THETA = 0 (the rotary
// frequencies 0^(-x)) or a NaN in wte. It used to print tokens 0 0 0 0.
func TestGenerateNaNLlama(t *testing.T) {
	src, err := os.ReadFile("../examples/llama.te")
	if err != nil {
		t.Fatal(err)
	}
	tiny := map[string]string{"B": "1", "P": "8", "T": "32", "L": "2", "D": "32", "NH": "4", "NKV": "2", "FF": "64", "V": "64"}
	const all = "prefill (model prefill): sequence 0: the logits it picks its next token from, logits[0, :], are all NaN (64 values)"
	tests := []struct {
		name    string
		defines map[string]string
		nanWTE  int // the row of wte set to NaN, or -1
		prompt  float64
		want    string // "" for no error
	}{
		{"finite", nil, -1, 3, ""},
		{"EPS=-1", map[string]string{"EPS": "-1"}, -1, 3, all},
		{"THETA=0", map[string]string{"THETA": "0"}, -1, 3, all},
		{"NaN in a prompt token's row of wte", nil, 3, 3, all},
		{"NaN in another row of wte", nil, 9, 3,
			"prefill (model prefill): sequence 0: the logits it picks its next token from, logits[0, :], hold 1 NaN of 64 values (the first at logits[0, 9])"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defines := maps.Clone(tiny)
			maps.Copy(defines, tt.defines)
			var ps [2]*te.Program
			for i, m := range []string{"prefill", "decode"} {
				p, diags := lang.Check("llama.te", src, lang.Config{Model: m, Defines: defines})
				if diags.HasErrors() {
					t.Fatalf("model %s:\n%v", m, diags.Error())
				}
				ps[i] = p
			}
			pl, err := NewPlan(ps[0], ps[1])
			if err != nil {
				t.Fatal(err)
			}
			if pl.Logits["prefill"] == nil || pl.Logits["decode"] == nil {
				t.Fatalf("no logits found: %v", pl.Logits)
			}
			shared := map[string]*te.Array{}
			for _, s := range pl.Shared {
				shared[s.Name] = numeric.NewFilled(s, numeric.Random, 0)
			}
			if tt.nanWTE >= 0 {
				wte := shared["wte"]
				d := wte.Shape[1]
				for i := range d {
					wte.Data[tt.nanWTE*d+i] = math.NaN()
				}
			}
			eval := func(p *te.Program, feeds map[string]*te.Array) (map[string]*te.Array, error) {
				return te.Evaluate(p, feeds, te.EvalOptions{})
			}
			h, err := NewHost(pl, shared, eval)
			if err != nil {
				t.Fatal(err)
			}
			prompt := te.NewArray(te.I32, []int{1, 8})
			for i := range prompt.Data {
				prompt.Data[i] = tt.prompt
			}
			res, err := Generate(h, pl, prompt, 3)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Tokens[0]) != 4 {
					t.Errorf("tokens %v, want 4", res.Tokens)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Generate: %v (tokens %v)\nwant %q...", err, res, tt.want)
			}
		})
	}
}

// TestOutputLogits: a model that does not output the logits its next picks
// from is checked once Plan.OutputLogits has made them an output.
func TestOutputLogits(t *testing.T) {
	src := strings.ReplaceAll(pairSource(t), "output logits, next", "output next")
	for _, output := range []bool{false, true} {
		pre, dec := pair(t, src)
		pl, err := NewPlan(pre, dec)
		if err != nil {
			t.Fatal(err)
		}
		if pl.Logits["prefill"] != pre.Lookup("logits") || pl.Logits["decode"] != dec.Lookup("logits") {
			t.Fatalf("logits %v, want each model's logits", pl.Logits)
		}
		if output {
			pl.OutputLogits()
			pl.OutputLogits() // once only
			if got := tensorNames(pre.Outputs) + "; " + tensorNames(dec.Outputs); got != "next, kc, logits; next, kc, logits" {
				t.Fatalf("outputs %s, want next, kc, logits for each model", got)
			}
		}
		emb := numeric.NewFilled(pre.Lookup("emb"), numeric.Random, 7)
		emb.Data[3*4] = math.NaN() // token 3's embedding: its logit is NaN
		eval := func(p *te.Program, feeds map[string]*te.Array) (map[string]*te.Array, error) {
			return te.Evaluate(p, feeds, te.EvalOptions{})
		}
		h, err := NewHost(pl, map[string]*te.Array{"emb": emb}, eval)
		if err != nil {
			t.Fatal(err)
		}
		prompt := &te.Array{DType: te.I32, Shape: []int{2, 3}, Data: []float64{4, 1, 2, 1, 0, 4}}
		_, err = Generate(h, pl, prompt, 2)
		const want = "prefill (model prefill): sequence 0: the logits it picks its next token from, logits[0, :], hold 1 NaN of 5 values (the first at logits[0, 3])"
		switch {
		case output && (err == nil || !strings.HasPrefix(err.Error(), want)):
			t.Errorf("with OutputLogits: %v, want %q...", err, want)
		case !output && err != nil:
			t.Errorf("without OutputLogits the logits are not seen, but: %v", err)
		}
	}
}

func TestProtocolNames(t *testing.T) {
	pl := &Plan{Caches: []*te.Tensor{{Name: "k_cache"}, {Name: "v_cache"}}}
	tests := []struct {
		name           string
		perStep, cache bool
	}{
		{IDs, true, false},
		{Pos, true, false},
		{Next, false, false},
		{"v_cache", false, true},
		{"wte", false, false},
	}
	for _, tt := range tests {
		if got := PerStep(tt.name); got != tt.perStep {
			t.Errorf("PerStep(%q) = %t, want %t", tt.name, got, tt.perStep)
		}
		if got := pl.IsCache(tt.name); got != tt.cache {
			t.Errorf("IsCache(%q) = %t, want %t", tt.name, got, tt.cache)
		}
	}
}
