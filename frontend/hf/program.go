package hf

import (
	"bytes"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"text/template"

	"tec/lang/syntax"
)

//go:embed program.te.tmpl
var programText string

var programTemplate = template.Must(template.New("program").Funcs(template.FuncMap{"float": formatFloat}).Parse(programText))

// Options are the sizes and the source of an imported program.
type Options struct {
	// B is the number of sequences, P the prompt's length, T the caches'
	// positions (the longest context): the program's constants, which
	// -D changes later.
	B, P, T int
	// Source names the checkpoint's directory in the program's header.
	Source string
}

// DefaultSizes returns B, P and T for c where tec import is given none:
// one sequence, a context of 1024 positions, or fewer where the model has
// fewer (max_position_embeddings, a sliding window), and a prompt of 128
// tokens, or the context where it is shorter.
func DefaultSizes(c *Config) (b, p, t int) {
	t = 1024
	if c.MaxPos > 0 {
		t = min(t, c.MaxPos)
	}
	if c.SlidingWindow > 0 {
		t = min(t, c.SlidingWindow)
	}
	return 1, min(128, t), t
}

// paramDecl is a param's declaration in the template.
type paramDecl struct {
	Name, Shape, Comment string
}

// Program returns the .te program of c: a prefill and a decode step, as
// tec generate runs them (the protocol of package generate), at the sizes
// of opts, laid out as tec fmt lays it out. Its params are Params(c).
func Program(c *Config, opts Options) ([]byte, error) {
	if opts.B < 1 || opts.P < 1 || opts.T < opts.P {
		return nil, fmt.Errorf("B = %d, P = %d, T = %d: want B and P at least 1 and T at least P", opts.B, opts.P, opts.T)
	}
	if err := c.CheckContext(opts.T); err != nil {
		return nil, err
	}
	data := map[string]any{
		"C": c, "B": opts.B, "P": opts.P, "T": opts.T, "Source": opts.Source,
		"ConfigLines": c.describe(), "Family": c.familyNote(), "Head": "embed",
	}
	if !c.Tied {
		data["Head"] = "lm_head"
	}
	var globals, layer []paramDecl
	for i := range paramRules {
		r := &paramRules[i]
		if !r.has(c) {
			continue
		}
		comment := r.tensor
		if r.layer {
			comment = layerPrefix + "{l}." + r.tensor
		}
		if r.what != "" {
			comment = r.what + ": " + comment
		}
		d := paramDecl{Name: r.name, Shape: r.shape, Comment: comment}
		if r.layer {
			layer = append(layer, d)
		} else {
			globals = append(globals, d)
		}
	}
	data["Globals"], data["Layer"] = globals, layer
	var b bytes.Buffer
	if err := programTemplate.Execute(&b, data); err != nil {
		return nil, err
	}
	f, err := syntax.Parse("imported.te", b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("the program does not parse: %v", err) // a bug of the template
	}
	return syntax.Format(f, b.Bytes())
}

// describe returns the lines of the program's header that give the
// config.json fields the program was built from.
func (c *Config) describe() []string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	items := []string{
		"model_type " + c.ModelType, fmt.Sprintf("hidden_size %d", c.Hidden), fmt.Sprintf("num_hidden_layers %d", c.Layers),
		fmt.Sprintf("intermediate_size %d", c.FF), fmt.Sprintf("vocab_size %d", c.Vocab),
		fmt.Sprintf("num_attention_heads %d", c.Heads), fmt.Sprintf("num_key_value_heads %d", c.KVHeads),
		fmt.Sprintf("head_dim %d", c.HeadDim), "hidden_act silu", "rms_norm_eps " + g(c.RMSEps), "rope_theta " + g(c.RopeTheta),
	}
	if r := c.Rope3; r != nil {
		items = append(items, fmt.Sprintf("rope_scaling llama3 (factor %s, low_freq_factor %s, high_freq_factor %s, original_max_position_embeddings %s)",
			g(r.Factor), g(r.LowFreq), g(r.HighFreq), g(r.OldContext)))
	} else {
		items = append(items, "rope_scaling none")
	}
	items = append(items, fmt.Sprintf("tie_word_embeddings %t", c.Tied))
	if c.ModelType == "llama" || c.ModelType == "qwen3" {
		items = append(items, fmt.Sprintf("attention_bias %t", c.OBias))
	}
	if c.SlidingWindow > 0 {
		items = append(items, fmt.Sprintf("sliding_window %d", c.SlidingWindow))
	}
	if c.MaxPos > 0 {
		items = append(items, fmt.Sprintf("max_position_embeddings %d", c.MaxPos))
	}
	if c.BOS >= 0 {
		items = append(items, fmt.Sprintf("bos_token_id %d", c.BOS))
	}
	if len(c.EOS) > 0 {
		ids := make([]string, len(c.EOS))
		for i, id := range c.EOS {
			ids[i] = strconv.Itoa(id)
		}
		items = append(items, "eos_token_id "+strings.Join(ids, " "))
	}
	if c.DType != "" {
		items = append(items, "torch_dtype "+c.DType+" (the params are f32 here; --precision stores them in half)")
	}
	return wrap(strings.Join(items, ", ")+".", 72)
}

// familyNote is the header's paragraph on the model, with what the
// family adds to a Llama.
func (c *Config) familyNote() []string {
	s := []string{"A Llama-family decoder: RMSNorm before attention and FFN, grouped-query attention with rotate_half RoPE, a SwiGLU FFN"}
	switch {
	case c.QKVBias && c.OBias:
		s = append(s, "the attention's projections have biases (attention_bias)")
	case c.QKVBias:
		s = append(s, "the q, k and v projections have biases (Qwen2's)")
	}
	if c.QKNorm {
		s = append(s, "each query and key head is RMS-normalised before RoPE (Qwen3's q_norm and k_norm)")
	}
	if c.SlidingWindow > 0 {
		s = append(s, fmt.Sprintf("the sliding window of %d positions does not limit the T positions built here (tec import checks T against it; a larger -D T would not be the model)", c.SlidingWindow))
	}
	if c.Tied {
		s = append(s, "the logits use the embedding table (tied embeddings)")
	} else {
		s = append(s, "the logits use lm_head")
	}
	return wrap(strings.Join(s, "; ")+".", 74)
}

// wrap breaks s into lines of at most width bytes where its words allow.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}

// formatFloat writes v as a float literal of the language: the shortest
// decimal that reads back as v, with a point or an exponent.
func formatFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}
