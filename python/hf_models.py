"""Write tiny Hugging Face checkpoints of the Llama family, and PyTorch's
greedy generation with each, for tec import DIR and tec generate --params DIR.

Usage: python3 python/hf_models.py OUTDIR [NAME...]

For each checkpoint NAME (all of them when none is named) it writes, into
OUTDIR:

  NAME/config.json          the config, as transformers writes it
  NAME/model.safetensors    the weights (or model-0000K-of-00002.safetensors
                            and model.safetensors.index.json, sharded)
  NAME.prompt.npy           the prompts' token ids, int32 [B, P]
  NAME.expected.json        {"tokens": [[...], ...]}: each sequence's
                            greedy tokens, the prompt's next and then one
                            per step (STEPS + 1), and "margin", the least
                            gap between the greatest logit and the next

The safetensors files are written by hand from the format's specification
(an 8-byte little-endian header length, the JSON header, the data): the
safetensors package is not needed. The forward pass below is written from
Hugging Face's modelling code of each family (transformers'
modeling_llama.py, modeling_mistral.py, modeling_qwen2.py,
modeling_qwen3.py): RMSNorm, rotate_half RoPE with Llama 3's frequency
scaling, grouped-query attention through repeat_kv, the SwiGLU MLP, Qwen2's
q/k/v biases and Qwen3's per-head q/k norms before RoPE. It runs in float64
on the weights as stored (bf16 and f16 values upcast exactly), the RoPE
tables in float32 as Hugging Face computes them, and recomputes the whole
sequence for every token, with no cache: independent of the caches that
tec's prefill and decode steps share. The Go test TestHFGenerate (cmd/tec)
runs it, imports each checkpoint and compares tec generate's tokens.
Needs Debian's python3-torch and python3-numpy.
"""

import json
import math
import os
import struct
import sys

import numpy as np
import torch

B, P, STEPS = 2, 5, 31  # two prompts of 5 tokens, 32 tokens each

# Each checkpoint: config.json's fields, the dtype its weights are stored
# in, and whether it is sharded. Sizes are tiny so that tec's simulator
# runs a generation in seconds.
BASE = {
    "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "intermediate_size": 64, "vocab_size": 96, "hidden_act": "silu", "initializer_range": 0.02,
    "use_cache": True, "transformers_version": "4.45.0", "attention_dropout": 0.0,
}
CHECKPOINTS = {
    # Llama 3.2: llama3 rope scaling (the three bands of frequencies at
    # head_dim 8: kept, blended, divided), tied embeddings, bf16
    "llama3": dict(dtype="BF16", sharded=False, config={
        **BASE, "architectures": ["LlamaForCausalLM"], "model_type": "llama", "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0, "tie_word_embeddings": True, "attention_bias": False, "mlp_bias": False,
        "pretraining_tp": 1, "head_dim": 8, "max_position_embeddings": 131072, "bos_token_id": 1,
        "eos_token_id": [2, 3], "torch_dtype": "bfloat16",
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 512, "rope_type": "llama3"}}),
    # Qwen2.5: implicit q/k/v biases, an unused sliding window, separate
    # lm_head, f32
    "qwen2": dict(dtype="F32", sharded=False, config={
        **BASE, "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "rms_norm_eps": 1e-6,
        "rope_theta": 1000000.0, "tie_word_embeddings": False, "max_position_embeddings": 32768,
        "sliding_window": 16, "use_sliding_window": False, "max_window_layers": 2, "bos_token_id": 1,
        "eos_token_id": 2, "torch_dtype": "float32"}),
    # Qwen3: per-head q/k RMSNorm, head_dim 16 (not hidden / heads),
    # attention_bias (every projection biased), tied, bf16
    "qwen3": dict(dtype="BF16", sharded=False, config={
        **BASE, "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "rms_norm_eps": 1e-6,
        "rope_theta": 1000000, "head_dim": 16, "attention_bias": True, "tie_word_embeddings": True,
        "max_position_embeddings": 40960, "rope_scaling": None, "sliding_window": None,
        "use_sliding_window": False, "max_window_layers": 2, "bos_token_id": 1, "eos_token_id": 2,
        "torch_dtype": "bfloat16"}),
    # Mistral: a sliding window as long as the context tec builds, f32
    "mistral": dict(dtype="F32", sharded=False, config={
        **BASE, "architectures": ["MistralForCausalLM"], "model_type": "mistral", "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "sliding_window": 64, "tie_word_embeddings": False,
        "max_position_embeddings": 32768, "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "bfloat16"}),
    # Llama 2 (and SmolLM2's layout): plain RoPE, rope_theta absent,
    # separate lm_head, f16, sharded into two files with an index
    "llama2_sharded": dict(dtype="F16", sharded=True, config={
        **BASE, "architectures": ["LlamaForCausalLM"], "model_type": "llama", "rms_norm_eps": 1e-5,
        "tie_word_embeddings": False, "rope_scaling": None, "max_position_embeddings": 4096,
        "pretraining_tp": 1, "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float16"}),
}

EMBED_SCALE = 0.3

TORCH_DTYPE = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


def head_dim(cfg):
    if cfg.get("head_dim"):
        return cfg["head_dim"]
    return cfg["hidden_size"] // cfg["num_attention_heads"]


def weights(cfg, gen):
    """The checkpoint's tensors by name, random: projections scaled by
    1/sqrt(fan-in) (those that add to the residual stream three times
    that, so that the layers outweigh the token's own embedding), norms
    around 1, biases, so that every part of the model changes the
    logits."""
    d, ff, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    nh, nkv, dh = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)
    family = cfg["model_type"]
    qkv_bias = family == "qwen2" or cfg.get("attention_bias", False)
    o_bias = cfg.get("attention_bias", False)

    def mat(rows, cols):
        return torch.randn(rows, cols, generator=gen) / math.sqrt(cols)

    def gain(n):
        return 1 + 0.2 * torch.randn(n, generator=gen)

    def bias(n):
        return 0.2 * torch.randn(n, generator=gen)

    w = {"model.embed_tokens.weight": torch.randn(v, d, generator=gen) * EMBED_SCALE}
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        w[p + "input_layernorm.weight"] = gain(d)
        w[p + "self_attn.q_proj.weight"] = mat(nh * dh, d)
        w[p + "self_attn.k_proj.weight"] = mat(nkv * dh, d)
        w[p + "self_attn.v_proj.weight"] = mat(nkv * dh, d)
        if qkv_bias:
            w[p + "self_attn.q_proj.bias"] = bias(nh * dh)
            w[p + "self_attn.k_proj.bias"] = bias(nkv * dh)
            w[p + "self_attn.v_proj.bias"] = bias(nkv * dh)
        if family == "qwen3":
            w[p + "self_attn.q_norm.weight"] = gain(dh)
            w[p + "self_attn.k_norm.weight"] = gain(dh)
        w[p + "self_attn.o_proj.weight"] = mat(d, nh * dh) * 3
        if o_bias:
            w[p + "self_attn.o_proj.bias"] = bias(d)
        w[p + "post_attention_layernorm.weight"] = gain(d)
        w[p + "mlp.gate_proj.weight"] = mat(ff, d)
        w[p + "mlp.up_proj.weight"] = mat(ff, d)
        w[p + "mlp.down_proj.weight"] = mat(d, ff) * 3
    w["model.norm.weight"] = gain(d)
    if not cfg["tie_word_embeddings"]:
        w["lm_head.weight"] = mat(v, d) * 4
    return w


def safetensors_bytes(tensors, dtype):
    """The tensors in the safetensors format, stored as dtype: the header
    padded with spaces to a multiple of 8 bytes, as the safetensors
    package pads it."""
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        data = t.to(TORCH_DTYPE[dtype]).contiguous()
        raw = data.view(torch.int16 if dtype != "F32" else torch.int32).numpy().astype("<i2" if dtype != "F32" else "<i4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def write_checkpoint(dirname, cfg, w, dtype, sharded):
    os.makedirs(dirname, exist_ok=True)
    with open(os.path.join(dirname, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    if not sharded:
        with open(os.path.join(dirname, "model.safetensors"), "wb") as f:
            f.write(safetensors_bytes(w, dtype))
        return
    names = list(w)
    half = len(names) // 2
    shards = [names[:half], names[half:]]
    weight_map, total = {}, 0
    for k, shard in enumerate(shards):
        fname = f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
        with open(os.path.join(dirname, fname), "wb") as f:
            f.write(safetensors_bytes({n: w[n] for n in shard}, dtype))
        for n in shard:
            weight_map[n] = fname
            total += w[n].numel() * (4 if dtype == "F32" else 2)
    with open(os.path.join(dirname, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


# The forward pass, from Hugging Face's modelling code.

def rms_norm(x, weight, eps):
    # LlamaRMSNorm (and Mistral's, Qwen2's, Qwen3's)
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps))


def rope_inv_freq(cfg):
    # _compute_default_rope_parameters and _compute_llama3_parameters, in
    # float32 as Hugging Face computes them
    base, dim = cfg.get("rope_theta", 10000.0), head_dim(cfg)
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    rs = cfg.get("rope_scaling")
    if rs is None or rs.get("rope_type", rs.get("type")) == "default":
        return inv_freq
    assert rs["rope_type"] == "llama3"
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old_context_len = rs["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low
    high_freq_wavelen = old_context_len / high
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low) / (high - low)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(hidden_states, n_rep):
    batch, num_key_value_heads, slen, hd = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, hd)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, hd)


def forward(cfg, w, ids):
    """The logits of every position of ids [B, S], float64."""
    d, nh, nkv, dh = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)
    eps, family = cfg["rms_norm_eps"], cfg["model_type"]
    bsz, seq = ids.shape
    x = w["model.embed_tokens.weight"][ids]
    # LlamaRotaryEmbedding: cos and sin in float32, then in the states' dtype
    positions = torch.arange(seq, dtype=torch.float32)
    freqs = positions[:, None] * rope_inv_freq(cfg)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().double(), emb.sin().double()
    mask = torch.full((seq, seq), float("-inf"), dtype=torch.float64).triu(1)

    def linear(h, name):
        y = h @ w[name + ".weight"].T
        if name + ".bias" in w:
            y = y + w[name + ".bias"]
        return y

    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        residual = x
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = linear(h, p + "self_attn.q_proj").view(bsz, seq, nh, dh)
        k = linear(h, p + "self_attn.k_proj").view(bsz, seq, nkv, dh)
        v = linear(h, p + "self_attn.v_proj").view(bsz, seq, nkv, dh)
        if family == "qwen3":  # Qwen3Attention: q_norm and k_norm over head_dim
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        q = q * cos + rotate_half(q) * sin  # apply_rotary_pos_emb
        k = k * cos + rotate_half(k) * sin
        k, v = repeat_kv(k, nh // nkv), repeat_kv(v, nh // nkv)
        scores = q @ k.transpose(2, 3) * dh ** -0.5 + mask
        attn = torch.softmax(scores, dim=-1) @ v
        attn = attn.transpose(1, 2).reshape(bsz, seq, nh * dh)
        x = residual + linear(attn, p + "self_attn.o_proj")
        residual = x
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate, up = linear(h, p + "mlp.gate_proj"), linear(h, p + "mlp.up_proj")
        x = residual + linear(torch.nn.functional.silu(gate) * up, p + "mlp.down_proj")
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else w["lm_head.weight"]
    return x @ head.T


def generate(cfg, w, prompt):
    """Greedy generation without a cache: the whole sequence again for
    each token. Returns the tokens and the least margin of the argmax."""
    return generate_n(cfg, w, prompt, STEPS)


# A checkpoint with a tokenizer, for tec generate's text prompts: Llama
# 3.2's layout with a vocabulary of the 256 bytes (token b is byte b, as
# GPT-2's byte-level alphabet writes it) and Llama 3's special tokens, no
# merges, so that a text's ids are its UTF-8 bytes after
# <|begin_of_text|>, which this script works out without a tokenizer
# library; a chat template of Llama 3's format.
TEXT_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
TEXT_CONFIG = {**CHECKPOINTS["llama3"]["config"], "vocab_size": 256 + len(TEXT_SPECIALS),
               "bos_token_id": 256, "eos_token_id": 257}
TEXT_STEPS = 15
TEXT_PROMPTS = {
    "plain": {"prompt": "Hello, tec! ünïcödé"},
    "chat": {"prompt": "What is a tensor?", "system": "Answer briefly.", "chat": True},
}
LLAMA3_TEMPLATE = (
    "{{- bos_token }}{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor %}{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}")


def byte_alphabet():
    """GPT-2's map of the 256 bytes to printable characters."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def text_ids(text):
    """The ids of text, special tokens split out first, the rest its UTF-8
    bytes."""
    ids, rest = [], text
    while rest:
        at = [(rest.find(s), s) for s in TEXT_SPECIALS if rest.find(s) >= 0]
        if not at:
            ids += list(rest.encode("utf-8"))
            break
        i, s = min(at)
        ids += list(rest[:i].encode("utf-8")) + [256 + TEXT_SPECIALS.index(s)]
        rest = rest[i + len(s):]
    return ids


def text_of(ids):
    """The text of ids, special tokens skipped, as tec's streamed decoding
    gives it."""
    return bytes(i for i in ids if i < 256).decode("utf-8", errors="replace")


def write_text_checkpoint(outdir):
    import jinja2
    alphabet = byte_alphabet()
    name = os.path.join(outdir, "llama3_text")
    cfg = TEXT_CONFIG
    vocab = {alphabet[b]: b for b in range(256)}
    tok = {
        "version": "1.0",
        "added_tokens": [{"id": 256 + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, s in enumerate(TEXT_SPECIALS)],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [256], "tokens": ["<|begin_of_text|>"]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": []},
    }
    for seed in range(1000, 1100):
        gen = torch.Generator().manual_seed(seed)
        w = weights(cfg, gen)
        stored = {n: t.to(TORCH_DTYPE["BF16"]).double() for n, t in w.items()}
        expected, ok = {}, True
        for key, p in TEXT_PROMPTS.items():
            text = p["prompt"]
            if p.get("chat"):
                msgs = [{"role": "system", "content": p["system"]}, {"role": "user", "content": text}]
                text = jinja2.Template(LLAMA3_TEMPLATE).render(messages=msgs, bos_token="<|begin_of_text|>", add_generation_prompt=True)
                ids = text_ids(text)
            else:
                ids = [256] + text_ids(text)
            tokens, margin = generate_n(cfg, stored, torch.tensor([ids]), TEXT_STEPS)
            seq = tokens[0].tolist()
            if 257 in seq:  # ends at its eos, as tec generate does
                seq = seq[:seq.index(257) + 1]
            ok = ok and margin > 1e-3 and len(set(seq)) >= 6
            expected[key] = {"prompt_ids": ids, "tokens": seq, "text": text_of(seq), "margin": margin}
        if ok:
            break
    else:
        raise SystemExit("llama3_text: no seed gives a decisive and varied greedy path")
    write_checkpoint(name, cfg, w, "BF16", False)
    with open(os.path.join(name, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False)
    with open(os.path.join(name, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "chat_template": LLAMA3_TEMPLATE}, f)
    with open(name + ".expected.json", "w") as f:
        json.dump({"seed": seed, "steps": TEXT_STEPS, "prompts": TEXT_PROMPTS, "expected": expected}, f, ensure_ascii=False, indent=1)
    print(f"llama3_text: seed {seed}, {expected['plain']['text']!r}")


def generate_n(cfg, w, prompt, steps):
    """generate with steps decode steps."""
    ids, out, margin = prompt.clone(), [], float("inf")
    for _ in range(steps + 1):
        logits = forward(cfg, w, ids)[:, -1, :]
        top = logits.topk(2, dim=-1).values
        margin = min(margin, float((top[:, 0] - top[:, 1]).min()))
        nxt = logits.argmax(dim=-1)
        out.append(nxt)
        ids = torch.cat([ids, nxt[:, None]], dim=1)
    return torch.stack(out, dim=1), margin


def main():
    outdir = sys.argv[1]
    names = sys.argv[2:] or list(CHECKPOINTS) + ["llama3_text"]
    os.makedirs(outdir, exist_ok=True)
    if "llama3_text" in names:
        names.remove("llama3_text")
        write_text_checkpoint(outdir)
    for i, name in enumerate(names):
        spec = CHECKPOINTS[name]
        cfg = spec["config"]
        # a seed whose greedy path is decisive at every token (the float64
        # reference and tec's f32 kernels then pick the same tokens) and
        # varied (at least 8 different tokens in each sequence, which a
        # mistake about positions would change)
        for seed in range(100 * i, 100 * i + 100):
            gen = torch.Generator().manual_seed(seed)
            w = weights(cfg, gen)
            stored = {n: t.to(TORCH_DTYPE[spec["dtype"]]).double() for n, t in w.items()}
            prompt = torch.randint(0, cfg["vocab_size"], (B, P), generator=gen)
            tokens, margin = generate(cfg, stored, prompt)
            if margin > 1e-3 and all(len(set(seq)) >= 8 for seq in tokens.tolist()):
                break
        else:
            raise SystemExit(f"{name}: no seed gives a decisive and varied greedy path")
        write_checkpoint(os.path.join(outdir, name), cfg, w, spec["dtype"], spec["sharded"])
        np.save(os.path.join(outdir, name + ".prompt.npy"), prompt.numpy().astype(np.int32))
        with open(os.path.join(outdir, name + ".expected.json"), "w") as f:
            json.dump({"tokens": tokens.tolist(), "margin": margin, "seed": seed}, f)
        print(f"{name}: seed {seed}, margin {margin:.3g}, tokens {tokens[0].tolist()}")


if __name__ == "__main__":
    main()
