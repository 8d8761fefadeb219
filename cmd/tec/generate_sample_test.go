package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tec/backend/kir"
	"tec/generate"
	"tec/internal/tensorio"
	"tec/internal/testkit/tooltest"
)

// sampledJSON is what tec generate --json prints, with the fields of
// sampling and ending.
type sampledJSON struct {
	generateJSON
	Finish   []string           `json:"finish"`
	Sampling *generate.Sampling `json:"sampling"`
	EOS      []int              `json:"eos"`
}

func runSampledJSON(t *testing.T, args ...string) sampledJSON {
	t.Helper()
	code, out, stderr := runTec(t, append([]string{"generate", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("tec generate %s: status %d\n%s%s", strings.Join(args, " "), code, out, stderr)
	}
	var g sampledJSON
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return g
}

// llamaSampling is the sampling of the tests on the tiny Llama: hot
// enough to leave the greedy path, with both filters on.
var llamaSampling = []string{"--temperature", "1.5", "--top-k", "20", "--top-p", "0.9"}

// TestGenerateSampling samples the tiny Llama on the reference, in the
// simulator at -O4 and through tec-cuda on the fake GPU (the logits
// copied back each run, the draws made in its loop): the same tokens on
// all three, not the greedy ones; and the end-of-sequence tokens end each
// sequence at its first, on the reference and on the GPU alike (one
// sequence ends there, the other runs every step).
func TestGenerateSampling(t *testing.T) {
	tiny := llamaTiny(t)
	args := append([]string{llamaFile, "--fill", "random", "--seed", "3", "--steps", "5"}, tiny...)
	greedy := runSampledJSON(t, args...)
	ref := runSampledJSON(t, append(args, llamaSampling...)...)
	if slices.EqualFunc(ref.Tokens, greedy.Tokens, slices.Equal) {
		t.Fatalf("sampling gave the greedy tokens %v", greedy.Tokens)
	}
	if s := ref.Sampling; s == nil || *s != (generate.Sampling{Temperature: 1.5, TopK: 20, TopP: 0.9, Seed: 3}) || greedy.Sampling != nil {
		t.Errorf("sampling %+v (greedy %+v)", s, greedy.Sampling)
	}
	if !slices.Equal(ref.Finish, []string{"steps", "steps"}) || len(ref.StepMS) != 5 {
		t.Errorf("finish %v, %d step times", ref.Finish, len(ref.StepMS))
	}
	sim := runSampledJSON(t, append(append(args, llamaSampling...), "--device", "sim", "-O4", "--race=false")...)
	if !slices.EqualFunc(sim.Tokens, ref.Tokens, slices.Equal) {
		t.Errorf("sim -O4 drew %v, ref %v", sim.Tokens, ref.Tokens)
	}

	// An end token: sequence 0's third, which it has not given before.
	eos := ref.Tokens[0][2]
	if slices.Contains(ref.Tokens[0][:2], eos) {
		t.Fatalf("sequence 0's tokens %v: the third is not new", ref.Tokens[0])
	}
	ended := runSampledJSON(t, append(append(args, llamaSampling...), "--eos", "63,"+itoa(eos))...)
	wantEnd := func(toks []int) ([]int, string) {
		if i := slices.IndexFunc(toks, func(x int) bool { return x == eos || x == 63 }); i >= 0 {
			return toks[:i+1], "eos"
		}
		return toks, "steps"
	}
	longest := 0
	for b, toks := range ref.Tokens {
		want, finish := wantEnd(toks)
		if !slices.Equal(ended.Tokens[b], want) || ended.Finish[b] != finish {
			t.Errorf("--eos %d: sequence %d %v (%s), want %v (%s)", eos, b, ended.Tokens[b], ended.Finish[b], want, finish)
		}
		longest = max(longest, len(want))
	}
	if len(ended.StepMS) != longest-1 || !slices.Equal(ended.EOS, []int{63, eos}) {
		t.Errorf("--eos: %d step times, want %d; eos %v", len(ended.StepMS), longest-1, ended.EOS)
	}
	if !slices.Equal(ended.Finish, []string{"eos", "steps"}) {
		t.Fatalf("--eos: finish %v: want sequence 0 to end and 1 to run every step, or the GPU's check below is weaker", ended.Finish)
	}

	if testing.Short() {
		t.Skip("-short: the fake GPU simulates the tiny Llama's steps")
	}
	tooltest.Require(t, "LLVM (Debian: llvm)", "llc", "llc-16")
	mods := [2]*kir.Module{}
	for i, name := range []string{"prefill", "decode"} {
		mods[i] = buildModule(t, llamaFile, append(append([]string{}, tiny...), "--model", name), 4, "f32")
	}
	code, stdout, stderr := runTecCUDA(t, map[string]string{"TEC_CUDA": os.Args[0]}, fakeTecCUDAGenerate(t, mods[0], mods[1], nil),
		append(append(append([]string{"generate", "--json", "--device", "cuda", "-O4"}, args...), llamaSampling...), "--eos", "63,"+itoa(eos))...)
	if code != exitOK {
		t.Fatalf("cuda: status %d\n%s%s", code, stdout, stderr)
	}
	var got sampledJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got.Tokens, ended.Tokens, slices.Equal) || !slices.Equal(got.Finish, ended.Finish) || len(got.StepMS) != len(ended.StepMS) {
		t.Errorf("cuda: tokens %v (%v, %d steps), want the reference's %v (%v, %d)", got.Tokens, got.Finish, len(got.StepMS),
			ended.Tokens, ended.Finish, len(ended.StepMS))
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// TestGenerateStreamLines checks --json --stream: a JSON line per run as
// it ends, -1 for a sequence that had ended, then the summary, whose
// tokens the lines give; and a single sequence's line of text ends at its
// end token.
func TestGenerateStreamLines(t *testing.T) {
	tiny := llamaTiny(t)
	args := append([]string{"generate", llamaFile, "--fill", "random", "--seed", "3", "--steps", "5", "--json"}, tiny...)
	ref := runSampledJSON(t, append(args[1:len(args)], llamaSampling...)...)
	eos := ref.Tokens[1][1]
	var out writeLog
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &strings.Builder{}, getenv: func(string) string { return "" }}
	if code := e.main(append(append(args, llamaSampling...), "--stream", "--eos", itoa(eos))); code != exitOK {
		t.Fatalf("status %d\n%s", code, out.String())
	}
	var lines []streamLine
	for _, w := range out.writes {
		if !strings.HasPrefix(w, `{"step":`) {
			continue
		}
		var l streamLine
		if err := json.Unmarshal([]byte(w), &l); err != nil || !strings.HasSuffix(w, "}\n") {
			t.Fatalf("not a JSON line: %q (%v)", w, err)
		}
		lines = append(lines, l)
	}
	text := out.String()
	var sum sampledJSON
	if err := json.Unmarshal([]byte(text[strings.LastIndex(text, "}\n{")+2:]), &sum); err != nil {
		t.Fatalf("no summary after the lines: %v\n%s", err, text)
	}
	if len(lines) != len(sum.StepMS)+1 || len(lines) == 0 || lines[0].Step != -1 {
		t.Fatalf("%d lines for %d runs: %+v", len(lines), len(sum.StepMS)+1, lines)
	}
	for b, toks := range sum.Tokens {
		for k, l := range lines {
			want := -1
			if k < len(toks) {
				want = toks[k]
			}
			if l.Step != k-1 || l.Tokens[b] != want {
				t.Errorf("line %d: %+v, want step %d and token %d of sequence %d", k, l, k-1, want, b)
			}
		}
	}
	if i := slices.Index(ref.Tokens[1], eos); !slices.Equal(sum.Tokens[1], ref.Tokens[1][:i+1]) {
		t.Errorf("sequence 1 with --eos %d: %v, want %v", eos, sum.Tokens[1], ref.Tokens[1][:i+1])
	}

	// One sequence, as text: the line of tokens grows, and ends at the
	// end token, printed once.
	one := []string{"generate", llamaFile, "--fill", "random", "--seed", "3", "--steps", "5", "-D", "B=1"}
	for _, f := range tiny {
		if !strings.HasPrefix(f, "B=") {
			one = append(one, f)
		} else {
			one = one[:len(one)-1]
		}
	}
	first := runSampledJSON(t, append(one[1:], llamaSampling...)...)
	end := first.Tokens[0][3]
	i := slices.Index(first.Tokens[0], end)
	code, stdout, stderr := runTec(t, append(append(one, llamaSampling...), "--eos", itoa(end))...)
	if code != exitOK {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	want := "sequence 0:"
	for _, tok := range first.Tokens[0][:i+1] {
		want += " " + itoa(tok)
	}
	if strings.Count(stdout, "sequence 0:") != 1 || !strings.Contains(stdout, want+"\n") {
		t.Errorf("want the line %q once:\n%s", want, stdout)
	}
	if !strings.Contains(stdout, "sampling at temperature 1.5, top-k 20, top-p 0.9, seed 3, ending at token "+itoa(end)+"\n") {
		t.Errorf("the header does not say the sampling and the end:\n%s", stdout)
	}
	code, _, stderr = runTec(t, "generate", llamaFile, "--fill", "ones", "--stream")
	if code != exitUsage || !strings.Contains(stderr, "--stream prints JSON lines, with --json only") {
		t.Errorf("--stream without --json: status %d\n%s", code, stderr)
	}
}

// TestSampleHF checks tec's sampling against python/hf_sampling.py, an
// independent NumPy implementation of Hugging Face's temperature, top-k
// and top-p warpers and of tec's documented draw: on the tiny Llama's
// prefill logits (tec run --outputs) and on rows made to hit the edges
// (ties at the top, at the k-th and at the top-p cut, masks, one token
// far ahead, a flat row, large logits), over a grid of temperatures,
// top-k and top-p, the filtered distributions must agree to 1e-6, the
// uniforms exactly, and each draw; and the first token tec generate drew
// for each sequence must be the script's draw from those logits.
func TestSampleHF(t *testing.T) {
	if out, err := exec.Command(pythonWithTorch, "-c", "import numpy").CombinedOutput(); err != nil {
		msg := pythonWithTorch + " cannot import numpy (Debian's python3-numpy; .ci/run installs it): " + strings.TrimSpace(string(out))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	tiny := llamaTiny(t)
	dir := t.TempDir()
	outs := filepath.Join(dir, "prefill.npz")
	if code, _, stderr := runTec(t, append([]string{"run", llamaFile, "--model", "prefill", "--fill", "random", "--seed", "3", "--outputs", outs}, tiny...)...); code != exitOK {
		t.Fatalf("tec run: status %d\n%s", code, stderr)
	}
	arrays, err := tensorio.ReadNPZ(outs)
	if err != nil {
		t.Fatal(err)
	}
	logits := arrays["logits"]
	v := logits.Shape[1]
	rows := [][]float64{logits.Data[:v], logits.Data[v : 2*v]}
	inf := math.Inf(-1)
	rows = append(rows,
		[]float64{2, 2, 1, 0.5, 2, -1, 0, 1},                     // ties at the top
		[]float64{3, 1, 1, 1, 0.2, 1, -2, 1},                     // ties at the k-th
		[]float64{math.Log(0.25), math.Log(0.25), math.Log(0.5)}, // ties at the top-p cut
		[]float64{inf, 0.3, inf, 1.2, -0.7, inf, 2.5, 0},         // masked
		[]float64{0, 0.1, 20, -0.3, 0.2, 0, 0.05, -1},            // one far ahead
		[]float64{1.5, 1.5, 1.5, 1.5, 1.5, 1.5},                  // flat
		[]float64{3000, -2500, 2999.5, 2998, 0, -10000},          // large
	)
	type draw struct {
		Seed  uint64  `json:"seed"`
		Seq   int     `json:"seq"`
		K     int     `json:"k"`
		U     float64 `json:"u"`
		Token int     `json:"token"`
	}
	type sampleCase struct {
		Row         int       `json:"row"`
		Temperature float64   `json:"temperature"`
		TopK        int       `json:"top_k"`
		TopP        float64   `json:"top_p"`
		Probs       []float64 `json:"probs"`
		Draws       []draw    `json:"draws"`
	}
	var cases []sampleCase
	for r, row := range rows {
		for _, temp := range []float64{0.5, 1, 1.7} {
			for _, k := range []int{0, 1, 3, 20} {
				for _, p := range []float64{1, 0.9, 0.5, 1e-6} {
					s := generate.Sampling{Temperature: temp, TopK: k, TopP: p}
					probs, err := s.Probs(row)
					if err != nil {
						t.Fatal(err)
					}
					c := sampleCase{Row: r, Temperature: temp, TopK: k, TopP: p, Probs: probs}
					for _, seed := range []uint64{0, 5} {
						for seq := range 2 {
							for tok := range 3 {
								s.Seed = seed
								got, err := s.Sample(row, seq, tok)
								if err != nil {
									t.Fatal(err)
								}
								c.Draws = append(c.Draws, draw{Seed: seed, Seq: seq, K: tok, U: s.Uniform(seq, tok), Token: got})
							}
						}
					}
					cases = append(cases, c)
				}
			}
		}
	}
	// tec generate's first tokens, drawn from the rows tec run gave.
	g := runSampledJSON(t, append(append([]string{llamaFile, "--fill", "random", "--seed", "3", "--steps", "0"}, tiny...), llamaSampling...)...)
	s := generate.Sampling{Temperature: 1.5, TopK: 20, TopP: 0.9, Seed: 3}
	for b := range 2 {
		probs, err := s.Probs(rows[b])
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, sampleCase{Row: b, Temperature: 1.5, TopK: 20, TopP: 0.9, Probs: probs,
			Draws: []draw{{Seed: 3, Seq: b, K: 0, U: s.Uniform(b, 0), Token: g.Tokens[b][0]}}})
	}
	jsonRows := make([][]*float64, len(rows))
	for r, row := range rows {
		for _, x := range row {
			if math.IsInf(x, -1) {
				jsonRows[r] = append(jsonRows[r], nil)
			} else {
				jsonRows[r] = append(jsonRows[r], &x)
			}
		}
	}
	data, err := json.Marshal(map[string]any{"rows": jsonRows, "cases": cases})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "cases.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(pythonWithTorch, "../../python/hf_sampling.py", file).CombinedOutput()
	if err != nil {
		t.Fatalf("python/hf_sampling.py: %v\n%s", err, out)
	}
	t.Logf("python/hf_sampling.py: %s", strings.TrimSpace(string(out)))
}
