package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"tec/internal/tensorio"
	"tec/te"
)

// TestHFGenerate writes tiny Hugging Face checkpoints of each family with
// python/hf_models.py (Llama 3 with llama3 RoPE scaling and tied
// embeddings, Qwen2 with its q/k/v biases, Qwen3 with q/k norms and
// attention_bias, Mistral with a sliding window, a Llama 2 sharded into
// two f16 files with an index), imports each with tec import DIR and
// checks that tec generate --params DIR picks, token for token, the 32
// greedy tokens of each prompt that the script's PyTorch forward pass
// (written from Hugging Face's modelling code, without a cache) picks: on
// the reference and in the simulator at -O4.
func TestHFGenerate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: writing the checkpoints and generating takes seconds")
	}
	if out, err := exec.Command(pythonWithTorch, "-c", "import torch, numpy").CombinedOutput(); err != nil {
		msg := pythonWithTorch + " cannot import torch and numpy (Debian's python3-torch and python3-numpy; .ci/run installs them): " + strings.TrimSpace(string(out))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	if out, err := exec.Command(pythonWithTorch, "../../python/hf_models.py", dir).CombinedOutput(); err != nil {
		t.Fatalf("python/hf_models.py: %v\n%s", err, out)
	}
	for _, name := range []string{"llama3", "qwen2", "qwen3", "mistral", "llama2_sharded"} {
		t.Run(name, func(t *testing.T) {
			ckpt := filepath.Join(dir, name)
			prog := ckpt + ".te"
			if code, out, errs := runTec(t, "import", ckpt, "--dim", "B=2", "--dim", "P=5", "--dim", "T=40"); code != exitOK || errs != "" {
				t.Fatalf("tec import: status %d\n%s%s", code, out, errs)
			}
			if code, out, _ := runTec(t, "fmt", "-l", prog); code != exitOK || out != "" {
				t.Errorf("tec fmt -l: status %d, %q: the import is not laid out as tec fmt would", code, out)
			}
			var want struct{ Tokens [][]int }
			data, err := os.ReadFile(ckpt + ".expected.json")
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &want); err != nil || len(want.Tokens) != 2 || len(want.Tokens[0]) != 32 {
				t.Fatalf("%s.expected.json: %v %v", name, err, want.Tokens)
			}
			for _, device := range [][]string{{"--device", "ref"}, {"--device", "sim", "-O4"}} {
				args := append([]string{prog, "--params", ckpt, "--prompt", ckpt + ".prompt.npy", "--steps", "31"}, device...)
				g := runGenerateJSON(t, args...)
				if !slices.EqualFunc(g.Tokens, want.Tokens, slices.Equal) {
					t.Errorf("%s: tec generate's tokens\n%v\nPyTorch's\n%v", strings.Join(device, " "), g.Tokens, want.Tokens)
				}
				if len(g.Filled) != 0 || string(g.Warnings) != "[]" {
					t.Errorf("%s: filled %v, warnings %s: every param should come from the checkpoint", strings.Join(device, " "), g.Filled, g.Warnings)
				}
			}
		})
	}
}

// TestHFGenerateText runs tec generate on a checkpoint's directory with
// a text prompt: python/hf_models.py's llama3_text, a tiny Llama 3.2 whose
// tokenizer.json has the 256 bytes as its vocabulary (no merges) and
// Llama 3's special tokens, so that the script knows a text's ids without
// a tokenizer library, and a Llama 3 chat template. The tokens and their
// text must be the script's greedy PyTorch generation's: a plain prompt
// (<|begin_of_text|> added, non-ASCII text) on the reference and the
// simulator at -O4, and a chat with a system message (the template
// rendered by Jinja on the script's side), streamed as JSON lines whose
// text adds up; --stop cuts the text and ends the sequence; and the
// misuses of text prompts are usage errors.
func TestHFGenerateText(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: writing the checkpoint and generating takes seconds")
	}
	if out, err := exec.Command(pythonWithTorch, "-c", "import torch, numpy, jinja2").CombinedOutput(); err != nil {
		msg := pythonWithTorch + " cannot import torch, numpy and jinja2 (Debian's python3-torch, python3-numpy and python3-jinja2; .ci/run installs them): " + strings.TrimSpace(string(out))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	if out, err := exec.Command(pythonWithTorch, "../../python/hf_models.py", dir, "llama3_text").CombinedOutput(); err != nil {
		t.Fatalf("python/hf_models.py: %v\n%s", err, out)
	}
	ckpt := filepath.Join(dir, "llama3_text")
	data, err := os.ReadFile(ckpt + ".expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Steps   int
		Prompts map[string]struct {
			Prompt, System string
			Chat           bool
		}
		Expected map[string]struct {
			Tokens []int
			Text   string
		}
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	steps := strconv.Itoa(spec.Steps)
	for _, tc := range []struct {
		prompt string
		device []string
	}{{"plain", []string{"--device", "ref"}}, {"plain", []string{"--device", "sim", "-O4"}}, {"chat", []string{"--device", "ref"}}} {
		p, want := spec.Prompts[tc.prompt], spec.Expected[tc.prompt]
		args := []string{ckpt, "--prompt", p.Prompt, "--steps", steps}
		if p.Chat {
			args = append(args, "--chat", "--system", p.System)
		}
		g := runGenerateJSON(t, append(args, tc.device...)...)
		if len(g.Tokens) != 1 || !slices.Equal(g.Tokens[0], want.Tokens) || len(g.Text) != 1 || g.Text[0] != want.Text {
			t.Errorf("%s %s: tokens %v, text %q; PyTorch's %v, %q", tc.prompt, strings.Join(tc.device, " "), g.Tokens, g.Text, want.Tokens, want.Text)
		}
		if tc.prompt != "chat" {
			continue
		}
		// Streamed: each run's new text, adding up to the whole.
		code, out, errs := runTec(t, append([]string{"generate", "--json", "--stream"}, args...)...)
		if code != exitOK {
			t.Fatalf("--stream: status %d\n%s%s", code, out, errs)
		}
		var joined strings.Builder
		for _, line := range strings.Split(out, "\n") {
			var l struct{ Text []string }
			if strings.HasPrefix(line, "{\"step\"") && json.Unmarshal([]byte(line), &l) == nil && len(l.Text) == 1 {
				joined.WriteString(l.Text[0])
			}
		}
		if joined.String() != want.Text {
			t.Errorf("--stream: the lines' text %q, want %q", joined.String(), want.Text)
		}
	}
	// --stop: the text cut before the first stop string, the sequence
	// ended there.
	plain := spec.Expected["plain"]
	runes := []rune(plain.Text)
	stop := string(runes[len(runes)/2 : len(runes)/2+2])
	cut := plain.Text[:strings.Index(plain.Text, stop)]
	g := runGenerateJSON(t, ckpt, "--prompt", spec.Prompts["plain"].Prompt, "--steps", steps, "--stop", stop)
	if len(g.Text) != 1 || g.Text[0] != cut || len(g.Finish) != 1 || g.Finish[0] != "stop" {
		t.Errorf("--stop %q: text %q, finish %v; want %q, stop", stop, g.Text, g.Finish, cut)
	}
	// Text output: the text alone on stdout, the rest on stderr.
	code, out, errs := runTec(t, "generate", ckpt, "--prompt", spec.Prompts["plain"].Prompt, "--steps", steps)
	if code != exitOK || out != plain.Text+"\n" || !strings.Contains(errs, "decode steps:") {
		t.Errorf("text output: status %d, stdout %q, stderr %q; want the text %q", code, out, errs, plain.Text)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{llamaFile, "--prompt", "Hello"}, exitUsage, `--prompt "Hello" is no .npy file of token ids, and there is no checkpoint directory to encode it as text with`},
		{[]string{ckpt, "--prompt", "Hi", "--system", "Be brief."}, exitUsage, "--system is a system message of a chat"},
		{[]string{llamaFile, "--fill", "random", "--chat"}, exitUsage, "--chat and --stop are for a prompt given as text"},
		{[]string{ckpt, "--prompt", "Hi", "-D", "P=4"}, exitUser, "--prompt: the text is 3 tokens, but model prefill's ids are i32[1, 4]"},
	} {
		code, out, errs := runTec(t, append([]string{"generate"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("tec generate %s: status %d\n%s%s\nwant status %d and %q", strings.Join(tc.args, " "), code, out, errs, tc.code, tc.want)
		}
	}
}

// hfTensor is a tensor of a checkpoint that writeCheckpoint writes.
type hfTensor struct {
	name  string
	shape []int
}

// tinyQwen2 is the config.json of a tiny Qwen2 (q/k/v biases, lm_head),
// and its tensors.
const tinyQwen2 = `{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 16, "num_hidden_layers": 2,
  "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 24, "vocab_size": 32, "rms_norm_eps": 1e-6,
  "rope_theta": 10000.0, "tie_word_embeddings": false, "hidden_act": "silu", "transformers_version": "4.45.0"}`

func tinyQwen2Tensors() []hfTensor {
	ts := []hfTensor{{"model.embed_tokens.weight", []int{32, 16}}, {"model.norm.weight", []int{16}}, {"lm_head.weight", []int{32, 16}}}
	for l := range 2 {
		p := fmt.Sprintf("model.layers.%d.", l)
		ts = append(ts, hfTensor{p + "input_layernorm.weight", []int{16}}, hfTensor{p + "post_attention_layernorm.weight", []int{16}},
			hfTensor{p + "self_attn.q_proj.weight", []int{16, 16}}, hfTensor{p + "self_attn.q_proj.bias", []int{16}},
			hfTensor{p + "self_attn.k_proj.weight", []int{8, 16}}, hfTensor{p + "self_attn.k_proj.bias", []int{8}},
			hfTensor{p + "self_attn.v_proj.weight", []int{8, 16}}, hfTensor{p + "self_attn.v_proj.bias", []int{8}},
			hfTensor{p + "self_attn.o_proj.weight", []int{16, 16}},
			hfTensor{p + "mlp.gate_proj.weight", []int{24, 16}}, hfTensor{p + "mlp.up_proj.weight", []int{24, 16}}, hfTensor{p + "mlp.down_proj.weight", []int{16, 24}})
	}
	return ts
}

// tensorValues are the values writeCheckpoint gives the k-th tensor:
// deterministic, different from tensor to tensor, about ±0.5.
func tensorValues(k, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Sin(float64(k*131+i)*0.7) * 0.5
	}
	return v
}

// safetensorsFile returns the safetensors file of the tensors (named,
// with their shapes and values), as BF16.
func safetensorsFile(t *testing.T, names []string, shapes [][]int, values [][]float64) []byte {
	t.Helper()
	header := map[string]any{}
	var data []byte
	for i, name := range names {
		start := len(data)
		for _, v := range values[i] {
			data = binary.LittleEndian.AppendUint16(data, te.Float32ToBFloat16(float32(v)))
		}
		header[name] = map[string]any{"dtype": "BF16", "shape": shapes[i], "data_offsets": []int{start, len(data)}}
	}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	return append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...), data...)
}

// writeCheckpoint writes a checkpoint of config and tensors to dir, in
// two shards with an index, and returns each tensor's values (as BF16
// rounds them) by name.
func writeCheckpoint(t *testing.T, dir, config string, tensors []hfTensor) map[string][]float64 {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("config.json", []byte(config))
	vals := map[string][]float64{}
	weightMap := map[string]string{}
	var shards [2]struct {
		names  []string
		shapes [][]int
		values [][]float64
	}
	for k, tn := range tensors {
		n := 1
		for _, d := range tn.shape {
			n *= d
		}
		v := tensorValues(k, n)
		for i := range v {
			v[i] = te.Round(te.BF16, v[i])
		}
		vals[tn.name] = v
		s := &shards[k%2]
		s.names, s.shapes, s.values = append(s.names, tn.name), append(s.shapes, tn.shape), append(s.values, v)
		weightMap[tn.name] = fmt.Sprintf("model-%05d-of-00002.safetensors", k%2+1)
	}
	for i, s := range shards {
		write(fmt.Sprintf("model-%05d-of-00002.safetensors", i+1), safetensorsFile(t, s.names, s.shapes, s.values))
	}
	index, _ := json.Marshal(map[string]any{"metadata": map[string]int{"total_size": 0}, "weight_map": weightMap})
	write("model.safetensors.index.json", index)
	return vals
}

// TestHFImport imports a tiny checkpoint and runs it with --params DIR:
// tec check passes on both models, and tec generate and tec run bind the
// checkpoint's tensors exactly as the same weights in an .npz archive
// under the params' names give.
func TestHFImport(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "qwen")
	vals := writeCheckpoint(t, ckpt, tinyQwen2, tinyQwen2Tensors())
	code, out, errs := runTec(t, "import", ckpt+string(filepath.Separator), "--dim", "T=12", "--dim", "B=2", "--dim", "P=4")
	prog := filepath.Join(dir, "qwen.te") // beside the directory, whatever the trailing slash
	if code != exitOK || !strings.Contains(out, "wrote "+prog+": models prefill and decode of a Qwen2ForCausalLM (2 layers, 27 params) at B = 2, P = 4, T = 12") {
		t.Fatalf("tec import: status %d\n%s%s", code, out, errs)
	}
	src, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Imported by tec import from " + ckpt + ", a Hugging Face Qwen2ForCausalLM.", "model_type qwen2, hidden_size 16",
		"param bq: f32[NH * DH] # model.layers.{l}.self_attn.q_proj.bias", "param lm_head: f32[V, D] # the output projection: lm_head.weight"} {
		if !strings.Contains(strings.Join(strings.Fields(string(src)), " "), want) {
			t.Errorf("the program lacks %q", want)
		}
	}
	for _, m := range []string{"prefill", "decode"} {
		if code, out, errs := runTec(t, "check", prog, "--model", m); code != exitOK {
			t.Errorf("tec check --model %s: status %d\n%s%s", m, code, out, errs)
		}
	}
	// the same weights under the params' names, in an .npz archive
	npz := map[string]*te.Array{}
	for _, tn := range tinyQwen2Tensors() {
		name := strings.TrimPrefix(tn.name, "model.")
		for hfName, teName := range map[string]string{"embed_tokens.weight": "embed", "norm.weight": "norm", "lm_head.weight": "lm_head"} {
			if name == hfName {
				name = teName
			}
		}
		if rest, ok := strings.CutPrefix(name, "layers."); ok {
			l, suffix, _ := strings.Cut(rest, ".")
			base := map[string]string{"input_layernorm.weight": "attn_norm", "post_attention_layernorm.weight": "ffn_norm",
				"self_attn.q_proj.weight": "wq", "self_attn.q_proj.bias": "bq", "self_attn.k_proj.weight": "wk", "self_attn.k_proj.bias": "bk",
				"self_attn.v_proj.weight": "wv", "self_attn.v_proj.bias": "bv", "self_attn.o_proj.weight": "wo",
				"mlp.gate_proj.weight": "w_gate", "mlp.up_proj.weight": "w_up", "mlp.down_proj.weight": "w_down"}[suffix]
			name = base + "." + l
		}
		npz[name] = &te.Array{DType: te.F32, Shape: tn.shape, Data: vals[tn.name]}
	}
	npzFile := filepath.Join(dir, "qwen.npz")
	if err := tensorio.WriteNPZ(npzFile, npz); err != nil {
		t.Fatal(err)
	}
	gen := func(params string) generateJSON {
		return runGenerateJSON(t, prog, "--params", params, "--fill", "random", "--seed", "3", "--steps", "4")
	}
	fromDir, fromNPZ := gen(ckpt), gen(npzFile)
	if !slices.EqualFunc(fromDir.Tokens, fromNPZ.Tokens, slices.Equal) || !slices.Equal(fromDir.Filled, []string{"ids"}) || string(fromDir.Warnings) != "[]" {
		t.Errorf("--params DIR: tokens %v, filled %v, warnings %s; --params .npz: tokens %v", fromDir.Tokens, fromDir.Filled, fromDir.Warnings, fromNPZ.Tokens)
	}
	// tec run: one prefill, the caches filled with zeros
	run := func(params string) string {
		code, out, errs := runTec(t, "run", prog, "--model", "prefill", "--params", params, "--fill", "zeros", "--json")
		if code != exitOK {
			t.Fatalf("tec run --params %s: status %d\n%s%s", params, code, out, errs)
		}
		var s runSummary
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(s.Filled, func(n string) bool { return strings.Contains(n, ".") || n == "embed" }) {
			t.Errorf("--params %s filled %v", params, s.Filled)
		}
		b, _ := json.Marshal(s.Outputs)
		return string(b)
	}
	if a, b := run(ckpt), run(npzFile); a != b {
		t.Errorf("tec run's outputs with --params DIR\n%s\nwith --params .npz\n%s", a, b)
	}
}

// TestHFErrors checks what tec import, run and generate say of checkpoints
// they cannot use: a config field tec does not honour, hostile
// safetensors files, a missing shard, a tensor that disagrees with
// config.json or with the program; each fails cleanly, naming what.
func TestHFErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	writeCheckpoint(t, good, tinyQwen2, tinyQwen2Tensors())
	prog := filepath.Join(dir, "good.te")
	if code, out, errs := runTec(t, "import", good, "--dim", "P=4", "--dim", "T=12"); code != exitOK {
		t.Fatalf("tec import: status %d\n%s%s", code, out, errs)
	}
	shard1 := "model-00001-of-00002.safetensors"
	// variant writes a copy of the good checkpoint with edit applied.
	variant := func(name string, edit func(dir string)) string {
		d := filepath.Join(dir, name)
		if err := os.CopyFS(d, os.DirFS(good)); err != nil {
			t.Fatal(err)
		}
		edit(d)
		return d
	}
	rewrite := func(path string, f func([]byte) []byte) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, f(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	moe := variant("moe", func(d string) {
		rewrite(filepath.Join(d, "config.json"), func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"vocab_size": 32,`, `"vocab_size": 32, "num_experts": 8, "num_experts_per_tok": 2,`, 1))
		})
	})
	truncated := variant("truncated", func(d string) {
		rewrite(filepath.Join(d, shard1), func(b []byte) []byte { return b[:40] })
	})
	overlap := variant("overlap", func(d string) {
		rewrite(filepath.Join(d, shard1), func(b []byte) []byte {
			// the third tensor's range 2 bytes early, into the second's
			re := regexp.MustCompile(`"data_offsets":\[2048,(\d+)\]`)
			m := re.FindSubmatch(b)
			if m == nil {
				t.Fatalf("no offsets from 2048 in %.300s", b)
			}
			end, _ := strconv.Atoi(string(m[1]))
			return re.ReplaceAll(b, []byte(fmt.Sprintf(`"data_offsets":[2046,%d]`, end-2)))
		})
	})
	missing := variant("missing", func(d string) { os.Remove(filepath.Join(d, "model-00002-of-00002.safetensors")) })
	wrongShape := variant("wrong_shape", func(d string) {
		rewrite(filepath.Join(d, "config.json"), func(b []byte) []byte {
			return []byte(strings.Replace(string(b), `"intermediate_size": 24`, `"intermediate_size": 20`, 1))
		})
	})
	noConfig := variant("no_config", func(d string) { os.Remove(filepath.Join(d, "config.json")) })

	tests := []struct {
		name   string
		args   []string
		status int
		code   string
		want   string
	}{
		{"unsupported field", []string{"import", moe}, exitUser, codeImport, "config.json: num_experts: a mixture of experts"},
		{"truncated header", []string{"import", truncated}, exitUser, codeImport, shard1 + ": the header length"},
		{"overlapping offsets", []string{"import", overlap}, exitUser, codeImport, "overlap tensor"},
		{"missing shard", []string{"import", missing}, exitUser, codeImport, "names the shard model-00002-of-00002.safetensors for 13 tensors"},
		{"shape disagreeing with config.json", []string{"import", wrongShape}, exitUser, codeImport,
			`tensor "model.layers.0.mlp.gate_proj.weight" is BF16[24, 16], but param w_gate.0 is f32[20, 16]: the shapes differ`},
		{"no config.json", []string{"import", noConfig}, exitUser, codeImport, "has no config.json: tec import reads a directory as a Hugging Face checkpoint"},
		{"window shorter than T", []string{"import", variant("window", func(d string) {
			rewrite(filepath.Join(d, "config.json"), func(b []byte) []byte {
				return []byte(strings.Replace(string(b), `"model_type": "qwen2"`, `"model_type": "qwen2", "sliding_window": 8, "use_sliding_window": true`, 1))
			})
		}), "--dim", "T=12"}, exitUser, codeImport, "sliding_window: 8 is shorter than the context of 12 positions"},
		{"--params with a DIR", []string{"import", good, "--params", "w.npz"}, exitUsage, codeUsage, "--params: the weights of " + good + " stay in its safetensors"},
		{"--model with a DIR", []string{"import", good, "--model", "m"}, exitUsage, codeUsage, "--model: the program of a checkpoint has the models prefill and decode"},
		{"--dim of another name", []string{"import", good, "--dim", "batch=2"}, exitUsage, codeUsage, "--dim batch: the program of a checkpoint has the sizes B"},
		{"prompt past the caches", []string{"import", good, "--dim", "P=20", "--dim", "T=12"}, exitUsage, codeUsage, "--dim P=20 is more than T=12"},
		{"-o over the config", []string{"import", good, "-o", filepath.Join(good, "config.json")}, exitUsage, codeUsage, "is a file of the checkpoint being imported"},
		{"run with a truncated shard", []string{"run", prog, "--model", "prefill", "--params", truncated, "--fill", "zeros"}, exitUser, codeData, shard1 + ": the header length"},
		{"generate with a missing shard", []string{"generate", prog, "--params", missing, "--fill", "random", "--steps", "2"}, exitUser, codeData, "but " + filepath.Join(missing, "model-00002-of-00002.safetensors") + " is missing"},
		{"generate with a shape the program does not have", []string{"generate", prog, "--params", good, "--fill", "random", "--steps", "2", "-D", "FF=20"}, exitUser, codeData,
			`tensor "model.layers.0.mlp.down_proj.weight" is BF16[16, 24], but param w_down.0 is f32[16, 20]: the shapes differ`},
		{"run with a directory that is no checkpoint", []string{"run", prog, "--model", "decode", "--params", dir, "--fill", "zeros"}, exitUser, codeData, dir + " is a directory without config.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runTec(t, tt.args...)
			if code != tt.status || !strings.Contains(errs, tt.want) || strings.Contains(errs, "panic") {
				t.Errorf("status %d, stderr %q; want %d and %q", code, errs, tt.status, tt.want)
			}
			code, out, _ := runTec(t, append(tt.args, "--diagnostics", "json")...)
			var d struct{ Code, Message string }
			if err := json.Unmarshal([]byte(strings.SplitN(strings.TrimSpace(out), "\n", 2)[0]), &d); err != nil || code != tt.status || d.Code != tt.code || !strings.Contains(d.Message, tt.want) {
				t.Errorf("--diagnostics json: status %d, %q (%v); want code %q with %q", code, out, err, tt.code, tt.want)
			}
		})
	}
}
