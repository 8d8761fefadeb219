package hf

import (
	"slices"
	"strings"
	"testing"

	"tec/driver"
	"tec/generate"
	"tec/lang"
	"tec/lang/syntax"
	"tec/pipeline"
	"tec/te"
)

// tinyFamilies are a tiny config of each variant the program has: Llama 3's
// RoPE scaling and tied embeddings, Qwen2's q/k/v biases and lm_head,
// Qwen3's q/k norms with attention_bias (every projection biased) and a
// head_dim other than hidden_size / heads, Mistral with a window.
var tinyFamilies = map[string]string{
	"llama3": tinyConfig("llama", map[string]string{"tie_word_embeddings": "true", "rope_theta": "500000.0",
		"rope_scaling": `{"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}`}),
	"qwen2":   tinyConfig("qwen2", map[string]string{"sliding_window": "16", "use_sliding_window": "false"}),
	"qwen3":   tinyConfig("qwen3", map[string]string{"head_dim": "16", "attention_bias": "true", "tie_word_embeddings": "true"}),
	"mistral": tinyConfig("mistral", map[string]string{"sliding_window": "64"}),
}

// checkProgram checks src's two models and returns them.
func checkProgram(t *testing.T, src []byte) (prefill, decode *te.Program) {
	t.Helper()
	var progs [2]*te.Program
	for i, m := range []string{"prefill", "decode"} {
		p, ds := lang.Check("imported.te", src, lang.Config{Model: m})
		if ds.HasErrors() {
			t.Fatalf("model %s does not check:\n%s\n%s", m, ds.Error(), src)
		}
		progs[i] = p
	}
	return progs[0], progs[1]
}

// TestProgram checks the program of each variant: it checks, is laid out
// as tec fmt lays it out, fits tec generate's protocol, and declares
// exactly the params that Params lists, which TensorName maps to their
// tensors.
func TestProgram(t *testing.T) {
	for name, text := range tinyFamilies {
		t.Run(name, func(t *testing.T) {
			c, err := ParseConfig([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			src, err := Program(c, Options{B: 2, P: 4, T: 16, Source: "ckpt/" + name})
			if err != nil {
				t.Fatal(err)
			}
			f, err := syntax.Parse("imported.te", src)
			if err != nil {
				t.Fatal(err)
			}
			if again, err := syntax.Format(f, src); err != nil || string(again) != string(src) {
				t.Errorf("not laid out as tec fmt lays it out (%v)", err)
			}
			if !strings.Contains(string(src), "# Imported by tec import from ckpt/"+name+", a Hugging Face "+c.Architecture) {
				t.Errorf("the header does not name the source:\n%s", src[:200])
			}
			prefill, decode := checkProgram(t, src)
			if _, err := generate.NewPlan(prefill, decode); err != nil {
				t.Errorf("not a generation pair: %v", err)
			}
			want := Params(c)
			for _, p := range []*te.Program{prefill, decode} {
				var got []Param
				for _, ph := range p.Placeholders() {
					if ph.Kind == te.Param {
						got = append(got, Param{Name: ph.Name, Shape: ph.Shape})
					}
				}
				if len(got) != len(want) {
					t.Fatalf("model %s has %d params, Params lists %d", p.Name, len(got), len(want))
				}
				for i := range want {
					tensor, ok := TensorName(want[i].Name)
					got[i].Tensor = tensor
					if !ok || got[i].Name != want[i].Name || got[i].Tensor != want[i].Tensor || !slices.Equal(got[i].Shape, want[i].Shape) {
						t.Errorf("model %s's param %d is %v (%s), Params lists %v", p.Name, i, got[i], tensor, want[i])
					}
				}
			}
		})
	}
}

// TestProgramLevels builds each variant's two models at every level.
func TestProgramLevels(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for name, text := range tinyFamilies {
		c, err := ParseConfig([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		src, err := Program(c, Options{B: 1, P: 4, T: 8})
		if err != nil {
			t.Fatal(err)
		}
		prefill, decode := checkProgram(t, src)
		for level := 0; level <= pipeline.MaxLevel; level++ {
			for _, p := range []*te.Program{prefill, decode} {
				if _, err := driver.Compile(p, pipeline.Options{Level: level}); err != nil {
					t.Errorf("%s, model %s at -O%d: %v", name, p.Name, level, err)
				}
			}
		}
	}
}

// TestTensorName checks the mapping both ways on names it knows and
// refuses names it does not.
func TestTensorName(t *testing.T) {
	for name, want := range map[string]string{
		"embed":      "model.embed_tokens.weight",
		"norm":       "model.norm.weight",
		"lm_head":    "lm_head.weight",
		"wq.3":       "model.layers.3.self_attn.q_proj.weight",
		"bk.0":       "model.layers.0.self_attn.k_proj.bias",
		"q_norm.11":  "model.layers.11.self_attn.q_norm.weight",
		"w_down.2":   "model.layers.2.mlp.down_proj.weight",
		"ffn_norm.7": "model.layers.7.post_attention_layernorm.weight",
	} {
		if got, ok := TensorName(name); !ok || got != want {
			t.Errorf("TensorName(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"wq", "embed.0", "wq.x", "wq.01", "wq.-1", "wq.1.2", "ids", "k_cache", ""} {
		if got, ok := TensorName(name); ok {
			t.Errorf("TensorName(%q) = %q; want none", name, got)
		}
	}
	// every param of every family has a tensor, and no two params one
	for name, text := range tinyFamilies {
		c, _ := ParseConfig([]byte(text))
		seen := map[string]string{}
		for _, p := range Params(c) {
			if prev, dup := seen[p.Tensor]; dup {
				t.Errorf("%s: %s and %s both bind %s", name, prev, p.Name, p.Tensor)
			}
			seen[p.Tensor] = p.Name
		}
		if _, ok := seen["lm_head.weight"]; ok == c.Tied {
			t.Errorf("%s: tied %v, but lm_head bound: %v", name, c.Tied, ok)
		}
	}
}
