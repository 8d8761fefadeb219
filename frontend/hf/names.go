package hf

import (
	"fmt"
	"strconv"
	"strings"
)

// paramRule is one param of the program and the checkpoint tensor it
// binds to: the one mapping between the two, which the program's
// declarations (Program), the binding (ReadParams, TensorName) and the
// documentation all read.
type paramRule struct {
	// name is the param's name in the program; a layer's param is
	// declared in the loop over the layers, so layer l's is name.l
	// (wq.3).
	name string
	// tensor is the checkpoint's name, after "model.layers.L." for a
	// layer's param.
	tensor string
	// shape is the param's shape, in the program's constants.
	shape string
	layer bool
	// when says whether the family (config) has the param; nil: always.
	when func(c *Config) bool
	// what describes the param in the program's comment.
	what string
}

// layerPrefix is the prefix of a layer's tensors: model.layers.L.
const layerPrefix = "model.layers."

var paramRules = []paramRule{
	{name: "embed", tensor: "model.embed_tokens.weight", shape: "V, D", what: "token embeddings"},
	{name: "norm", tensor: "model.norm.weight", shape: "D", what: "the final RMSNorm's gain"},
	{name: "lm_head", tensor: "lm_head.weight", shape: "V, D", when: func(c *Config) bool { return !c.Tied }, what: "the output projection"},
	{name: "attn_norm", tensor: "input_layernorm.weight", shape: "D", layer: true, what: "RMSNorm gain before attention"},
	{name: "wq", tensor: "self_attn.q_proj.weight", shape: "NH * DH, D", layer: true},
	{name: "bq", tensor: "self_attn.q_proj.bias", shape: "NH * DH", layer: true, when: qkvBias},
	{name: "wk", tensor: "self_attn.k_proj.weight", shape: "NKV * DH, D", layer: true},
	{name: "bk", tensor: "self_attn.k_proj.bias", shape: "NKV * DH", layer: true, when: qkvBias},
	{name: "wv", tensor: "self_attn.v_proj.weight", shape: "NKV * DH, D", layer: true},
	{name: "bv", tensor: "self_attn.v_proj.bias", shape: "NKV * DH", layer: true, when: qkvBias},
	{name: "q_norm", tensor: "self_attn.q_norm.weight", shape: "DH", layer: true, when: qkNorm, what: "RMSNorm gain of each query head"},
	{name: "k_norm", tensor: "self_attn.k_norm.weight", shape: "DH", layer: true, when: qkNorm, what: "RMSNorm gain of each key head"},
	{name: "wo", tensor: "self_attn.o_proj.weight", shape: "D, NH * DH", layer: true},
	{name: "bo", tensor: "self_attn.o_proj.bias", shape: "D", layer: true, when: func(c *Config) bool { return c.OBias }},
	{name: "ffn_norm", tensor: "post_attention_layernorm.weight", shape: "D", layer: true, what: "RMSNorm gain before the FFN"},
	{name: "w_gate", tensor: "mlp.gate_proj.weight", shape: "FF, D", layer: true},
	{name: "w_up", tensor: "mlp.up_proj.weight", shape: "FF, D", layer: true},
	{name: "w_down", tensor: "mlp.down_proj.weight", shape: "D, FF", layer: true},
}

func qkvBias(c *Config) bool { return c.QKVBias }
func qkNorm(c *Config) bool  { return c.QKNorm }

// has reports whether the family of c has the param.
func (r *paramRule) has(c *Config) bool { return r.when == nil || r.when(c) }

// fullTensor returns the checkpoint's name of the param: for a layer's,
// layer l's.
func (r *paramRule) fullTensor(l int) string {
	if !r.layer {
		return r.tensor
	}
	return layerPrefix + strconv.Itoa(l) + "." + r.tensor
}

// TensorName returns the name of the checkpoint tensor that binds the
// program's param name (a name as tec run and the .npz files give it:
// embed, wq.3), and false for a name that the mapping does not know. It
// does not depend on the config: a family without the param has no
// tensor of the name either.
func TensorName(param string) (string, bool) {
	base, layer, inLoop := strings.Cut(param, ".")
	for i := range paramRules {
		r := &paramRules[i]
		if r.name != base || r.layer != inLoop {
			continue
		}
		if !inLoop {
			return r.tensor, true
		}
		l, err := strconv.Atoi(layer)
		if err != nil || l < 0 || strconv.Itoa(l) != layer {
			return "", false
		}
		return r.fullTensor(l), true
	}
	return "", false
}

// Param is a param of the program that a config gives, and its tensor.
type Param struct {
	Name   string // as tec run names it: embed, wq.3
	Tensor string // model.embed_tokens.weight, model.layers.3.self_attn.q_proj.weight
	Shape  []int
}

// Params returns the params of the program that c gives, in the order of
// the program's declarations (the layers' params layer by layer).
func Params(c *Config) []Param {
	var out []Param
	consts := c.consts()
	add := func(r *paramRule, name string, l int) {
		var shape []int
		for _, s := range strings.Split(r.shape, ", ") {
			shape = append(shape, evalShape(s, consts))
		}
		out = append(out, Param{Name: name, Tensor: r.fullTensor(l), Shape: shape})
	}
	for i := range paramRules {
		if r := &paramRules[i]; !r.layer && r.has(c) {
			add(r, r.name, 0)
		}
	}
	for l := range c.Layers {
		for i := range paramRules {
			if r := &paramRules[i]; r.layer && r.has(c) {
				add(r, fmt.Sprintf("%s.%d", r.name, l), l)
			}
		}
	}
	return out
}

// consts returns the sizes the program's constants give.
func (c *Config) consts() map[string]int {
	return map[string]int{"V": c.Vocab, "D": c.Hidden, "NH": c.Heads, "NKV": c.KVHeads, "DH": c.HeadDim, "FF": c.FF}
}

// evalShape evaluates a dimension of paramRule.shape: a constant, or a
// product of two.
func evalShape(s string, consts map[string]int) int {
	n := 1
	for _, f := range strings.Split(s, " * ") {
		v, ok := consts[f]
		if !ok {
			panic("hf: unknown constant " + f + " in a param's shape")
		}
		n *= v
	}
	return n
}
