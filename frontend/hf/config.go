package hf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"tec/internal/jsonobject"
)

// The families tec builds, by config.json's model_type, and the
// architecture (the model class with its head) each must name.
var families = []struct{ modelType, architecture string }{
	{"llama", "LlamaForCausalLM"},
	{"mistral", "MistralForCausalLM"},
	{"qwen2", "Qwen2ForCausalLM"},
	{"qwen3", "Qwen3ForCausalLM"},
}

// Config is what tec reads of a Llama-family config.json.
type Config struct {
	// ModelType is config.json's model_type: llama, mistral, qwen2 or
	// qwen3. Architecture is its class, e.g. LlamaForCausalLM.
	ModelType, Architecture string

	Hidden    int // hidden_size: D
	Layers    int // num_hidden_layers: L
	Heads     int // num_attention_heads: NH
	KVHeads   int // num_key_value_heads: NKV
	HeadDim   int // head_dim, or hidden_size / num_attention_heads: DH
	FF        int // intermediate_size
	Vocab     int // vocab_size
	MaxPos    int // max_position_embeddings; 0 when absent
	RopeTheta float64
	RMSEps    float64
	// Tied is tie_word_embeddings: the logits use the embedding table,
	// and the checkpoint's lm_head.weight (if any) is not read.
	Tied bool
	// Rope3 is Llama 3's frequency scaling (rope_scaling of rope_type
	// llama3), nil for plain RoPE.
	Rope3 *Llama3Rope
	// QKVBias: the q, k and v projections have biases (Qwen2, and
	// attention_bias); OBias: the output projection has one too
	// (attention_bias of Llama and Qwen3).
	QKVBias, OBias bool
	// QKNorm: RMSNorm of each query and key head before RoPE (Qwen3).
	QKNorm bool
	// SlidingWindow is the window of the layers that have one, 0 when
	// none does: the model is built only for contexts it does not limit.
	SlidingWindow int
	// BOS and EOS are the token ids (EOS may be several); -1 and nil when
	// absent. DType is torch_dtype (or dtype), "" when absent.
	BOS   int
	EOS   []int
	DType string
}

// Llama3Rope is rope_scaling of rope_type llama3.
type Llama3Rope struct {
	Factor, LowFreq, HighFreq float64
	OldContext                float64 // original_max_position_embeddings
}

// ConfigError is a config.json that tec cannot build: a field it does not
// read, or a value it does not honour.
type ConfigError struct {
	Field string // the field, "" for the file as a whole
	Msg   string
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return "config.json: " + e.Msg
	}
	return fmt.Sprintf("config.json: %s: %s", e.Field, e.Msg)
}

func cfgErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// A field of config.json: who has it, and what tec does with it.
type fieldRule struct {
	name string
	// families that have the field; nil: all four.
	families []string
	// read reads the field's value into the config; nil: the field
	// changes nothing in the forward pass and is not read.
	read func(c *Config, v json.RawMessage) error
}

// fieldRules is the whitelist: every field of config.json is one of
// these, or the import stops naming it. A field is here because its value
// is read (and honoured, or refused where tec cannot honour it), or
// because no value of it changes the forward pass that tec builds.
var fieldRules = []fieldRule{
	{name: "model_type", read: func(c *Config, v json.RawMessage) error { return nil }}, // read first, by parseConfig
	{name: "architectures", read: readArchitectures},
	{name: "hidden_size", read: sizeField("hidden_size")},
	{name: "num_hidden_layers", read: sizeField("num_hidden_layers")},
	{name: "num_attention_heads", read: sizeField("num_attention_heads")},
	{name: "num_key_value_heads", read: sizeField("num_key_value_heads")},
	{name: "head_dim", read: sizeField("head_dim")},
	{name: "intermediate_size", read: sizeField("intermediate_size")},
	{name: "vocab_size", read: sizeField("vocab_size")},
	{name: "max_position_embeddings", read: sizeField("max_position_embeddings")},
	{name: "rope_theta", read: func(c *Config, v json.RawMessage) error {
		return readPositive("rope_theta", v, &c.RopeTheta)
	}},
	{name: "rms_norm_eps", read: func(c *Config, v json.RawMessage) error {
		return readPositive("rms_norm_eps", v, &c.RMSEps)
	}},
	{name: "tie_word_embeddings", read: func(c *Config, v json.RawMessage) error {
		return readBool("tie_word_embeddings", v, &c.Tied)
	}},
	{name: "hidden_act", read: func(c *Config, v json.RawMessage) error {
		var s string
		if json.Unmarshal(v, &s) != nil || s != "silu" {
			return cfgErr("hidden_act", "%s: tec builds the SwiGLU FFN of silu only", v)
		}
		return nil
	}},
	{name: "rope_scaling", read: func(c *Config, v json.RawMessage) error { return readRope(c, "rope_scaling", v, false) }},
	{name: "rope_parameters", read: func(c *Config, v json.RawMessage) error { return readRope(c, "rope_parameters", v, true) }},
	{name: "attention_bias", families: []string{"llama", "qwen3"}, read: func(c *Config, v json.RawMessage) error {
		var b bool
		if err := readBool("attention_bias", v, &b); err != nil {
			return err
		}
		c.QKVBias, c.OBias = c.QKVBias || b, b
		return nil
	}},
	{name: "mlp_bias", families: []string{"llama"}, read: mustBe("mlp_bias", "false", "tec builds the FFN's projections without biases")},
	{name: "rope_interleaved", families: []string{"llama"}, read: mustBe("rope_interleaved", "false", "tec builds the rotate_half RoPE of Hugging Face's Llama, which pairs dimension e with e + head_dim/2")},
	{name: "sliding_window", families: []string{"mistral", "qwen2", "qwen3"}, read: readWindow},
	{name: "use_sliding_window", families: []string{"qwen2", "qwen3"}, read: func(c *Config, v json.RawMessage) error { return nil }}, // read with sliding_window
	{name: "max_window_layers", families: []string{"qwen2", "qwen3"}, read: func(c *Config, v json.RawMessage) error { return nil }},  // read with sliding_window
	{name: "layer_types", families: []string{"qwen2", "qwen3"}, read: func(c *Config, v json.RawMessage) error { return nil }},        // read with sliding_window
	{name: "bos_token_id", read: func(c *Config, v json.RawMessage) error {
		if string(v) == "null" {
			return nil
		}
		return readToken("bos_token_id", v, &c.BOS)
	}},
	{name: "eos_token_id", read: readEOS},
	{name: "torch_dtype", read: readDType("torch_dtype")},
	{name: "dtype", read: readDType("dtype")},
	// Left unread: no value of these changes the forward pass. Dropout is
	// training's; pretraining_tp only splits Llama's projections into
	// slices summed again (the same sums); the rest are bookkeeping,
	// training or generation defaults that tec generate does not use.
	{name: "attention_dropout"},
	{name: "pretraining_tp", families: []string{"llama"}},
	{name: "initializer_range"},
	{name: "use_cache"},
	{name: "pad_token_id"},
	{name: "transformers_version"},
	{name: "_name_or_path"},
	{name: "is_llama_config", families: []string{"llama"}},
}

// refusedWhy says why fields that tec does not read would change the
// model, for the error that names them; a field that is neither here nor
// in fieldRules is refused all the same, as unknown.
var refusedWhy = map[string]string{
	"num_experts":                     "a mixture of experts",
	"num_local_experts":               "a mixture of experts",
	"num_experts_per_tok":             "a mixture of experts",
	"moe_intermediate_size":           "a mixture of experts",
	"shared_expert_intermediate_size": "a mixture of experts",
	"decoder_sparse_step":             "a mixture of experts",
	"quantization_config":             "quantized weights",
	"auto_map":                        "modelling code of the checkpoint's own",
	"partial_rotary_factor":           "RoPE on part of each head",
	"attn_logit_softcapping":          "soft-capped attention scores",
	"final_logit_softcapping":         "soft-capped logits",
	"query_pre_attn_scalar":           "another attention scale",
}

// ParseConfig reads a Llama-family config.json: Llama 2, 3, 3.1 and 3.2
// (and SmolLM2, a Llama), Mistral, Qwen2 and Qwen2.5, Qwen3. Every field
// must be one of fieldRules; a field tec does not honour (a mixture of
// experts, a rope_scaling other than llama3, an activation other than
// silu, a bias the family has not) is an error naming it.
func ParseConfig(data []byte) (*Config, error) {
	fields, err := jsonobject.Fields(data)
	if err != nil {
		return nil, cfgErr("", "not a JSON object: %v", err)
	}
	byName := map[string]json.RawMessage{}
	for _, f := range fields {
		byName[f.Key] = f.Value
	}
	c := &Config{BOS: -1, RopeTheta: 10000, RMSEps: 1e-6}
	mt, ok := byName["model_type"]
	if !ok {
		return nil, cfgErr("model_type", "missing: tec reads the configs of model_type %s", familyList())
	}
	if json.Unmarshal(mt, &c.ModelType) != nil || familyIndex(c.ModelType) < 0 {
		return nil, cfgErr("model_type", "%s is not a family tec builds (%s)", mt, familyList())
	}
	c.Architecture = families[familyIndex(c.ModelType)].architecture
	switch c.ModelType {
	case "qwen2":
		c.QKVBias = true // Qwen2's q, k and v projections always have biases
	case "qwen3":
		c.QKNorm = true
		c.HeadDim = 128 // Qwen3Config's default
	}
	for _, f := range fields {
		i := slices.IndexFunc(fieldRules, func(r fieldRule) bool { return r.name == f.Key })
		if i < 0 {
			if why, ok := refusedWhy[f.Key]; ok {
				return nil, cfgErr(f.Key, "%s: tec builds neither it nor anything else than the %s model it would change", why, c.ModelType)
			}
			return nil, cfgErr(f.Key, "not a field tec reads or knows to leave a %s model unchanged; tec refuses it rather than build another model (docs/import.md lists the fields)", c.ModelType)
		}
		r := fieldRules[i]
		if r.families != nil && !slices.Contains(r.families, c.ModelType) {
			return nil, cfgErr(f.Key, "%s models have no %s in Hugging Face's code; tec refuses it rather than guess what it means", c.ModelType, f.Key)
		}
		if r.read != nil {
			if err := r.read(c, f.Value); err != nil {
				return nil, err
			}
		}
	}
	if err := c.readWindows(byName); err != nil {
		return nil, err
	}
	return c, c.check(byName)
}

// check checks the sizes: present, positive, and consistent.
func (c *Config) check(byName map[string]json.RawMessage) error {
	for _, f := range []struct {
		name string
		v    int
	}{{"hidden_size", c.Hidden}, {"num_hidden_layers", c.Layers}, {"num_attention_heads", c.Heads}, {"intermediate_size", c.FF}, {"vocab_size", c.Vocab}} {
		if _, ok := byName[f.name]; !ok {
			return cfgErr(f.name, "missing")
		}
	}
	if _, ok := byName["num_key_value_heads"]; !ok {
		if c.ModelType != "llama" {
			return cfgErr("num_key_value_heads", "missing (only Llama's config defaults it to num_attention_heads)")
		}
		c.KVHeads = c.Heads
	}
	if hd, ok := byName["head_dim"]; !ok || string(hd) == "null" {
		if c.ModelType != "qwen3" {
			if c.Hidden%c.Heads != 0 {
				return cfgErr("head_dim", "missing, and hidden_size %d is not a multiple of num_attention_heads %d", c.Hidden, c.Heads)
			}
			c.HeadDim = c.Hidden / c.Heads
		}
	}
	if c.Heads%c.KVHeads != 0 {
		return cfgErr("num_key_value_heads", "%d does not divide num_attention_heads %d: each key/value head serves a whole group of query heads", c.KVHeads, c.Heads)
	}
	if c.HeadDim%2 != 0 {
		return cfgErr("head_dim", "%d is odd: RoPE rotates pairs of dimensions", c.HeadDim)
	}
	return nil
}

// CheckContext checks that the model tec builds, with caches of t
// positions, computes what config.json's model does: a sliding window
// shorter than t would hide positions that tec's attention reads.
func (c *Config) CheckContext(t int) error {
	if c.SlidingWindow > 0 && c.SlidingWindow < t {
		return cfgErr("sliding_window", "%d is shorter than the context of %d positions tec would build: its attention reads every position, and would differ past the window"+
			"\n  hint: build a context of %d positions or fewer (tec import --dim T=%d)", c.SlidingWindow, t, c.SlidingWindow, c.SlidingWindow)
	}
	return nil
}

// readWindows reads sliding_window, with Qwen's use_sliding_window,
// max_window_layers and layer_types: the window that some layer has, or 0.
func (c *Config) readWindows(byName map[string]json.RawMessage) error {
	if c.SlidingWindow == 0 {
		if lt, ok := byName["layer_types"]; ok && string(lt) != "null" && strings.Contains(string(lt), "sliding") {
			return cfgErr("layer_types", "has sliding-window layers but sliding_window is null")
		}
		return nil
	}
	if c.ModelType == "mistral" {
		return nil // Mistral's window applies to every layer
	}
	// Qwen: the window applies where use_sliding_window is true, to the
	// layers from max_window_layers on (or as layer_types lists them)
	use := false
	if v, ok := byName["use_sliding_window"]; ok {
		if err := readBool("use_sliding_window", v, &use); err != nil {
			return err
		}
	}
	sliding := use
	if lt, ok := byName["layer_types"]; ok && string(lt) != "null" {
		var types []string
		if err := json.Unmarshal(lt, &types); err != nil || len(types) != c.Layers {
			return cfgErr("layer_types", "%s is not a list of num_hidden_layers (%d) layer types", clip(string(lt), 60), c.Layers)
		}
		sliding = false
		for i, t := range types {
			switch t {
			case "full_attention":
			case "sliding_attention":
				sliding = true
			default:
				return cfgErr("layer_types", "layer %d is %q: tec builds full_attention and sliding_attention layers", i, t)
			}
		}
	}
	if !sliding {
		c.SlidingWindow = 0
	}
	return nil
}

func readWindow(c *Config, v json.RawMessage) error {
	if string(v) == "null" {
		return nil
	}
	return readInt("sliding_window", v, &c.SlidingWindow)
}

// readArchitectures checks that architectures names the family's causal
// LM, the model with the head tec builds.
func readArchitectures(c *Config, v json.RawMessage) error {
	var a []string
	if json.Unmarshal(v, &a) != nil || len(a) != 1 || a[0] != c.Architecture {
		return cfgErr("architectures", "%s: tec builds [%q] of model_type %s", clip(string(v), 80), c.Architecture, c.ModelType)
	}
	return nil
}

// readRope reads rope_scaling, or rope_parameters (which may carry
// rope_theta too, where params is true).
func readRope(c *Config, field string, v json.RawMessage, params bool) error {
	if string(v) == "null" {
		return nil
	}
	fields, err := jsonobject.Fields(v)
	if err != nil {
		return cfgErr(field, "%s is not null or an object", clip(string(v), 60))
	}
	m := map[string]json.RawMessage{}
	for _, f := range fields {
		m[f.Key] = f.Value
	}
	typ := ""
	for _, k := range []string{"rope_type", "type"} {
		if raw, ok := m[k]; ok {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return cfgErr(field+"."+k, "%s is not a string", raw)
			}
			if typ != "" && s != typ {
				return cfgErr(field, "rope_type %q and type %q disagree", typ, s)
			}
			typ = s
			delete(m, k)
		}
	}
	if params {
		if raw, ok := m["rope_theta"]; ok {
			if err := readPositive(field+".rope_theta", raw, &c.RopeTheta); err != nil {
				return err
			}
			delete(m, "rope_theta")
		}
	}
	switch typ {
	case "default", "":
		if typ == "" && !params {
			return cfgErr(field, "has no rope_type")
		}
	case "llama3":
		r := &Llama3Rope{}
		for _, k := range []struct {
			name string
			dst  *float64
		}{{"factor", &r.Factor}, {"low_freq_factor", &r.LowFreq}, {"high_freq_factor", &r.HighFreq}, {"original_max_position_embeddings", &r.OldContext}} {
			raw, ok := m[k.name]
			if !ok {
				return cfgErr(field, "rope_type llama3 without %s", k.name)
			}
			if err := readPositive(field+"."+k.name, raw, k.dst); err != nil {
				return err
			}
			delete(m, k.name)
		}
		if !(r.HighFreq > r.LowFreq) {
			return cfgErr(field, "high_freq_factor %g is not greater than low_freq_factor %g", r.HighFreq, r.LowFreq)
		}
		c.Rope3 = r
	default:
		return cfgErr(field, "rope_type %q: tec builds plain RoPE (no rope_scaling, or rope_type default) and Llama 3's (llama3)", typ)
	}
	for _, f := range fields {
		if _, left := m[f.Key]; left {
			return cfgErr(field+"."+f.Key, "not read by tec for rope_type %s; tec refuses it rather than build another RoPE", orDefault(typ))
		}
	}
	return nil
}

func orDefault(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

func readEOS(c *Config, v json.RawMessage) error {
	if string(v) == "null" {
		return nil
	}
	var one int
	if readToken("eos_token_id", v, &one) == nil {
		c.EOS = []int{one}
		return nil
	}
	var many []json.RawMessage
	if json.Unmarshal(v, &many) != nil || len(many) == 0 {
		return cfgErr("eos_token_id", "%s is not a token id or a list of them", clip(string(v), 60))
	}
	for _, m := range many {
		if err := readToken("eos_token_id", m, &one); err != nil {
			return err
		}
		c.EOS = append(c.EOS, one)
	}
	return nil
}

// readDType reads torch_dtype, or dtype (its name in newer transformers):
// the dtype the weights are loaded in, for the program's header.
func readDType(field string) func(*Config, json.RawMessage) error {
	return func(c *Config, v json.RawMessage) error {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return cfgErr(field, "%s is not a string", clip(string(v), 40))
		}
		if c.DType != "" && c.DType != s {
			return cfgErr(field, "%q disagrees with %q given before", s, c.DType)
		}
		c.DType = s
		return nil
	}
}

// maxSize bounds every size of config.json, so that the constants the
// program computes from them stay far from overflow; the language's
// limit on a tensor's elements (2^30) is checked when the program is.
const maxSize = 1 << 24

// sizeField reads the size field name (sizeOf).
func sizeField(name string) func(*Config, json.RawMessage) error {
	return func(c *Config, v json.RawMessage) error {
		if name == "head_dim" && string(v) == "null" {
			return nil // derived in check
		}
		return readInt(name, v, sizeOf(c, name))
	}
}

// sizeOf returns the Config field that the size field name sets.
func sizeOf(c *Config, name string) *int {
	switch name {
	case "hidden_size":
		return &c.Hidden
	case "num_hidden_layers":
		return &c.Layers
	case "num_attention_heads":
		return &c.Heads
	case "num_key_value_heads":
		return &c.KVHeads
	case "head_dim":
		return &c.HeadDim
	case "intermediate_size":
		return &c.FF
	case "vocab_size":
		return &c.Vocab
	}
	return &c.MaxPos
}

// readInt reads a positive integer of at most maxSize.
func readInt(field string, v json.RawMessage, dst *int) error {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
	if err != nil || n < 1 || n > maxSize {
		return cfgErr(field, "%s is not an integer from 1 to %d", clip(string(v), 40), maxSize)
	}
	*dst = int(n)
	return nil
}

// readToken reads a token id: an integer from 0 up.
func readToken(field string, v json.RawMessage, dst *int) error {
	n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return cfgErr(field, "%s is not a token id", clip(string(v), 40))
	}
	*dst = int(n)
	return nil
}

// readPositive reads a finite number greater than 0.
func readPositive(field string, v json.RawMessage, dst *float64) error {
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || !(f > 0) || math.IsInf(f, 0) {
		return cfgErr(field, "%s is not a positive number", clip(string(v), 40))
	}
	*dst = f
	return nil
}

func readBool(field string, v json.RawMessage, dst *bool) error {
	if err := json.Unmarshal(v, dst); err != nil {
		return cfgErr(field, "%s is not true or false", clip(string(v), 40))
	}
	return nil
}

// mustBe accepts only the JSON value want (or null), which leaves the
// model as tec builds it; why says what tec builds.
func mustBe(field, want, why string) func(*Config, json.RawMessage) error {
	return func(c *Config, v json.RawMessage) error {
		if s := string(bytes.TrimSpace(v)); s != want && s != "null" {
			return cfgErr(field, "%s: %s", clip(s, 40), why)
		}
		return nil
	}
}

func familyIndex(modelType string) int {
	return slices.IndexFunc(families, func(f struct{ modelType, architecture string }) bool { return f.modelType == modelType })
}

func familyList() string {
	var s []string
	for _, f := range families {
		s = append(s, f.modelType)
	}
	return strings.Join(s, ", ")
}

// clip shortens s to n bytes for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
