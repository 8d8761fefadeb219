package hf

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The config.json of each family as published (the sizes of the real
// checkpoints; tec reads them whatever their size).
var realConfigs = map[string]string{
	"Llama-2-7b-hf": `{"_name_or_path": "meta-llama/Llama-2-7b-hf", "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
		"hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008, "max_position_embeddings": 4096,
		"model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32, "pretraining_tp": 1,
		"rms_norm_eps": 1e-05, "rope_scaling": null, "tie_word_embeddings": false, "torch_dtype": "float16", "transformers_version": "4.31.0.dev0",
		"use_cache": true, "vocab_size": 32000}`,
	"Meta-Llama-3-8B": `{"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 128000,
		"eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
		"max_position_embeddings": 8192, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
		"pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 500000.0, "tie_word_embeddings": false,
		"torch_dtype": "bfloat16", "transformers_version": "4.40.0.dev0", "use_cache": true, "vocab_size": 128256}`,
	"Llama-3.1-8B-Instruct": `{"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 128000,
		"eos_token_id": [128001, 128008, 128009], "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
		"max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
		"num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
		"rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
		"rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.42.3", "use_cache": true, "vocab_size": 128256}`,
	"Llama-3.2-1B": `{"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": 128001,
		"head_dim": 64, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072,
		"mlp_bias": false, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1,
		"rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
		"rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256}`,
	"SmolLM2-135M": `{"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 0, "eos_token_id": 0,
		"hidden_act": "silu", "hidden_size": 576, "initializer_range": 0.041666666666666664, "intermediate_size": 1536, "is_llama_config": true,
		"max_position_embeddings": 8192, "mlp_bias": false, "model_type": "llama", "num_attention_heads": 9, "num_hidden_layers": 30,
		"num_key_value_heads": 3, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_interleaved": false, "rope_scaling": null, "rope_theta": 100000,
		"tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": true, "vocab_size": 49152}`,
	"Mistral-7B-v0.1": `{"architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096,
		"initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 32,
		"num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
		"tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0", "use_cache": true, "vocab_size": 32000}`,
	"Mistral-7B-v0.3": `{"architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
		"hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
		"num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
		"sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.42.0.dev0", "use_cache": true, "vocab_size": 32768}`,
	"Mistral-Nemo-Base-2407": `{"architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2, "head_dim": 128,
		"hidden_act": "silu", "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 1024000,
		"model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 40, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
		"rope_theta": 1000000.0, "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
		"transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 131072}`,
	"Qwen2.5-0.5B": `{"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151643, "hidden_act": "silu",
		"hidden_size": 896, "initializer_range": 0.02, "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
		"model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
		"rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "transformers_version": "4.40.1",
		"use_cache": true, "use_sliding_window": false, "vocab_size": 151936}`,
	"Qwen3-0.6B": `{"architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
		"head_dim": 128, "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072, "max_position_embeddings": 40960,
		"max_window_layers": 28, "model_type": "qwen3", "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
		"rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
		"torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936}`,
}

// TestRealConfigs reads the published configs of each family and checks
// what tec takes from them.
func TestRealConfigs(t *testing.T) {
	want := map[string]Config{
		"Llama-2-7b-hf":          {ModelType: "llama", Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 32, HeadDim: 128, FF: 11008, Vocab: 32000, RopeTheta: 10000, RMSEps: 1e-5, BOS: 1, EOS: []int{2}, DType: "float16", MaxPos: 4096},
		"Meta-Llama-3-8B":        {ModelType: "llama", Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, FF: 14336, Vocab: 128256, RopeTheta: 500000, RMSEps: 1e-5, BOS: 128000, EOS: []int{128001}, DType: "bfloat16", MaxPos: 8192},
		"Llama-3.1-8B-Instruct":  {ModelType: "llama", Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, FF: 14336, Vocab: 128256, RopeTheta: 500000, RMSEps: 1e-5, BOS: 128000, EOS: []int{128001, 128008, 128009}, DType: "bfloat16", MaxPos: 131072, Rope3: &Llama3Rope{8, 1, 4, 8192}},
		"Llama-3.2-1B":           {ModelType: "llama", Hidden: 2048, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64, FF: 8192, Vocab: 128256, RopeTheta: 500000, RMSEps: 1e-5, Tied: true, BOS: 128000, EOS: []int{128001}, DType: "bfloat16", MaxPos: 131072, Rope3: &Llama3Rope{32, 1, 4, 8192}},
		"SmolLM2-135M":           {ModelType: "llama", Hidden: 576, Layers: 30, Heads: 9, KVHeads: 3, HeadDim: 64, FF: 1536, Vocab: 49152, RopeTheta: 100000, RMSEps: 1e-5, Tied: true, BOS: 0, EOS: []int{0}, DType: "bfloat16", MaxPos: 8192},
		"Mistral-7B-v0.1":        {ModelType: "mistral", Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, FF: 14336, Vocab: 32000, RopeTheta: 10000, RMSEps: 1e-5, BOS: 1, EOS: []int{2}, DType: "bfloat16", MaxPos: 32768, SlidingWindow: 4096},
		"Mistral-7B-v0.3":        {ModelType: "mistral", Hidden: 4096, Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, FF: 14336, Vocab: 32768, RopeTheta: 1e6, RMSEps: 1e-5, BOS: 1, EOS: []int{2}, DType: "bfloat16", MaxPos: 32768},
		"Mistral-Nemo-Base-2407": {ModelType: "mistral", Hidden: 5120, Layers: 40, Heads: 32, KVHeads: 8, HeadDim: 128, FF: 14336, Vocab: 131072, RopeTheta: 1e6, RMSEps: 1e-5, BOS: 1, EOS: []int{2}, DType: "bfloat16", MaxPos: 1024000},
		"Qwen2.5-0.5B":           {ModelType: "qwen2", Hidden: 896, Layers: 24, Heads: 14, KVHeads: 2, HeadDim: 64, FF: 4864, Vocab: 151936, RopeTheta: 1e6, RMSEps: 1e-6, Tied: true, QKVBias: true, BOS: 151643, EOS: []int{151643}, DType: "bfloat16", MaxPos: 32768},
		"Qwen3-0.6B":             {ModelType: "qwen3", Hidden: 1024, Layers: 28, Heads: 16, KVHeads: 8, HeadDim: 128, FF: 3072, Vocab: 151936, RopeTheta: 1e6, RMSEps: 1e-6, Tied: true, QKNorm: true, BOS: 151643, EOS: []int{151645}, DType: "bfloat16", MaxPos: 40960},
	}
	for name, text := range realConfigs {
		t.Run(name, func(t *testing.T) {
			c, err := ParseConfig([]byte(text))
			if err != nil {
				t.Fatal(err)
			}
			w := want[name]
			w.Architecture = families[familyIndex(w.ModelType)].architecture
			if (c.Rope3 == nil) != (w.Rope3 == nil) || c.Rope3 != nil && *c.Rope3 != *w.Rope3 {
				t.Errorf("rope_scaling %+v, want %+v", c.Rope3, w.Rope3)
			}
			c.Rope3, w.Rope3 = nil, nil
			if !slices.Equal(c.EOS, w.EOS) {
				t.Errorf("eos %v, want %v", c.EOS, w.EOS)
			}
			c.EOS, w.EOS = nil, nil
			if !reflect.DeepEqual(*c, w) {
				t.Errorf("got  %+v\nwant %+v", *c, w)
			}
			if _, err := Program(c, Options{B: 1, P: 16, T: 64, Source: name}); err != nil {
				t.Errorf("Program: %v", err)
			}
		})
	}
}

// tinyConfig is a small Llama's config.json with the fields of extra
// added or replaced (a value "" removes the field).
func tinyConfig(modelType string, extra map[string]string) string {
	fields := map[string]string{
		"model_type": `"` + modelType + `"`, "hidden_size": "32", "num_hidden_layers": "2", "num_attention_heads": "4",
		"num_key_value_heads": "2", "intermediate_size": "64", "vocab_size": "64", "rms_norm_eps": "1e-5", "rope_theta": "10000.0",
	}
	for k, v := range extra {
		if v == "" {
			delete(fields, k)
		} else {
			fields[k] = v
		}
	}
	var parts []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range fields {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, `"`+k+`": `+fields[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// TestConfigRefused checks that every config field that would make
// another model than the one tec builds is an error naming it.
func TestConfigRefused(t *testing.T) {
	cases := []struct {
		name, modelType string
		extra           map[string]string
		want            string
	}{
		{"mixture of experts", "qwen2", map[string]string{"num_experts": "8"}, "config.json: num_experts: a mixture of experts"},
		{"mixtral experts", "mistral", map[string]string{"num_local_experts": "8"}, "config.json: num_local_experts: a mixture of experts"},
		{"unknown field", "llama", map[string]string{"logit_scale": "0.5"}, `config.json: logit_scale: not a field tec reads or knows to leave a llama model unchanged`},
		{"quantized", "llama", map[string]string{"quantization_config": `{"quant_method": "gptq"}`}, "quantization_config: quantized weights"},
		{"yarn", "qwen2", map[string]string{"rope_scaling": `{"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}`}, `rope_scaling: rope_type "yarn": tec builds plain RoPE`},
		{"linear rope", "llama", map[string]string{"rope_scaling": `{"rope_type": "linear", "factor": 2.0}`}, `rope_scaling: rope_type "linear"`},
		{"llama3 without factor", "llama", map[string]string{"rope_scaling": `{"rope_type": "llama3", "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}`}, "rope_scaling: rope_type llama3 without factor"},
		{"llama3 with more", "llama", map[string]string{"rope_scaling": `{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "attention_factor": 2.0}`}, "rope_scaling.attention_factor: not read by tec for rope_type llama3"},
		{"llama3 factors reversed", "llama", map[string]string{"rope_scaling": `{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0, "original_max_position_embeddings": 8192}`}, "high_freq_factor 1 is not greater than low_freq_factor 4"},
		{"rope type and type disagree", "llama", map[string]string{"rope_scaling": `{"rope_type": "default", "type": "linear"}`}, `rope_type "default" and type "linear" disagree`},
		{"gelu", "llama", map[string]string{"hidden_act": `"gelu"`}, `hidden_act: "gelu": tec builds the SwiGLU FFN of silu only`},
		{"mlp bias", "llama", map[string]string{"mlp_bias": "true"}, "mlp_bias: true: tec builds the FFN's projections without biases"},
		{"interleaved rope", "llama", map[string]string{"rope_interleaved": "true"}, "rope_interleaved: true"},
		{"attention bias in mistral", "mistral", map[string]string{"attention_bias": "true"}, "attention_bias: mistral models have no attention_bias"},
		{"mlp bias in qwen3", "qwen3", map[string]string{"mlp_bias": "false"}, "mlp_bias: qwen3 models have no mlp_bias"},
		{"another family", "mixtral", nil, `model_type: "mixtral" is not a family tec builds (llama, mistral, qwen2, qwen3)`},
		{"no model type", "llama", map[string]string{"model_type": ""}, "model_type: missing"},
		{"another head", "llama", map[string]string{"architectures": `["LlamaForSequenceClassification"]`}, `architectures: ["LlamaForSequenceClassification"]: tec builds ["LlamaForCausalLM"]`},
		{"no hidden size", "llama", map[string]string{"hidden_size": ""}, "hidden_size: missing"},
		{"zero layers", "llama", map[string]string{"num_hidden_layers": "0"}, "num_hidden_layers: 0 is not an integer from 1 to"},
		{"fractional size", "llama", map[string]string{"vocab_size": "64.5"}, "vocab_size: 64.5 is not an integer"},
		{"kv heads not a divisor", "llama", map[string]string{"num_key_value_heads": "3"}, "num_key_value_heads: 3 does not divide num_attention_heads 4"},
		{"mistral kv heads missing", "mistral", map[string]string{"num_key_value_heads": ""}, "num_key_value_heads: missing"},
		{"odd head dim", "llama", map[string]string{"head_dim": "7"}, "head_dim: 7 is odd"},
		{"negative eps", "llama", map[string]string{"rms_norm_eps": "-1e-5"}, "rms_norm_eps: -1e-5 is not a positive number"},
		{"sliding layers without a window", "qwen2", map[string]string{"layer_types": `["sliding_attention", "full_attention"]`}, "layer_types: has sliding-window layers but sliding_window is null"},
		{"unknown layer type", "qwen3", map[string]string{"sliding_window": "64", "layer_types": `["full_attention", "chunked_attention"]`}, `layer_types: layer 1 is "chunked_attention"`},
		{"eos not ids", "llama", map[string]string{"eos_token_id": `"</s>"`}, "eos_token_id: \"</s>\" is not a token id or a list of them"},
		{"dtype disagrees", "llama", map[string]string{"torch_dtype": `"bfloat16"`, "dtype": `"float16"`}, `disagrees with`},
		{"custom code", "llama", map[string]string{"auto_map": `{"AutoModel": "x.Model"}`}, "auto_map: modelling code of the checkpoint's own"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tinyConfig(c.modelType, c.extra)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v\nwant %q", err, c.want)
			}
		})
	}
	for _, bad := range []string{`{"model_type": "llama", "model_type": "llama"}`, `[1]`, `{"model_type": "llama"} x`, ``} {
		if _, err := ParseConfig([]byte(bad)); err == nil || !strings.Contains(err.Error(), "config.json: not a JSON object") {
			t.Errorf("%q: error %v", bad, err)
		}
	}
}

// TestSlidingWindow checks which windows limit the context: Mistral's
// always, Qwen's only with use_sliding_window (or sliding layer_types),
// and none that is at least the context built.
func TestSlidingWindow(t *testing.T) {
	cases := []struct {
		name, modelType string
		extra           map[string]string
		window          int
	}{
		{"mistral", "mistral", map[string]string{"sliding_window": "16"}, 16},
		{"mistral null", "mistral", map[string]string{"sliding_window": "null"}, 0},
		{"qwen2 unused", "qwen2", map[string]string{"sliding_window": "16", "use_sliding_window": "false", "max_window_layers": "1"}, 0},
		{"qwen2 used", "qwen2", map[string]string{"sliding_window": "16", "use_sliding_window": "true", "max_window_layers": "1"}, 16},
		{"qwen3 layer types", "qwen3", map[string]string{"sliding_window": "16", "layer_types": `["full_attention", "sliding_attention"]`}, 16},
		{"qwen3 all full", "qwen3", map[string]string{"sliding_window": "16", "use_sliding_window": "true", "layer_types": `["full_attention", "full_attention"]`}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tinyConfig(c.modelType, c.extra)))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.SlidingWindow != c.window {
				t.Fatalf("window %d, want %d", cfg.SlidingWindow, c.window)
			}
			_, err = Program(cfg, Options{B: 1, P: 4, T: 32})
			if c.window == 0 && err != nil || c.window > 0 && (err == nil || !strings.Contains(err.Error(), "config.json: sliding_window: 16 is shorter than the context of 32 positions")) {
				t.Errorf("T = 32: %v", err)
			}
			if _, err := Program(cfg, Options{B: 1, P: 4, T: 16}); err != nil {
				t.Errorf("T = 16: %v", err)
			}
			if _, _, tt := DefaultSizes(cfg); c.window > 0 && tt != c.window {
				t.Errorf("default T %d, want the window", tt)
			}
		})
	}
}
