package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tec/examples"
	"tec/internal/tensorio"
	"tec/te"
)

const llamaFile = "../../examples/llama.te"

// llamaTiny returns the -D flags of llama.te's tiny configuration
// (B = 2, P = 8, T = 32, V = 64).
func llamaTiny(t *testing.T) []string {
	t.Helper()
	ex, ok := examples.Lookup("llama/decode")
	if !ok {
		t.Fatal("no example llama/decode")
	}
	var defines []string
	for _, f := range ex.TinyFlags() {
		if f == "--model" {
			break
		}
		defines = append(defines, f)
	}
	return defines
}

// generateJSON is what tec generate --json prints.
type generateJSON struct {
	Prefill   string          `json:"prefill"`
	Decode    string          `json:"decode"`
	Device    string          `json:"device"`
	Tokens    [][]int         `json:"tokens"`
	PrefillMS float64         `json:"prefill_ms"`
	StepMS    []float64       `json:"step_ms"`
	Filled    []string        `json:"filled"`
	Warnings  json.RawMessage `json:"warnings"`
	Text      []string        `json:"text"`
	Finish    []string        `json:"finish"`
}

func runGenerateJSON(t *testing.T, args ...string) generateJSON {
	t.Helper()
	code, out, stderr := runTec(t, append([]string{"generate", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("tec generate %s: status %d\n%s%s", strings.Join(args, " "), code, out, stderr)
	}
	var g generateJSON
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return g
}

// TestGenerateJSON checks tec generate --json on the tiny Llama: the
// tokens of each sequence (steps + 1 of them, in the vocabulary), a time
// per step, and the same tokens from the reference and from the kernels
// in the simulator.
func TestGenerateJSON(t *testing.T) {
	tiny := llamaTiny(t)
	args := append([]string{llamaFile, "--fill", "random", "--seed", "2", "--steps", "3"}, tiny...)
	ref := runGenerateJSON(t, args...)
	if ref.Device != "ref" || ref.Prefill != "prefill" || ref.Decode != "decode" {
		t.Errorf("device %q, models %q %q", ref.Device, ref.Prefill, ref.Decode)
	}
	if len(ref.Tokens) != 2 || len(ref.StepMS) != 3 || ref.PrefillMS <= 0 {
		t.Fatalf("tokens %v, step_ms %v, prefill_ms %v: want 2 sequences, 3 steps", ref.Tokens, ref.StepMS, ref.PrefillMS)
	}
	for _, seq := range ref.Tokens {
		if len(seq) != 4 || slices.ContainsFunc(seq, func(x int) bool { return x < 0 || x >= 64 }) {
			t.Errorf("sequence %v: want 4 tokens in [0, 64)", seq)
		}
	}
	if !slices.Contains(ref.Filled, "ids") || !slices.Contains(ref.Filled, "wte") || slices.Contains(ref.Filled, "k_cache") {
		t.Errorf("filled %v: want the prompt (ids) and the params, never the caches", ref.Filled)
	}
	sim := runGenerateJSON(t, append(args, "--device", "sim", "-O4")...)
	if sim.Device != "sim" || !slices.EqualFunc(sim.Tokens, ref.Tokens, slices.Equal) {
		t.Errorf("sim -O4 tokens %v, ref %v", sim.Tokens, ref.Tokens)
	}
}

// TestGeneratePromptAndParams runs tec generate on a prompt and params
// from files: the same tokens as with them filled, since --fill random
// makes the same arrays; and a param the archive holds beyond the models'
// is a warning.
func TestGeneratePromptAndParams(t *testing.T) {
	tiny := llamaTiny(t)
	dir := t.TempDir()
	feeds := filepath.Join(dir, "feeds")
	code, _, stderr := runTec(t, append([]string{"run", llamaFile, "--model", "prefill", "--fill", "random", "--seed", "5", "--save-feeds", feeds}, tiny...)...)
	if code != exitOK {
		t.Fatalf("tec run --save-feeds: status %d\n%s", code, stderr)
	}
	params := map[string]*te.Array{}
	for _, name := range []string{"wte", "attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w_gate", "w_up", "w_down", "norm"} {
		a, err := tensorio.ReadNPYFile(filepath.Join(feeds, name+".npy"), nil)
		if err != nil {
			t.Fatal(err)
		}
		params[name] = a
	}
	params["wtf"] = params["wte"]
	npz := filepath.Join(dir, "params.npz")
	if err := tensorio.WriteNPZ(npz, params); err != nil {
		t.Fatal(err)
	}
	filled := runGenerateJSON(t, append([]string{llamaFile, "--fill", "random", "--seed", "5", "--steps", "2"}, tiny...)...)
	got := runGenerateJSON(t, append([]string{llamaFile, "--prompt", filepath.Join(feeds, "ids.npy"), "--params", npz, "--steps", "2"}, tiny...)...)
	if !slices.EqualFunc(got.Tokens, filled.Tokens, slices.Equal) {
		t.Errorf("tokens from files %v, filled %v", got.Tokens, filled.Tokens)
	}
	if len(got.Filled) != 0 || !strings.Contains(string(got.Warnings), `holds \"wtf\", which is no shared input or param of models prefill and decode (did you mean \"wte\"?)`) {
		t.Errorf("filled %v, warnings %s", got.Filled, got.Warnings)
	}
}

func TestGenerateText(t *testing.T) {
	code, out, stderr := runTec(t, append([]string{"generate", llamaFile, "--fill", "random", "--steps", "2"}, llamaTiny(t)...)...)
	if code != exitOK {
		t.Fatalf("status %d\n%s", code, stderr)
	}
	for _, want := range []string{"models prefill and decode on ref: 2 sequences, 2 decode steps\n", "sequence 0: ", "sequence 1: ", "prefill: ", "decode steps: median "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestGenerateErrors checks the errors of tec generate: each says what is
// wrong, with the status and JSON code of its kind.
func TestGenerateErrors(t *testing.T) {
	tiny := llamaTiny(t)
	dir := t.TempDir()
	write := func(name string, a *te.Array) string {
		p := filepath.Join(dir, name)
		if err := tensorio.WriteNPYFile(p, a); err != nil {
			t.Fatal(err)
		}
		return p
	}
	shortPrompt := write("short.npy", te.NewArray(te.I32, []int{2, 5}))
	floatPrompt := write("float.npy", te.NewArray(te.F32, []int{2, 8}))
	big := te.NewArray(te.I32, []int{2, 8})
	big.Data[9] = 64
	bigPrompt := write("big.npy", big)
	src, err := os.ReadFile(llamaFile)
	if err != nil {
		t.Fatal(err)
	}
	noNext := filepath.Join(dir, "nonext.te")
	if err := os.WriteFile(noNext, []byte(strings.Replace(string(src), "output logits, next\n}\n\nmodel decode", "output logits\n}\n\nmodel decode", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	noArgmax := filepath.Join(dir, "noargmax.te")
	decodeNext := strings.LastIndex(string(src), "next[b] = argmax[t](logits[b, t])")
	if err := os.WriteFile(noArgmax, []byte(string(src[:decodeNext])+"next[b] = ids[b]"+string(src[decodeNext+len("next[b] = argmax[t](logits[b, t])"):])), 0o644); err != nil {
		t.Fatal(err)
	}
	otherCache := filepath.Join(dir, "othercache.te")
	decodeAt := strings.Index(string(src), "model decode")
	changed := string(src[:decodeAt]) + strings.Replace(string(src[decodeAt:]), "input v_cache: f32[L, B, NKV, T, DH]", "input v_cache: f32[L, B, NKV, T + 1, DH]", 1)
	if err := os.WriteFile(otherCache, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		status int
		code   string // the JSON diagnostic's code
		want   string // in the message or hint
	}{
		{"no prompt", []string{llamaFile}, exitUsage, codeUsage, "no prompt"},
		{"--model", []string{llamaFile, "--fill", "ones", "--model", "decode"}, exitUsage, codeUsage, "name them with --prefill NAME and --decode NAME"},
		{"unknown device", []string{llamaFile, "--fill", "ones", "--device", "tpu"}, exitUsage, codeUsage, `unknown device "tpu"`},
		{"kernel flag on ref", []string{llamaFile, "--fill", "ones", "-O2"}, exitUsage, codeUsage, "-O2 configures the kernels, which only --device sim runs"},
		{"negative steps", []string{llamaFile, "--fill", "ones", "--steps", "-1"}, exitUsage, codeUsage, "--steps -1: want 0 or more"},
		{"too many steps", []string{llamaFile, "--fill", "ones", "--steps", "25"}, exitUser, codeData,
			"the prompt's 8 tokens and 25 decode steps need 33 cache positions, but the caches hold 32 (dimension 3 of k_cache)"},
		{"too many steps, the fix", []string{llamaFile, "--fill", "ones", "--steps", "25"}, exitUser, codeData, "use --steps 24 or fewer, or give the caches at least 33 positions"},
		{"one model", []string{"testdata/softmax.te", "--fill", "ones"}, exitUser, "model",
			"testdata/softmax.te has no model prefill or decode, which tec generate runs as the prefill and the decode step; it has the model softmax"},
		{"a misspelt model", []string{llamaFile, "--fill", "ones", "--decode", "decod"}, exitUser, "model", `did you mean "decode"?`},
		{"no next", []string{noNext, "--fill", "ones"}, exitUser, codeData, "model prefill has no output next"},
		{"caches differ", []string{otherCache, "--fill", "ones"}, exitUser, codeData, "cache v_cache is f32[2, 2, 2, 32, 8] in model prefill but f32[2, 2, 2, 33, 8] in model decode"},
		{"prompt of another shape", []string{llamaFile, "--prompt", shortPrompt}, exitUser, codeData, "want i32[2, 8]"},
		{"prompt of another shape, the fix", []string{llamaFile, "--prompt", shortPrompt}, exitUser, codeData, "set the constants that size ids to the prompt's shape (-D B=... -D P=...)"},
		{"prompt of floats", []string{llamaFile, "--prompt", floatPrompt}, exitUser, codeData, "the header declares float32[2, 8], want i32[2, 8]"},
		{"prompt out of the vocabulary", []string{llamaFile, "--prompt", bigPrompt, "--fill", "ones"}, exitUser, codeData, "the prompt's token 64 at [1, 1] is not in the vocabulary [0, 64)"},
		{"missing prompt file", []string{llamaFile, "--prompt", filepath.Join(dir, "none.npy")}, exitUser, codeIO, "none.npy"},
		{"cuda without tec-cuda", []string{llamaFile, "--fill", "ones", "--device", "cuda"}, exitUser, codeCUDA, "--device cuda needs tec-cuda, the GPU runner, which is not installed"},
		{"negative temperature", []string{llamaFile, "--fill", "ones", "--temperature", "-0.5"}, exitUsage, codeUsage, "--temperature -0.5: want 0 or a positive number"},
		{"negative temperature, the hint", []string{llamaFile, "--fill", "ones", "--temperature", "-0.5"}, exitUsage, codeUsage, "0 is greedy (the model's next)"},
		{"NaN temperature", []string{llamaFile, "--fill", "ones", "--temperature", "NaN"}, exitUsage, codeUsage, "--temperature NaN: want 0 or a positive number"},
		{"negative top-k", []string{llamaFile, "--fill", "ones", "--temperature", "1", "--top-k", "-1"}, exitUsage, codeUsage, "--top-k -1: want 0 or a positive number of tokens"},
		{"top-p 0", []string{llamaFile, "--fill", "ones", "--temperature", "1", "--top-p", "0"}, exitUsage, codeUsage, "--top-p 0: want a probability above 0 and at most 1"},
		{"top-p 0, the hint", []string{llamaFile, "--fill", "ones", "--temperature", "1", "--top-p", "0"}, exitUsage, codeUsage, "1 is off; --top-p 0.9 draws from the fewest most probable tokens that make up 90% of the probability"},
		{"top-p above 1", []string{llamaFile, "--fill", "ones", "--temperature", "1", "--top-p", "1.5"}, exitUsage, codeUsage, "--top-p 1.5: want a probability above 0 and at most 1"},
		{"top-k when greedy", []string{llamaFile, "--fill", "ones", "--top-k", "5"}, exitUsage, codeUsage, "--top-k filters the tokens that sampling draws from, but generation is greedy at temperature 0"},
		{"top-p when greedy, the hint", []string{llamaFile, "--fill", "ones", "--top-p", "0.5"}, exitUsage, codeUsage, "sample with --temperature 1 (the model's distribution) or another above 0, or drop --top-p"},
		{"negative eos", []string{llamaFile, "--fill", "ones", "--eos", "-1"}, exitUsage, codeUsage, "token -1: token ids are 0 or more"},
		{"eos not a number", []string{llamaFile, "--fill", "ones", "--eos", "2,x"}, exitUsage, codeUsage, `"x" is not a token id`},
		{"eos past the vocabulary", []string{llamaFile, "--fill", "ones", "--eos", "3", "--eos", "64"}, exitUsage, codeUsage, "--eos: end-of-sequence token 64 is not in the vocabulary: the vocabulary is [0, 64)"},
		{"sampling without logits", []string{noArgmax, "--fill", "ones", "--temperature", "0.8"}, exitUser, codeData,
			"--temperature 0.8: model decode's next is not the argmax of a tensor of logits, [B, V], which sampling draws each token from"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(append([]string{"generate"}, tt.args...), tiny...)
			code, _, stderr := runTec(t, args...)
			if code != tt.status || !strings.Contains(stderr, tt.want) {
				t.Errorf("status %d, want %d; stderr:\n%s\nwant it to contain %q", code, tt.status, stderr, tt.want)
			}
			code, out, _ := runTec(t, append(args, "--json")...)
			if code != tt.status {
				t.Errorf("--json: status %d, want %d", code, tt.status)
			}
			found := false
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				var d struct{ Code, Message, Hint string }
				if err := json.Unmarshal([]byte(line), &d); err != nil {
					t.Fatalf("--json: not JSON lines: %v\n%s", err, out)
				}
				found = found || d.Code == tt.code && strings.Contains(d.Message+"\n"+d.Hint, tt.want)
			}
			if !found {
				t.Errorf("--json: no diagnostic of code %q saying %q:\n%s", tt.code, tt.want, out)
			}
		})
	}
}

// TestGenerateMissingParams checks that params neither supplied nor
// filled are an error that names them.
func TestGenerateMissingParams(t *testing.T) {
	dir := t.TempDir()
	prompt := filepath.Join(dir, "p.npy")
	if err := tensorio.WriteNPYFile(prompt, te.NewArray(te.I32, []int{2, 8})); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runTec(t, append([]string{"generate", llamaFile, "--prompt", prompt}, llamaTiny(t)...)...)
	if code != exitUser || !strings.Contains(stderr, "no data for tensors wte, attn_norm, wq") || !strings.Contains(stderr, "pass --params, or --fill") {
		t.Errorf("status %d:\n%s", code, stderr)
	}
}
