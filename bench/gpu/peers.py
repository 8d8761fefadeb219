#!/usr/bin/env python3
"""The peers: the example models in PyTorch (and JAX), on tec's own weights.

Each model of examples/ that the issue's evaluation names (BERT, ResNeXt-101,
LSTM, EfficientNet-b0, Swin-B, MMoE), and the Llama-3.2-1B-shaped prefill and
decode step of examples/llama.te (``llama``, ``llama-decode``), is written here once, against a small
namespace of operations (``ops``) that has a PyTorch and a JAX implementation.
A model is two functions:

- ``prepare(ops, cfg, params)`` turns tec's params (NumPy arrays named as the
  ``.te`` file names them; the packed ``wts`` vectors unpacked in the order the
  file takes them, which must use the vector exactly) into the arrays the
  forward pass uses, on the device, in the precision asked for;
- ``forward(ops, cfg, w, feeds)`` computes the outputs, by name, from the
  inputs, by name.

``cfg`` holds the ``.te`` file's constants (``const NAME = VALUE``), overridden
by ``-D NAME=VALUE`` as tec's are: the tiny configuration is read from the
file's ``# tiny:`` line, so both sizes come from the file itself.

The PyTorch peer runs as ``eager``, ``compile`` (torch.compile),
``compile-max`` (torch.compile mode="max-autotune") and ``cudagraph`` (a CUDA
graph of eager); the JAX peer as ``jax`` (jax.jit). Each runs where it can:
torch.compile needs PyTorch 2, CUDA graphs a GPU, ``jax`` an installed JAX;
what cannot run is reported as such, never counted as a pass.

Modes (run from anywhere; ``python3 bench/gpu/peers.py -h``):

``--check``
    for each model at the size asked, makes random feeds (as ``--make-feeds``)
    and evaluates them with tec's reference evaluator (``tec run --device ref
    --inputs --params``, f32 and each half ``--precision``), or takes the feeds
    and references that bench/gpu/prepare.sh saved (``--prepared DIR``), runs
    every peer on them in every precision and compares with tec's; prints a
    table and exits 0 only if every peer that ran matches. This is the
    contract that keeps the peers honest: CI runs
    ``python3 bench/gpu/peers.py --check --device cpu --size tiny``.
``--generate-check``
    greedy generation of the tiny Llama (examples/llama.te) at B = 1 and
    B = 4: the PyTorch peer's prefill and ``--steps`` decode steps
    (llama_generate, in f64 and f32) against ``tec generate --json`` on the
    same random prompt and weights, on the reference and on the kernels in
    the simulator (-O4, race-checked); every token must be the same, and no
    sequence may be one token repeated (a check that could not tell one
    step from another). CI runs ``python3 bench/gpu/peers.py
    --generate-check --device cpu``.
``--bench``
    times every peer on the feeds of ``--feeds DIR`` (a directory of
    ``NAME.npy``), each run timed on its own (CUDA events on a GPU), and
    writes one JSON record per peer and precision (median, min, max ms).
``--make-feeds DIR``
    writes random feeds for one model and size to DIR/NAME.npy (see
    random_feeds), which tec's runner (``--inputs DIR --params DIR``), ``tec
    run`` and the peers all read: a GPU machine without Go gives tec and the
    peers the same full-size weights this way.

Needs NumPy and PyTorch (1.13 or later); JAX is optional.
"""

import argparse
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
EXAMPLES = REPO / "examples"
MODELS = ("bert", "resnext", "lstm", "efficientnet", "swin", "mmoe", "llama", "llama-decode")

# The models that are not a file's only model: the file (examples/FILE.te)
# and the model in it (tec's --model). Every other model is its file's only one.
ENTRY_POINTS = {"llama": ("llama", "prefill"), "llama-decode": ("llama", "decode")}


def source(model):
    """The example file that holds the model, examples/FILE.te."""
    return EXAMPLES / f"{ENTRY_POINTS.get(model, (model, None))[0]}.te"


def model_flags(model):
    """The tec flags that pick the model in its file: [] or ["--model", NAME]."""
    entry = ENTRY_POINTS.get(model, (model, None))[1]
    return ["--model", entry] if entry else []
PRECISIONS = ("f64", "f32", "bf16", "f16")
RUNNERS = ("eager", "compile", "compile-max", "cudagraph", "jax")

# ---------------------------------------------------------------------------
# Configuration: the .te file's constants and its tiny configuration.


def _number(text):
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        return float(text)


def tiny_defines(model):
    """Returns the -D NAME=VALUE pairs of the model's "# tiny:" line, in order."""
    src = source(model).read_text()
    m = re.search(r"^# tiny:(.*)$", src, re.M)
    if not m:
        raise ValueError(f"{source(model)} has no '# tiny:' line")
    return re.findall(r"-D\s+(\w+)=(\S+)", m.group(1))


def config(model, size, defines=()):
    """Returns the model's constants at size "tiny" or "full", by name, with
    defines ((NAME, VALUE) pairs, as tec's -D) applied last.

    Constants defined by a literal are read from the .te file; those defined by
    expressions (DH = D / NH) are computed by the model's own code.
    """
    src = source(model).read_text()
    cfg = {}
    for name, value in re.findall(r"^const\s+(\w+)\s*=\s*([-0-9.eE+]+)\s*(?:#.*)?$", src, re.M):
        cfg[name] = _number(value)
    if size == "tiny":
        for name, value in tiny_defines(model):
            cfg[name] = _number(value)
    elif size != "full":
        raise ValueError(f"unknown size {size!r} (want tiny or full)")
    for name, value in defines:
        cfg[name] = _number(str(value))
    return cfg


class Unpacker:
    """Takes consecutive tensors out of a packed weight vector, as take1..take4
    of lang/stdlib/packed.te do: row-major, each starting where the last ended."""

    def __init__(self, flat, name="wts"):
        self.flat, self.off, self.name, self.shapes = flat, 0, name, []

    def take(self, *shape):
        n = math.prod(shape)
        self.shapes.append(shape)
        if self.off + n > self.flat.size:
            raise ValueError(f"{self.name}: taking {shape} at {self.off} passes its end {self.flat.size}")
        a = self.flat[self.off:self.off + n].reshape(shape)
        self.off += n
        return a

    def done(self):
        """Fails unless every element was taken: a peer that reads the packed
        vector in another order or size than the model would go unnoticed."""
        if self.off != self.flat.size:
            raise ValueError(f"{self.name}: {self.off} of {self.flat.size} elements used")


class _Counting:
    """A stand-in for a packed vector of unknown length, to count its size."""

    size = 1 << 62

    def __getitem__(self, s):
        return self

    def reshape(self, shape):
        return np.broadcast_to(np.float32(0), shape)


def packed_shapes(prepare_fn, cfg):
    """The shapes of the tensors that prepare_fn takes, in order, out of a
    model's packed ``wts``."""
    u = Unpacker(_Counting())
    prepare_fn(None, cfg, {"wts": None}, unpacker=u)
    return u.shapes


# ---------------------------------------------------------------------------
# Operations, in PyTorch and in JAX. Models use only these, NumPy-style
# indexing (x[:, None]), x.reshape and x.shape.


class TorchOps:
    """The operations in PyTorch, on one device and float dtype."""

    name = "torch"

    def __init__(self, device="cpu", precision="f32"):
        import torch
        import torch.nn.functional as F
        self.torch, self.F = torch, F
        self.device = torch.device(device)
        self.dtype = {"f64": torch.float64, "f32": torch.float32,
                      "bf16": torch.bfloat16, "f16": torch.float16}[precision]

    def asarray(self, a):
        # A copy (np.array), never the caller's memory: a model that updates
        # a cache in place must not change the feeds.
        a = np.array(a, order="C")
        t = self.torch.from_numpy(a).to(self.device)
        return t.to(self.dtype) if a.dtype.kind == "f" else t

    def write_prefix(self, cache, l, new):
        """Layer l of cache [L, B, NKV, T, DH] at positions 0..P-1 set to new
        [B, NKV, P, DH], in place, as Hugging Face's StaticCache.update
        (index_copy_ at the cache positions); returns the cache."""
        cache[l, :, :, :new.shape[2]] = new
        return cache

    def write_slots(self, cache, l, pos, new):
        """Layer l of cache [L, B, NKV, T, DH] at position pos[b] of each
        sequence b set to new [B, NKV, DH], in place; returns the cache."""
        cache[l, self.torch.arange(new.shape[0], device=cache.device), :, pos.long()] = new
        return cache

    def position_bias(self, pos, T):
        """[B, T]: 0 where t <= pos[b], -inf after (the positions not yet written)."""
        t = self.torch.arange(T, device=pos.device)
        zero = self.torch.zeros((), dtype=self.dtype, device=pos.device)
        return self.torch.where(t[None, :] <= pos[:, None].long(), zero, -math.inf)

    def to_numpy(self, x):
        return x.detach().to("cpu", self.torch.float64).numpy()

    def embed(self, table, ids):
        """The rows of table at ids (an embedding lookup, tec's gather)."""
        return table[ids.long()]

    def linear(self, x, w, b=None):
        y = x @ w
        return y if b is None else y + b

    def einsum(self, spec, *xs):
        return self.torch.einsum(spec, *xs)

    def layernorm(self, x, g, b, eps):
        return self.F.layer_norm(x, x.shape[-1:], g, b, eps)

    def rmsnorm(self, x, g, eps):
        """x / sqrt(mean(x²) + eps) · g over the last axis, the statistic in
        f32 or wider, as Llama's RMSNorm computes it."""
        xf = x.to(self.torch.promote_types(x.dtype, self.torch.float32))
        y = xf * self.torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        return g * y.to(x.dtype)

    def repeat_kv(self, x, groups):
        """Each key/value head of x [B, NKV, S, DH] repeated for the groups
        query heads that read it: head n of the result is x's head n // groups."""
        return x.repeat_interleave(groups, dim=1)

    def argmax(self, x, axis):
        return x.argmax(axis)

    def gelu(self, x):
        # lang/stdlib/activations.te's gelu is the tanh approximation.
        return self.F.gelu(x, approximate="tanh")

    def softmax(self, x, axis=-1):
        return self.torch.softmax(x, axis)

    def sigmoid(self, x):
        return self.torch.sigmoid(x)

    def relu(self, x):
        return self.torch.relu(x)

    def swish(self, x):
        return self.F.silu(x)

    def conv2d(self, x, w, b, stride, pad, groups=1):
        return self.F.conv2d(x, w, b, stride, pad, 1, groups)

    def max_pool2d(self, x, k, stride, pad):
        return self.F.max_pool2d(x, k, stride, pad)

    def mean(self, x, axes):
        return x.mean(dim=axes)

    def roll(self, x, shifts, axes):
        return self.torch.roll(x, shifts, axes)

    def transpose(self, x, perm):
        return x.permute(*perm)

    def stack(self, xs, axis=0):
        return self.torch.stack(xs, axis)

    def concat(self, xs, axis):
        return self.torch.cat(xs, axis)

    def attention(self, q, k, v, bias=None):
        """softmax(q·kᵀ/√d + bias)·v over the last two axes, as the fused
        kernel PyTorch 2 has (scaled_dot_product_attention) where it has one."""
        sdpa = getattr(self.F, "scaled_dot_product_attention", None)
        if sdpa is not None:
            return sdpa(q, k, v, attn_mask=bias)
        s = q @ k.transpose(-1, -2) * (1 / math.sqrt(q.shape[-1]))
        if bias is not None:
            s = s + bias
        return self.torch.softmax(s, -1) @ v

    def lstm_weights(self, W, U, b):
        """A cuDNN-backed torch.nn.LSTM holding tec's stacked LSTM weights
        (W, U: [L, 4, H, H] with x·W; b: [L, 4, H]; gates input, cell, forget,
        output), reordered to PyTorch's layout ([4H, H] with W·x; gates input,
        forget, cell, output; b_hh zero)."""
        torch = self.torch
        L, _, H, _ = W.shape
        mod = torch.nn.LSTM(H, H, L)
        order = list(TORCH_GATE_ORDER)
        with torch.no_grad():
            for l in range(L):
                getattr(mod, f"weight_ih_l{l}").copy_(torch.from_numpy(
                    np.concatenate([W[l, q].T for q in order])))
                getattr(mod, f"weight_hh_l{l}").copy_(torch.from_numpy(
                    np.concatenate([U[l, q].T for q in order])))
                getattr(mod, f"bias_ih_l{l}").copy_(torch.from_numpy(np.concatenate([b[l, q] for q in order])))
                getattr(mod, f"bias_hh_l{l}").zero_()
        mod = mod.to(self.device, self.dtype)
        mod.flatten_parameters()
        return mod

    def lstm(self, mod, xs):
        return mod(xs)[0]


# PyTorch's gates are (input, forget, cell, output); these are the tec gate
# numbers (0 input, 1 cell, 2 forget, 3 output) in that order.
TORCH_GATE_ORDER = (0, 2, 1, 3)


class JaxOps:
    """The operations in JAX (jax.numpy and lax), for jax.jit."""

    name = "jax"

    def __init__(self, device="cpu", precision="f32"):
        import jax
        import jax.numpy as jnp
        if precision == "f64":
            jax.config.update("jax_enable_x64", True)
        self.jax, self.jnp, self.lax = jax, jnp, jax.lax
        self.dtype = {"f64": jnp.float64, "f32": jnp.float32,
                      "bf16": jnp.bfloat16, "f16": jnp.float16}[precision]
        self.device = jax.devices("gpu" if device == "cuda" else "cpu")[0]

    def asarray(self, a):
        a = np.asarray(a)
        x = self.jnp.asarray(a, dtype=self.dtype if a.dtype.kind == "f" else a.dtype)
        return self.jax.device_put(x, self.device)

    def write_prefix(self, cache, l, new):
        return cache.at[l, :, :, :new.shape[2]].set(new)

    def write_slots(self, cache, l, pos, new):
        return cache.at[l, self.jnp.arange(new.shape[0]), :, pos].set(new)

    def position_bias(self, pos, T):
        t = self.jnp.arange(T)
        return self.jnp.where(t[None, :] <= pos[:, None], 0.0, -self.jnp.inf).astype(self.dtype)

    def to_numpy(self, x):
        return np.asarray(x.astype(self.jnp.float32) if x.dtype == self.jnp.bfloat16 else x, dtype=np.float64)

    def embed(self, table, ids):
        """The rows of table at ids (an embedding lookup, tec's gather)."""
        return self.jnp.take(table, ids, axis=0)

    def linear(self, x, w, b=None):
        y = x @ w
        return y if b is None else y + b

    def einsum(self, spec, *xs):
        return self.jnp.einsum(spec, *xs)

    def layernorm(self, x, g, b, eps):
        xf = x.astype(self.jnp.float32) if x.dtype in (self.jnp.float16, self.jnp.bfloat16) else x
        mu = xf.mean(-1, keepdims=True)
        var = ((xf - mu) ** 2).mean(-1, keepdims=True)
        return ((xf - mu) * self.lax.rsqrt(var + eps)).astype(x.dtype) * g + b

    def rmsnorm(self, x, g, eps):
        xf = x.astype(self.jnp.float32) if x.dtype in (self.jnp.float16, self.jnp.bfloat16) else x
        y = xf * self.lax.rsqrt((xf * xf).mean(-1, keepdims=True) + eps)
        return g * y.astype(x.dtype)

    def repeat_kv(self, x, groups):
        return self.jnp.repeat(x, groups, axis=1)

    def argmax(self, x, axis):
        return self.jnp.argmax(x, axis)

    def gelu(self, x):
        return self.jax.nn.gelu(x, approximate=True)

    def softmax(self, x, axis=-1):
        return self.jax.nn.softmax(x, axis=axis)

    def sigmoid(self, x):
        return self.jax.nn.sigmoid(x)

    def relu(self, x):
        return self.jax.nn.relu(x)

    def swish(self, x):
        return self.jax.nn.silu(x)

    def conv2d(self, x, w, b, stride, pad, groups=1):
        y = self.lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad), (pad, pad)],
                                          feature_group_count=groups,
                                          dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return y if b is None else y + b[None, :, None, None]

    def max_pool2d(self, x, k, stride, pad):
        return self.lax.reduce_window(x, -self.jnp.inf, self.lax.max, (1, 1, k, k), (1, 1, stride, stride),
                                      [(0, 0), (0, 0), (pad, pad), (pad, pad)])

    def mean(self, x, axes):
        return x.mean(axis=axes)

    def roll(self, x, shifts, axes):
        return self.jnp.roll(x, shifts, axes)

    def transpose(self, x, perm):
        return self.jnp.transpose(x, perm)

    def stack(self, xs, axis=0):
        return self.jnp.stack(xs, axis)

    def concat(self, xs, axis):
        return self.jnp.concatenate(xs, axis)

    def attention(self, q, k, v, bias=None):
        s = q @ self.jnp.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]))
        if bias is not None:
            s = s + bias
        return self.jax.nn.softmax(s, axis=-1) @ v

    def lstm_weights(self, W, U, b):
        return tuple(self.asarray(a) for a in (W, U, b))

    def lstm(self, weights, xs):
        W, U, b = weights
        jnp, sig = self.jnp, self.jax.nn.sigmoid
        inp = xs
        for l in range(W.shape[0]):
            # The input projections of all steps at once; the scan does the rest.
            xp = jnp.einsum("tnk,qkj->tqnj", inp, W[l]) + b[l][None, :, None, :]

            def step(carry, xq, U_l=U[l]):
                h, c = carry
                g = xq + jnp.einsum("nk,qkj->qnj", h, U_l)
                c = c * sig(g[2]) + sig(g[0]) * jnp.tanh(g[1])
                h = jnp.tanh(c) * sig(g[3])
                return (h, c), h

            zero = jnp.zeros(inp.shape[1:], inp.dtype)
            _, inp = self.lax.scan(step, (zero, zero), xp)
        return inp


# ---------------------------------------------------------------------------
# The models. Each follows examples/MODEL.te; comments name its functions.


def _prepared(ops, tree):
    """Moves a tree (dicts, lists) of NumPy arrays to ops' device and dtype."""
    if isinstance(tree, dict):
        return {k: _prepared(ops, v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_prepared(ops, v) for v in tree]
    if isinstance(tree, np.ndarray):
        return ops.asarray(tree)
    return tree


# BERT (examples/bert.te). The model takes token and segment ids and looks
# them up in the word and token-type tables (tec's gathers), adding the
# position embeddings of positions 0..S-1; bert_front is that embedding.
BERT_INPUTS = ("ids", "seg")


def bert_front(ops, w, feeds):
    """The encoder's input before the embedding layernorm."""
    S = feeds["ids"].shape[0]
    return ops.embed(w["wte"], feeds["ids"]) + w["wpe"][:S] + ops.embed(w["wtt"], feeds["seg"])


def bert_prepare(ops, cfg, p, unpacker=None):
    names = ("wte", "wpe", "wtt", "ln_emb", "wqkv", "bqkv", "wo", "bo", "ln1", "w1", "b1", "w2", "b2", "ln2",
             "w_span", "b_span")
    return _prepared(ops, {n: p[n] for n in names})


def bert_forward(ops, cfg, w, feeds):
    S, D, NH, L, eps = cfg["S"], cfg["D"], cfg["NH"], cfg["L"], cfg["EPS"]
    DH = D // NH
    x = ops.layernorm(bert_front(ops, w, feeds), w["ln_emb"][0], w["ln_emb"][1], eps)
    for l in range(L):
        # mha: the fused QKV projection, heads h*DH+e of each third
        qkv = ops.linear(x, w["wqkv"][l], w["bqkv"][l]).reshape(S, 3, NH, DH)
        q, k, v = (ops.transpose(qkv[:, i], (1, 0, 2)) for i in range(3))
        ctx = ops.transpose(ops.attention(q, k, v), (1, 0, 2)).reshape(S, D)
        a = ops.linear(ctx, w["wo"][l], w["bo"][l])
        x = ops.layernorm(x + a, w["ln1"][l, 0], w["ln1"][l, 1], eps)
        f = ops.linear(ops.gelu(ops.linear(x, w["w1"][l], w["b1"][l])), w["w2"][l], w["b2"][l])
        x = ops.layernorm(x + f, w["ln2"][l, 0], w["ln2"][l, 1], eps)
    return {"hidden": x, "logits": ops.linear(x, w["w_span"], w["b_span"])}


# ResNeXt (examples/resnext.te): folded batch norm, packed weights.


def resnext_prepare(ops, cfg, p, unpacker=None):
    u = unpacker or Unpacker(p["wts"])
    G, GW, STEM = cfg["G"], cfg["GW"], cfg["STEM"]

    def conv(cout, cin, k):  # conv_bn's take4 and take1
        return {"w": u.take(cout, cin, k, k), "b": u.take(cout)}

    w = {"stem": conv(STEM, 3, 7), "stages": []}
    cin = STEM
    for s, blocks in enumerate(cfg[f"B{i}"] for i in range(1, 5)):
        width, cout = G * GW * 2 ** s, 4 * STEM * 2 ** s
        stage = []
        for i in range(blocks):
            c = cin if i == 0 else cout
            blk = {"a": conv(width, c, 1), "b": conv(width, width // G, 3), "c": conv(cout, width, 1)}
            if i == 0:  # the projection shortcut, taken after the block
                blk["proj"] = conv(cout, cin, 1)
            stage.append(blk)
        w["stages"].append(stage)
        cin = cout
    w["fc_w"], w["fc_b"] = u.take(cin, cfg["CLASSES"]), u.take(cfg["CLASSES"])
    if unpacker is None:
        u.done()
    return _prepared(ops, w) if ops else w


def resnext_forward(ops, cfg, w, feeds):
    G = cfg["G"]

    def conv(x, c, stride=1, groups=1):
        k = c["w"].shape[-1]
        return ops.conv2d(x, c["w"], c["b"], stride, k // 2, groups)

    x = ops.max_pool2d(ops.relu(conv(feeds["img"], w["stem"], 2)), 3, 2, 1)
    for s, stage in enumerate(w["stages"]):
        for i, blk in enumerate(stage):
            stride = 2 if s > 0 and i == 0 else 1
            y = conv(ops.relu(conv(x, blk["a"])), blk["b"], stride, G)
            y = conv(ops.relu(y), blk["c"])
            x = ops.relu(y + (conv(x, blk["proj"], stride) if i == 0 else x))
    return {"logits": ops.linear(ops.mean(x, (2, 3)), w["fc_w"], w["fc_b"])}


# LSTM (examples/lstm.te): tec's stacked weights in a cuDNN LSTM.


def lstm_prepare(ops, cfg, p, unpacker=None):
    return {"lstm": ops.lstm_weights(p["W"], p["U"], p["b"])}


def lstm_forward(ops, cfg, w, feeds):
    return {"y": ops.lstm(w["lstm"], feeds["xs"])}


# EfficientNet (examples/efficientnet.te): MBConv blocks, packed weights.

EFFICIENTNET_STAGES = [[1, 16, 1, 1, 3], [6, 24, 2, 2, 3], [6, 40, 2, 2, 5], [6, 80, 3, 2, 3],
                       [6, 112, 3, 1, 5], [6, 192, 4, 2, 5], [6, 320, 1, 1, 3]]


def _filters(cfg, c):
    return max(8, int(c * cfg["WIDTH"] + 4) // 8 * 8)


def _repeats(cfg, r):
    return math.ceil(r * cfg["DEPTH"])


def efficientnet_prepare(ops, cfg, p, unpacker=None):
    u = unpacker or Unpacker(p["wts"])

    def conv(cout, cin, k):
        return {"w": u.take(cout, cin, k, k), "b": u.take(cout)}

    def tail(c, cout, k, sq):  # mbconv_tail: dw_bn, squeeze_excite, conv_bn
        return {"dw": conv(c, 1, k),
                "se": {"w1": u.take(c, sq), "b1": u.take(sq), "w2": u.take(sq, c), "b2": u.take(c)},
                "proj": conv(cout, c, 1)}

    stem = _filters(cfg, 32)
    w = {"stem": conv(stem, 3, 3), "blocks": []}
    cin = stem
    for s, (t, c, r, stride, k) in enumerate(EFFICIENTNET_STAGES):
        cout = _filters(cfg, c)
        for i in range(_repeats(cfg, r)):
            blk = {"stride": stride if i == 0 else 1, "residual": i > 0}
            if t > 1:
                blk["expand"] = conv(cin * t, cin, 1)
            blk.update(tail(cin * t, cout, k, max(1, cin // 4)))
            w["blocks"].append(blk)
            cin = cout
    head = _filters(cfg, 1280)
    w["head"] = conv(head, cin, 1)
    w["fc_w"], w["fc_b"] = u.take(head, cfg["CLASSES"]), u.take(cfg["CLASSES"])
    if unpacker is None:
        u.done()
    return _prepared(ops, w) if ops else w


def efficientnet_forward(ops, cfg, w, feeds):
    def conv(x, c, stride=1, groups=1):
        k = c["w"].shape[-1]
        return ops.conv2d(x, c["w"], c["b"], stride, k // 2, groups)

    x = ops.swish(conv(feeds["img"], w["stem"], 2))
    for blk in w["blocks"]:
        e = ops.swish(conv(x, blk["expand"])) if "expand" in blk else x
        d = ops.swish(conv(e, blk["dw"], blk["stride"], e.shape[1]))
        se = blk["se"]
        g = ops.sigmoid(ops.linear(ops.swish(ops.linear(ops.mean(d, (2, 3)), se["w1"], se["b1"])),
                                   se["w2"], se["b2"]))
        y = conv(d * g[:, :, None, None], blk["proj"])
        x = x + y if blk["residual"] else y
    h = ops.swish(conv(x, w["head"]))
    return {"logits": ops.linear(ops.mean(h, (2, 3)), w["fc_w"], w["fc_b"])}


# Swin Transformer (examples/swin.te), written as the reference Swin code is:
# roll, window partition, attention with the relative position bias and the
# shifted-window mask, window reverse, roll back.


def _swin_rel_index(ws):
    """rel_index of swin.te for every pair of positions of a ws×ws window."""
    t = np.arange(ws * ws)
    i, j = t[:, None], t[None, :]
    return ((i // ws - j // ws + ws - 1) * (2 * ws - 1) + i % ws - j % ws + ws - 1).reshape(-1)


def _swin_mask(res, ws, shift):
    """The shifted-window mask [windows, ws*ws, ws*ws]: 0 between tokens of one
    region of the rolled image, -100 between regions (Swin's img_mask)."""
    region = np.zeros((res, res), np.int64)
    bands = (slice(0, -ws), slice(-ws, -shift), slice(-shift, None))
    n = 0
    for hs in bands:
        for wsl in bands:
            region[hs, wsl] = n
            n += 1
    nwr = res // ws
    win = region.reshape(nwr, ws, nwr, ws).transpose(0, 2, 1, 3).reshape(nwr * nwr, ws * ws)
    return np.where(win[:, :, None] == win[:, None, :], 0.0, -100.0)


def swin_prepare(ops, cfg, p, unpacker=None):
    u = unpacker or Unpacker(p["wts"])
    E, P, MLP = cfg["EMBED"], cfg["PATCH"], cfg["MLP"]
    res = cfg["IMG"] // P
    w = {"patch_w": u.take(E, 3, P, P), "patch_b": u.take(E), "g0": u.take(E), "b0": u.take(E), "stages": []}
    c = E
    for s in range(4):
        if s > 0:  # patch_merge
            w["stages"].append({"merge": {"g": u.take(4 * c), "b": u.take(4 * c), "w": u.take(4 * c, 2 * c)}})
            c, res = 2 * c, res // 2
        nh, ws = cfg["H1"] * 2 ** s, min(cfg["WS"], res)
        for b in range(cfg[f"D{s + 1}"]):
            shift = b % 2 * (ws // 2) * (res > ws)
            blk = {"res": res, "ws": ws, "nh": nh, "shift": shift,
                   "g1": u.take(c), "b1": u.take(c), "wqkv": u.take(c, 3 * c), "bqkv": u.take(3 * c),
                   "table": u.take((2 * ws - 1) ** 2, nh), "wp": u.take(c, c), "bp": u.take(c),
                   "g2": u.take(c), "b2": u.take(c), "w1": u.take(c, MLP * c), "c1": u.take(MLP * c),
                   "w2": u.take(MLP * c, c), "c2": u.take(c), "rel_index": _swin_rel_index(ws)}
            if shift:
                blk["mask"] = _swin_mask(res, ws, shift)
            w["stages"].append({"block": blk})
    w["gf"], w["bf"] = u.take(c), u.take(c)
    w["hw"], w["hb"] = u.take(c, cfg["CLASSES"]), u.take(cfg["CLASSES"])
    if unpacker is None:
        u.done()
    return _prepared(ops, w) if ops else w


def _swin_block(ops, cfg, x, k):
    res, ws, nh, shift = k["res"], k["ws"], k["nh"], k["shift"]
    L, C = x.shape
    nwr, T, DH = res // ws, ws * ws, C // nh
    h = ops.layernorm(x, k["g1"], k["b1"], cfg["EPS"]).reshape(res, res, C)
    if shift:
        h = ops.roll(h, (-shift, -shift), (0, 1))
    win = ops.transpose(h.reshape(nwr, ws, nwr, ws, C), (0, 2, 1, 3, 4)).reshape(nwr * nwr, T, C)
    qkv = ops.transpose(ops.linear(win, k["wqkv"], k["bqkv"]).reshape(nwr * nwr, T, 3, nh, DH), (2, 0, 3, 1, 4))
    bias = ops.transpose(k["table"][k["rel_index"]].reshape(T, T, nh), (2, 0, 1))[None]
    if shift:
        bias = bias + k["mask"][:, None]
    ctx = ops.attention(qkv[0], qkv[1], qkv[2], bias)
    out = ops.linear(ops.transpose(ctx, (0, 2, 1, 3)).reshape(nwr * nwr, T, C), k["wp"], k["bp"])
    out = ops.transpose(out.reshape(nwr, nwr, ws, ws, C), (0, 2, 1, 3, 4)).reshape(res, res, C)
    if shift:
        out = ops.roll(out, (shift, shift), (0, 1))
    x = x + out.reshape(L, C)
    f = ops.linear(ops.gelu(ops.linear(ops.layernorm(x, k["g2"], k["b2"], cfg["EPS"]), k["w1"], k["c1"])),
                   k["w2"], k["c2"])
    return x + f


def _swin_merge(ops, cfg, x, res, m):
    L, C = x.shape
    g = x.reshape(res, res, C)
    parts = [g[0::2, 0::2], g[1::2, 0::2], g[0::2, 1::2], g[1::2, 1::2]]
    y = ops.concat(parts, -1).reshape(L // 4, 4 * C)
    return ops.linear(ops.layernorm(y, m["g"], m["b"], cfg["EPS"]), m["w"])


def swin_forward(ops, cfg, w, feeds):
    e = ops.conv2d(feeds["img"], w["patch_w"], w["patch_b"], cfg["PATCH"], 0)
    E, R = e.shape[1], e.shape[2]
    x = ops.layernorm(ops.transpose(e[0].reshape(E, R * R), (1, 0)), w["g0"], w["b0"], cfg["EPS"])
    res = R
    for st in w["stages"]:
        if "merge" in st:
            x, res = _swin_merge(ops, cfg, x, res, st["merge"]), res // 2
        else:
            x = _swin_block(ops, cfg, x, st["block"])
    y = ops.layernorm(x, w["gf"], w["bf"], cfg["EPS"])
    return {"logits": ops.linear(ops.mean(y, (0,))[None], w["hw"], w["hb"])}


# MMoE (examples/mmoe.te).


def mmoe_prepare(ops, cfg, p, unpacker=None):
    return _prepared(ops, {n: p[n] for n in ("we", "be", "wg", "bg", "wt", "bt", "wo", "bo")})


def mmoe_forward(ops, cfg, w, feeds):
    x = feeds["x"]
    ex = ops.relu(ops.einsum("nk,eku->enu", x, w["we"]) + w["be"][:, None, :])
    ys = []
    for t in range(cfg["TASKS"]):
        g = ops.softmax(ops.linear(x, w["wg"][t], w["bg"][t]), -1)
        mix = ops.einsum("ne,enu->nu", g, ex)
        tower = ops.relu(ops.linear(mix, w["wt"][t], w["bt"][t]))
        ys.append(ops.sigmoid(ops.linear(tower, w["wo"][t], w["bo"][t])))
    return {"y": ops.stack(ys, 0)}


# Llama (examples/llama.te): a Llama-3.2-1B-shaped decoder, written as
# Hugging Face's LlamaForCausalLM computes it: RMSNorm, q/k/v projections with
# [out, in] weights, RoPE by rotate_half on cos/sin tables, grouped-query
# attention (repeat_kv), SwiGLU, tied embeddings. The key and value cache is a
# static one, as Hugging Face's StaticCache holds it: [L, B, NKV, T, DH], every
# layer's keys (after RoPE) and values at each of T positions, written in
# place. The prefill (llama_forward) runs a prompt of P tokens causally and
# writes positions 0..P-1; a decode step (llama_decode_forward) runs one
# token per sequence at position pos[b], writes that slot and attends over
# the cache up to it; llama_generate runs the prefill and then greedy decode
# steps, as tec generate does.


def llama_rope_tables(cfg):
    """The cos and sin tables [T, DH] of Llama 3's RoPE: θ^(-2i/DH) scaled by
    rope_scaling (factor, low and high frequency factors, original context)
    as Hugging Face's _compute_llama3_parameters does, each frequency used by
    dimensions i and i + DH/2. Computed in float64, as tec's reference
    evaluates the .te file's tables; the peer's device rounds them once to
    its precision."""
    DH = cfg["D"] // cfg["NH"]
    inv = cfg["THETA"] ** (-np.arange(0, DH, 2, dtype=np.float64) / DH)
    wavelen = 2 * cfg["PI"] / inv
    factor, old, low, high = cfg["ROPE_FACTOR"], cfg["OLD_CTX"], cfg["LOW_FREQ"], cfg["HIGH_FREQ"]
    scaled = np.where(wavelen > old / low, inv / factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    medium = ~(wavelen < old / high) & ~(wavelen > old / low)
    freq = np.where(medium, (1 - smooth) * scaled / factor + smooth * scaled, scaled)
    angle = np.arange(cfg["T"], dtype=np.float64)[:, None] * np.concatenate([freq, freq])[None, :]
    return np.cos(angle), np.sin(angle)


LLAMA_PARAMS = ("wte", "attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "w_gate", "w_up", "w_down", "norm")


def llama_prepare(ops, cfg, p, unpacker=None):
    """The params, the RoPE tables of every cache position and the prefill's
    causal mask [P, P]; the prefill and the decode step share them."""
    w = {n: p[n] for n in LLAMA_PARAMS}
    w["cos"], w["sin"] = llama_rope_tables(cfg)
    P = cfg["P"]
    w["mask"] = np.where(np.arange(P)[None, :] <= np.arange(P)[:, None], 0.0, -np.inf)
    return _prepared(ops, w)


def llama_rotate_half(ops, x):
    """(x1, x2) -> (-x2, x1) on the halves of the last axis."""
    half = x.shape[-1] // 2
    return ops.concat([-x[..., half:], x[..., :half]], -1)


def _llama_ffn(ops, w, l, x, eps):
    h = ops.rmsnorm(x, w["ffn_norm"][l], eps)
    f = ops.swish(ops.linear(h, w["w_gate"][l].T)) * ops.linear(h, w["w_up"][l].T)
    return x + ops.linear(f, w["w_down"][l].T)


def _llama_logits(ops, w, x, eps):
    logits = ops.linear(ops.rmsnorm(x, w["norm"], eps), w["wte"].T)
    return logits, ops.argmax(logits, -1)


def llama_forward(ops, cfg, w, feeds):
    """The prefill: the prompts ids [B, P], the caches written at 0..P-1."""
    ids, kc, vc = feeds["ids"], feeds["k_cache"], feeds["v_cache"]
    B, P = ids.shape
    NH, NKV, eps = cfg["NH"], cfg["NKV"], cfg["EPS"]
    DH = cfg["D"] // NH
    cos, sin = w["cos"][:P], w["sin"][:P]

    def heads(y, n):  # [B, P, n*DH] -> [B, n, P, DH]
        return ops.transpose(y.reshape(B, P, n, DH), (0, 2, 1, 3))

    def rope(y):
        return y * cos + llama_rotate_half(ops, y) * sin

    x = ops.embed(w["wte"], ids)
    for l in range(cfg["L"]):
        h = ops.rmsnorm(x, w["attn_norm"][l], eps)
        q = rope(heads(ops.linear(h, w["wq"][l].T), NH))
        k = rope(heads(ops.linear(h, w["wk"][l].T), NKV))
        v = heads(ops.linear(h, w["wv"][l].T), NKV)
        kc, vc = ops.write_prefix(kc, l, k), ops.write_prefix(vc, l, v)
        ctx = ops.attention(q, ops.repeat_kv(k, NH // NKV), ops.repeat_kv(v, NH // NKV), w["mask"])
        x = x + ops.linear(ops.transpose(ctx, (0, 2, 1, 3)).reshape(B, P, NH * DH), w["wo"][l].T)
        x = _llama_ffn(ops, w, l, x, eps)
    logits, nxt = _llama_logits(ops, w, x[:, -1], eps)
    return {"logits": logits, "next": nxt, "k_cache": kc, "v_cache": vc}


def llama_decode_forward(ops, cfg, w, feeds):
    """A decode step: each sequence's token ids [B] at position pos [B]; the
    new key and value written at slot pos[b] of the caches, and attention
    over slots 0..pos[b] of them, the new one included."""
    ids, pos, kc, vc = feeds["ids"], feeds["pos"], feeds["k_cache"], feeds["v_cache"]
    B = ids.shape[0]
    NH, NKV, T, eps = cfg["NH"], cfg["NKV"], cfg["T"], cfg["EPS"]
    DH = cfg["D"] // NH
    cos, sin = ops.embed(w["cos"], pos)[:, None, :], ops.embed(w["sin"], pos)[:, None, :]  # [B, 1, DH]
    bias = ops.position_bias(pos, T)[:, None, None, :]  # [B, 1, 1, T]

    def rope(y):
        return y * cos + llama_rotate_half(ops, y) * sin

    x = ops.embed(w["wte"], ids)
    for l in range(cfg["L"]):
        h = ops.rmsnorm(x, w["attn_norm"][l], eps)
        q = rope(ops.linear(h, w["wq"][l].T).reshape(B, NH, DH))
        k = rope(ops.linear(h, w["wk"][l].T).reshape(B, NKV, DH))
        v = ops.linear(h, w["wv"][l].T).reshape(B, NKV, DH)
        kc, vc = ops.write_slots(kc, l, pos, k), ops.write_slots(vc, l, pos, v)
        ctx = ops.attention(q[:, :, None, :], ops.repeat_kv(kc[l], NH // NKV), ops.repeat_kv(vc[l], NH // NKV), bias)
        x = x + ops.linear(ctx.reshape(B, NH * DH), w["wo"][l].T)
        x = _llama_ffn(ops, w, l, x, eps)
    logits, nxt = _llama_logits(ops, w, x, eps)
    return {"logits": logits, "next": nxt, "k_cache": kc, "v_cache": vc}


def llama_generate(ops, cfg, w, prompt, steps):
    """Greedy generation as tec generate runs it: the prefill on prompt
    [B, P] (caches of zeros), then steps decode steps, step i feeding each
    sequence's last token at position P + i. Returns the tokens [B, steps+1]
    (NumPy int64): the prefill's next token, then each step's."""
    B, P = prompt.shape
    NKV, DH = cfg["NKV"], cfg["D"] // cfg["NH"]
    if P + steps > cfg["T"]:
        raise ValueError(f"{P} prompt tokens + {steps} steps > the cache's {cfg['T']} positions")
    zeros = np.zeros((cfg["L"], B, NKV, cfg["T"], DH), np.float32)
    out = llama_forward(ops, cfg, w, {"ids": ops.asarray(prompt), "k_cache": ops.asarray(zeros),
                                      "v_cache": ops.asarray(zeros)})
    tokens = [out["next"]]
    for i in range(steps):
        pos = ops.asarray(np.full(B, P + i, np.int32))
        out = llama_decode_forward(ops, cfg, w, {"ids": tokens[-1], "pos": pos,
                                                 "k_cache": out["k_cache"], "v_cache": out["v_cache"]})
        tokens.append(out["next"])
    return np.stack([ops.to_numpy(t).astype(np.int64) for t in tokens], 1)


class Spec:
    """One model: its inputs, outputs and params (names as in the .te file),
    and its prepare and forward functions."""

    def __init__(self, name, inputs, outputs, prepare, forward):
        self.name, self.inputs, self.outputs = name, inputs, outputs
        self.prepare, self.forward = prepare, forward


SPECS = {
    "bert": Spec("bert", BERT_INPUTS, ("hidden", "logits"), bert_prepare, bert_forward),
    "resnext": Spec("resnext", ("img",), ("logits",), resnext_prepare, resnext_forward),
    "lstm": Spec("lstm", ("xs",), ("y",), lstm_prepare, lstm_forward),
    "efficientnet": Spec("efficientnet", ("img",), ("logits",), efficientnet_prepare, efficientnet_forward),
    "swin": Spec("swin", ("img",), ("logits",), swin_prepare, swin_forward),
    "mmoe": Spec("mmoe", ("x",), ("y",), mmoe_prepare, mmoe_forward),
    # next (the argmax of the logits) is not compared: a near tie may flip it
    # at a half precision; test_peers checks it against tec's at f64.
    "llama": Spec("llama", ("ids", "k_cache", "v_cache"), ("logits", "k_cache", "v_cache"), llama_prepare, llama_forward),
    "llama-decode": Spec("llama-decode", ("ids", "pos", "k_cache", "v_cache"), ("logits", "k_cache", "v_cache"),
                         llama_prepare, llama_decode_forward),
}


def feed_shapes(model, cfg):
    """The shape of every input and param of the model at cfg, by name, as the
    .te file declares them (the packed vectors' lengths counted by prepare)."""
    c = cfg
    if model == "bert":
        S, D, L, FF, V, P = c["S"], c["D"], c["L"], c["FF"], c["V"], c["P"]
        return {"ids": (S,), "seg": (S,), "wte": (V, D), "wpe": (P, D), "wtt": (2, D), "ln_emb": (2, D), "wqkv": (L, D, 3 * D), "bqkv": (L, 3 * D),
                "wo": (L, D, D), "bo": (L, D), "ln1": (L, 2, D), "w1": (L, D, FF), "b1": (L, FF),
                "w2": (L, FF, D), "b2": (L, D), "ln2": (L, 2, D), "w_span": (D, 2), "b_span": (2,)}
    if model == "lstm":
        T, L, B, H = c["T"], c["L"], c["B"], c["H"]
        return {"xs": (T, B, H), "W": (L, 4, H, H), "U": (L, 4, H, H), "b": (L, 4, H)}
    if model == "mmoe":
        B, IN, U, E, TS, TW = c["B"], c["IN"], c["UNITS"], c["E"], c["TASKS"], c["TOWER"]
        return {"x": (B, IN), "we": (E, IN, U), "be": (E, U), "wg": (TS, IN, E), "bg": (TS, E),
                "wt": (TS, U, TW), "bt": (TS, TW), "wo": (TS, TW, 1), "bo": (TS, 1)}
    if model in ("llama", "llama-decode"):
        B, P, T, L, D, NH, NKV, FF, V = (c[k] for k in ("B", "P", "T", "L", "D", "NH", "NKV", "FF", "V"))
        DH = D // NH
        inputs = {"ids": (B, P)} if model == "llama" else {"ids": (B,), "pos": (B,)}
        cache = (L, B, NKV, T, DH)
        return {**inputs, "k_cache": cache, "v_cache": cache, "wte": (V, D), "attn_norm": (L, D), "wq": (L, NH * DH, D), "wk": (L, NKV * DH, D),
                "wv": (L, NKV * DH, D), "wo": (L, D, NH * DH), "ffn_norm": (L, D), "w_gate": (L, FF, D),
                "w_up": (L, FF, D), "w_down": (L, D, FF), "norm": (D,)}
    n = sum(math.prod(s) for s in packed_shapes(SPECS[model].prepare, cfg))
    return {"img": (c["N"], 3, c["IMG"], c["IMG"]), "wts": (n,)}


def _uniform(rng, shape, scale):
    a = rng.uniform(-1, 1, size=shape).astype(np.float32)
    if scale and len(shape) >= 2:
        a *= np.float32(scale / math.sqrt(math.prod(shape) / max(shape)))
    return a


def random_feeds(model, cfg, seed, pos=None, only_inputs=False):
    """Random feeds with the distribution of tec run --fill random (uniform in
    [-1, 1), params of rank 2 or more scaled by 1/√(size / largest
    dimension), an estimate of 1/√fan-in), except for a packed vector. tec's
    fill sees one as a single rank-1 param and leaves it unscaled, which grows
    the CNNs' activations by about √fan-in per convolution (ResNeXt-101's
    logits overflow f32 at full size). Here it is filled tensor by tensor as
    the model takes them out of it, each of rank 2 or more scaled by
    √3/√(size / largest dimension): uniform(-a, a) has variance a²/3, so
    that keeps a layer's output variance that of its input, where 1/√fan-in
    would shrink it threefold per layer and EfficientNet's first layers would
    hardly reach its logits (a wrong stem could not be seen). Inputs are
    uniform in [-1, 1).

    pos, for a decode step, puts every sequence at that position instead of
    random ones (the timed step of bench/gpu/run.sh attends over pos + 1
    positions). only_inputs leaves the params out; the inputs come first, so
    they are the same as with the params.
    """
    rng = np.random.default_rng(seed)
    spec, out = SPECS[model], {}
    for name, shape in feed_shapes(model, cfg).items():
        if only_inputs and name not in spec.inputs:
            continue
        if name == "pos" and pos is not None:
            if not 0 <= pos < cfg["T"]:
                raise ValueError(f"position {pos} is outside the cache's {cfg['T']} positions (-D T=...)")
            out[name] = np.full(shape, pos, np.int32)
        elif name == "wts":
            parts = [_uniform(rng, s, math.sqrt(3)).reshape(-1) for s in packed_shapes(spec.prepare, cfg)]
            out[name] = np.concatenate(parts)
        elif name in INDEX_FEEDS.get(model, {}):
            # Token ids: i32 in the table they index, as tec's --fill does.
            out[name] = rng.integers(0, INDEX_FEEDS[model][name](cfg), size=shape).astype(np.int32)
        else:
            out[name] = _uniform(rng, shape, 0 if name in spec.inputs else 1)
    return out


# The i32 inputs that index a table (gathers), by model: the table's length.
# A decode step's positions are in the cache's T positions.
INDEX_FEEDS = {"bert": {"ids": lambda c: c["V"], "seg": lambda c: 2}, "llama": {"ids": lambda c: c["V"]},
               "llama-decode": {"ids": lambda c: c["V"], "pos": lambda c: c["T"]}}


# ---------------------------------------------------------------------------
# Running: the peers as callables on prepared weights.


class Peer:
    """One way of running a model: a name, and a function from input arrays
    (in spec.inputs order, on the device) to output arrays (spec.outputs)."""

    def __init__(self, runner, ops, fn, inputs, sync):
        self.runner, self.ops, self.fn, self.inputs, self.sync = runner, ops, fn, inputs, sync

    def __call__(self):
        return self.fn(*self.inputs)


class Unavailable(Exception):
    """A runner that cannot run here (no torch.compile, no GPU, no JAX)."""


def make_peer(runner, spec, cfg, feeds, device, precision):
    """Prepares spec's model for runner on feeds; raises Unavailable if the
    runner cannot run here."""
    if runner == "jax":
        try:
            ops = JaxOps(device, precision)
        except ImportError as e:
            raise Unavailable(f"no JAX ({e.name})")
        except RuntimeError as e:
            raise Unavailable(f"JAX has no {device} device")
        w = spec.prepare(ops, cfg, feeds)
        fn = ops.jax.jit(lambda w, *xs: tuple(spec.forward(ops, cfg, w, dict(zip(spec.inputs, xs)))[o]
                                              for o in spec.outputs))
        xs = [ops.asarray(feeds[n]) for n in spec.inputs]
        return Peer(runner, ops, lambda *a: fn(w, *a), xs,
                    lambda out: [o.block_until_ready() for o in out])
    ops = TorchOps(device, precision)
    torch = ops.torch
    w = spec.prepare(ops, cfg, feeds)
    xs = [ops.asarray(feeds[n]) for n in spec.inputs]

    def eager(*a):
        with torch.no_grad():
            out = spec.forward(ops, cfg, w, dict(zip(spec.inputs, a)))
            return tuple(out[o] for o in spec.outputs)

    sync = (lambda out: torch.cuda.synchronize()) if ops.device.type == "cuda" else (lambda out: None)
    if runner == "eager":
        return Peer(runner, ops, eager, xs, sync)
    if runner in ("compile", "compile-max"):
        if not hasattr(torch, "compile"):
            raise Unavailable(f"no torch.compile in PyTorch {torch.__version__}")
        mode = "max-autotune" if runner == "compile-max" else None
        return Peer(runner, ops, torch.compile(eager, mode=mode), xs, sync)
    if runner == "cudagraph":
        if ops.device.type != "cuda":
            raise Unavailable("CUDA graphs need a GPU")
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):  # warm up off the default stream, as capture requires
                eager(*xs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = eager(*xs)

        def replay(*a):
            graph.replay()
            return static_out
        return Peer(runner, ops, replay, xs, sync)
    raise ValueError(f"unknown runner {runner!r} (want one of {', '.join(RUNNERS)})")


def time_peer(peer, iters, warmup):
    """Runs peer warmup times, then iters times each timed alone; returns the
    times in ms (CUDA events on a GPU, the wall clock on a CPU)."""
    out = None
    for _ in range(warmup):
        out = peer()
    peer.sync(out)
    times = []
    cuda = peer.ops.name == "torch" and peer.ops.device.type == "cuda"
    for _ in range(iters):
        if cuda:
            torch = peer.ops.torch
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            out = peer()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            out = peer()
            peer.sync(out)
            times.append((time.perf_counter() - t0) * 1e3)
    return times


# ---------------------------------------------------------------------------
# Checking against tec's reference evaluator.

# The tolerances of --check, by precision. tec's reference evaluator computes
# in float64 and writes its outputs as float32; a peer differs from it by its
# own rounding and its order of summation:
# - f64: the peer's own error (2^-53 per operation, a few thousand operations
#   deep at the tiny sizes) is far below the float32 rounding of the
#   reference's outputs, 2^-24 ≈ 6e-8 relative: 1e-9 + 1e-7·|want| is that
#   rounding and nothing more, so any real difference of formula fails (a
#   param scaled by 1 + 1e-3 does: bench/gpu/test_peers.py).
# - f32: eps 6e-8, the same depth: the observed errors are about 1e-6 of the
#   bound's scale; 1e-4 + 1e-3·|want| is the bound bench/gpu/run.sh holds
#   tec's own kernels to on hardware.
# - bf16 and f16: every weight, activation and product is rounded (bf16 eps
#   2^-8, f16 2^-11) and near-zero outputs make an element-wise bound
#   meaningless, so the bound is on the whole output relative to its norm,
#   against tec's reference at the same --precision (weights rounded alike):
#   ‖got - want‖ ≤ r·‖want‖, r the larger of 16 roundings (bf16 0.0625, f16
#   0.0078) and 4 times tec's own error at that precision (‖ref_half -
#   ref_f32‖ / ‖ref_f32‖), the model's sensitivity to rounding on these
#   feeds. Where tec's own half result is 50% off or not finite (the random
#   weights of the tiny CNNs, without batch norm, grow activations to 1e8:
#   past f16's range, and chaotic in bf16), the comparison says nothing and
#   the row is n/a with the reason; f64 and f32 check those models' formulas.
TOLERANCES = {
    "f64": ("elementwise", 1e-7, 1e-9),
    "f32": ("elementwise", 1e-3, 1e-4),
    "bf16": ("norm", 16 * 2.0 ** -8, 0.0),
    "f16": ("norm", 16 * 2.0 ** -11, 0.0),
}


class IllConditioned(Exception):
    """tec's own result at a half precision is too far from its f32 one for a
    comparison at that precision to mean anything."""


def _rel_norm(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def compare(got, want, precision, want_f32=None):
    """Returns (ok, max_abs, measure) of got against want: measure is the
    largest |got-want| / (atol + rtol·|want|) element-wise, or the relative
    norm of the difference over its bound, so that ok is measure <= 1. For a
    half precision, want_f32 (tec's f32 reference) sets the bound as
    TOLERANCES says; raises IllConditioned where it cannot."""
    kind, rtol, atol = TOLERANCES[precision]
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return False, math.inf, math.inf
    if not np.isfinite(got).all():
        return False, math.inf, math.inf
    diff = np.abs(got - want)
    if kind == "elementwise":
        return _measured(diff, float((diff / (atol + rtol * np.abs(want))).max(initial=0)))
    if want_f32 is not None:
        own = _rel_norm(want, np.asarray(want_f32, np.float64)) if np.isfinite(want).all() else math.inf
        if not own < 0.5:
            raise IllConditioned(f"tec's own {precision} result differs from its f32 one by {own:.3g} of its norm")
        rtol = max(rtol, 4 * own)
    return _measured(diff, _rel_norm(got, want) / rtol)


def _measured(diff, measure):
    return measure <= 1, float(diff.max(initial=0)), measure


def tec_feeds(model, size, seed, tmp, precisions=("f32",)):
    """Makes random feeds (random_feeds) and evaluates the model on them with
    tec's reference evaluator (tec run --device ref --inputs --params, which
    binds them by name and shape, as the peers do), at f32 and at each half
    precision asked for (tec's --precision, the weights rounded as the peer's
    are). Returns (feeds, {precision: outputs}), arrays by name. The tec
    command is the one python/tec.py, the notebook helper, finds or builds."""
    sys.path.insert(0, str(REPO / "python"))
    import tec
    spec, cfg = SPECS[model], config(model, size)
    feeds = random_feeds(model, cfg, seed)
    path = str(source(model))
    defines = [a for n, v in tiny_defines(model) for a in ("-D", f"{n}={v}")] if size == "tiny" else []
    os.makedirs(os.path.join(tmp, model), exist_ok=True)
    npz = {}
    for kind, names in (("inputs", [n for n in feeds if n in spec.inputs]),
                        ("params", [n for n in feeds if n not in spec.inputs])):
        npz[kind] = os.path.join(tmp, model, f"{kind}.npz")
        np.savez(npz[kind], **{n: feeds[n] for n in names})
    want = {}
    for p in ("f32", *precisions):
        ref = "f32" if p == "f64" else p
        if ref not in want:
            out = os.path.join(tmp, model, f"ref-{ref}.npz")
            cmd = [tec.binary(), "run", "--device", "ref", "--precision", ref, "--inputs", npz["inputs"],
                   "--params", npz["params"], "--outputs", out, *model_flags(model), *defines, path]
            r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            if r.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
            want[ref] = dict(np.load(out))
        want[p] = want[ref]
    return feeds, want


def load_dir(path):
    """Every NAME.npy of a directory, by NAME."""
    return {p.stem: np.load(p) for p in sorted(pathlib.Path(path).glob("*.npy"))}


def check_model(model, size, device, precisions, runners, feeds, want, perturb=None):
    """Runs every runner in every precision of model on feeds and compares
    each output with want[precision][output]; returns the table rows, dicts with a "status" of
    "ok", "MISMATCH", "ERROR" or "n/a" (a runner that cannot run here)."""
    spec, cfg = SPECS[model], config(model, size)
    shapes = feed_shapes(model, cfg)
    rows = []
    for name, shape in shapes.items():
        if name not in feeds or feeds[name].shape != tuple(shape):
            got = feeds[name].shape if name in feeds else "missing"
            rows.append({"model": model, "runner": "shapes", "precision": "-", "status": "MISMATCH",
                         "detail": f"{name}: tec has {got}, the peer expects {tuple(shape)}"})
            return rows
    if perturb is not None:
        feeds = perturb(dict(feeds))
    for precision in precisions:
        for runner in runners:
            row = {"model": model, "runner": runner, "precision": precision}
            rows.append(row)
            try:
                peer = make_peer(runner, spec, cfg, feeds, device, precision)
                outs = peer()
                peer.sync(outs)
            except Unavailable as e:
                row.update(status="n/a", detail=str(e))
                continue
            except Exception as e:  # a peer that fails to run fails the check
                row.update(status="ERROR", detail=f"{type(e).__name__}: {str(e).splitlines()[0][:100]}")
                continue
            try:
                results = [(compare(peer.ops.to_numpy(out), want[precision][o], precision, want["f32"][o]), o)
                           for o, out in zip(spec.outputs, outs)]
            except IllConditioned as e:
                row.update(status="n/a", detail=str(e))
                continue
            (ok, max_abs, measure), worst = max(results, key=lambda r: r[0][2])
            row.update(status="ok" if all(r[0][0] for r in results) else "MISMATCH",
                       max_abs=max_abs, measure=measure, detail=f"worst output {worst}")
    return rows


def generate_check(device, batches, steps, seed, tec_devices=(("ref", None), ("sim", 4)), size="tiny",
                   defines=(), precisions=("f64", "f32"), cuda_args=()):
    """Greedy generation of the Llama (tiny, or full size with defines) by
    the PyTorch peer (eager, at each of precisions) and by tec generate on
    each of tec_devices ((device, level); "cuda" runs tec generate --device
    cuda with cuda_args, e.g. --codegen cu --target sm_90), on the same
    random prompt and weights, at each B of batches. Returns the table
    rows: "ok" where the tokens are the first tec device's, "MISMATCH"
    where they are not or where a tiny sequence is one token repeated."""
    sys.path.insert(0, str(REPO / "python"))
    import tec
    rows = []
    for b in batches:
        cfg = {**config("llama", size, defines), "B": b}
        tiny = dict(tiny_defines("llama")) if size == "tiny" else {}
        defs = {**tiny, **dict(defines), "B": b}
        feeds = random_feeds("llama", cfg, seed)
        prompt = feeds["ids"]
        params = {n: feeds[n] for n in LLAMA_PARAMS}
        got = {}
        for dev, level in tec_devices:
            name = f"tec {dev}" + (f" -O{level}" if level is not None else "")
            if dev == "cuda":
                got[name] = tec_generate_cuda(tec.binary(), prompt, params, steps, level, defs, cuda_args)
            else:
                g = tec.generate(str(source("llama")), prompt=prompt, params=params, steps=steps,
                                 device=dev, level=level, defines=defs)
                got[name] = g.tokens
        for precision in precisions:
            ops = TorchOps(device, precision)
            with ops.torch.no_grad():
                got[f"torch eager {precision}"] = llama_generate(ops, cfg, llama_prepare(ops, cfg, params), prompt, steps)
        want = next(iter(got.values()))
        for name, tokens in got.items():
            row = {"model": f"llama-generate {size} B={b}", "runner": name, "precision": "-"}
            # A tiny model's varied tokens show that the check tells one step
            # from another; random full-size weights may well repeat a token.
            repeated = [i for i, seq in enumerate(tokens) if len(set(seq.tolist())) < 2] if size == "tiny" else []
            if tokens.shape != want.shape or not (tokens == want).all():
                row.update(status="MISMATCH", detail=f"tokens {tokens.tolist()}, {next(iter(got))}'s {want.tolist()}")
            elif repeated:
                row.update(status="MISMATCH", detail=f"sequences {repeated} are one token repeated: {tokens.tolist()}")
            else:
                row.update(status="ok", detail=f"{tokens.shape[1]} tokens x {b}: {tokens[0].tolist()}")
            rows.append(row)
    return rows


def tec_generate_cuda(binary, prompt, params, steps, level, defines, extra):
    """The tokens [B, steps+1] of tec generate --device cuda (tec-cuda next
    to binary or on PATH) on prompt and params, at -O level with defines
    and the extra flags (--codegen, --target, --precision)."""
    with tempfile.TemporaryDirectory(prefix="peers-generate-") as tmp:
        np.save(os.path.join(tmp, "prompt.npy"), np.ascontiguousarray(prompt, np.int32))
        np.savez(os.path.join(tmp, "params.npz"), **params)
        cmd = [binary, "generate", "--device", "cuda", "--steps", str(steps), "--json", "--max-time", "0",
               "--prompt", os.path.join(tmp, "prompt.npy"), "--params", os.path.join(tmp, "params.npz"),
               *([f"-O{level}"] if level is not None else []), *extra,
               *(a for n, v in defines.items() for a in ("-D", f"{n}={v}")), str(source("llama"))]
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr[-2000:]}")
        return np.array(json.loads(r.stdout)["tokens"], np.int64)


def print_table(rows, out=sys.stdout):
    kinds = {p: f"{k} rtol {r:.3g} atol {a:.3g}" for p, (k, r, a) in TOLERANCES.items()}
    print("| model | runner | precision | result | max abs diff | diff / bound | tolerance | note |", file=out)
    print("|---|---|---|---|---|---|---|---|", file=out)
    for r in rows:
        mx = f"{r['max_abs']:.3g}" if "max_abs" in r else ""
        ms = f"{r['measure']:.3g}" if "measure" in r else ""
        print(f"| {r['model']} | {r['runner']} | {r['precision']} | {r['status']} | {mx} | {ms} | "
              f"{kinds.get(r['precision'], '')} | {r.get('detail', '')} |", file=out)


def check_passed(rows):
    """True if every row passed or could not run here, and at least one ran."""
    return all(r["status"] in ("ok", "n/a") for r in rows) and any(r["status"] == "ok" for r in rows)


# ---------------------------------------------------------------------------
# The command line.


def _default_precisions(device):
    # PyTorch on a CPU has no f16 kernels for most operations; a GPU has no
    # use for f64 here.
    return ["f64", "f32", "bf16"] if device == "cpu" else ["f32", "f16", "bf16"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="compare every peer with tec's reference evaluator")
    mode.add_argument("--generate-check", action="store_true",
                      help="greedy generation of the tiny Llama: PyTorch's tokens against tec generate's")
    mode.add_argument("--bench", action="store_true", help="time every peer on --feeds")
    mode.add_argument("--make-feeds", metavar="DIR", help="write random feeds of --model to DIR/NAME.npy")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    ap.add_argument("--size", default="tiny", choices=("tiny", "full"))
    ap.add_argument("--model", action="append", choices=MODELS, help="a model (repeatable; default all)")
    ap.add_argument("--precision", help="comma-separated precisions (default: f64,f32,bf16 on cpu, f32,f16,bf16 on cuda)")
    ap.add_argument("--runner", help=f"comma-separated runners (default all: {','.join(RUNNERS)})")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random feeds (default 1)")
    ap.add_argument("--prepared", metavar="DIR",
                    help="--check: take feeds and reference outputs from bench/gpu/prepare.sh's DIR/MODEL/tiny instead of running tec")
    ap.add_argument("--feeds", metavar="DIR", help="--bench: the feeds, DIR/MODEL/NAME.npy (default: random, as --make-feeds)")
    ap.add_argument("--iters", type=int, default=20, help="--bench: timed runs (default 20)")
    ap.add_argument("--warmup", type=int, default=5, help="--bench: untimed runs first (default 5)")
    ap.add_argument("--json", metavar="FILE", help="write the rows as JSON to FILE")
    ap.add_argument("--outputs", metavar="DIR", help="--bench: write each model's f32 eager outputs to DIR/MODEL.npz")
    ap.add_argument("--steps", type=int, default=16, help="--generate-check: decode steps (default 16)")
    ap.add_argument("--batch", help="--generate-check: comma-separated numbers of sequences (default 1,4)")
    ap.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                    help="--bench, --make-feeds, --generate-check: override a constant of the model, as tec's -D (repeatable)")
    ap.add_argument("--pos", type=int, help="--bench, --make-feeds of llama-decode: every sequence at this position")
    ap.add_argument("--params-from", metavar="DIR",
                    help="--make-feeds: link the params of DIR (made with the same seed) instead of making them")
    ap.add_argument("--tec-devices", default="ref,sim",
                    help="--generate-check: tec generate's devices, comma-separated (ref, sim at -O4, cuda at -O4; default ref,sim)")
    ap.add_argument("--tec-flags", default="",
                    help="--generate-check: more flags for tec generate --device cuda (e.g. '--codegen cu --target sm_90')")
    args = ap.parse_args(argv)

    models = args.model or list(MODELS)
    defines = []
    for d in args.defines:
        name, eq, value = d.partition("=")
        if not eq or not name:
            ap.error(f"-D {d}: want NAME=VALUE")
        defines.append((name, value))
    precisions = args.precision.split(",") if args.precision else _default_precisions(args.device)
    runners = args.runner.split(",") if args.runner else list(RUNNERS)
    for p in precisions:
        if p not in PRECISIONS:
            ap.error(f"unknown precision {p} (want {', '.join(PRECISIONS)})")
    for r in runners:
        if r not in RUNNERS:
            ap.error(f"unknown runner {r} (want {', '.join(RUNNERS)})")

    if args.make_feeds:
        if len(models) != 1:
            ap.error("--make-feeds needs one --model")
        os.makedirs(args.make_feeds, exist_ok=True)
        feeds = random_feeds(models[0], config(models[0], args.size, defines), args.seed, args.pos,
                             only_inputs=bool(args.params_from))
        for name, a in feeds.items():
            np.save(os.path.join(args.make_feeds, f"{name}.npy"), a)
        if args.params_from:
            for name in feed_shapes(models[0], config(models[0], args.size, defines)):
                if name not in feeds:
                    link = os.path.join(args.make_feeds, f"{name}.npy")
                    if os.path.lexists(link):
                        os.remove(link)
                    os.symlink(os.path.abspath(os.path.join(args.params_from, f"{name}.npy")), link)
        return 0

    rows = []
    if args.generate_check:
        batches = [int(b) for b in (args.batch or "1,4").split(",")]
        devices = [(d, None if d == "ref" else 4) for d in args.tec_devices.split(",")]
        gen_precisions = args.precision.split(",") if args.precision else ["f64", "f32"]
        rows = generate_check(args.device, batches, args.steps, args.seed, devices, args.size, defines,
                              gen_precisions, args.tec_flags.split())
        print_table(rows)
        ok = check_passed(rows)
        print("PyTorch's tokens are tec generate's" if ok else "peers.py --generate-check: FAILED", file=sys.stderr)
    elif args.check:
        with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
            for m in models:
                checked = precisions
                if args.prepared:
                    # The precisions prepare.sh built this model at: a half
                    # precision it did not build has no reference to check.
                    base = pathlib.Path(args.prepared, m, args.size)
                    checked = [p for p in precisions if p in ("f32", "f64") or (base / f"ref-{p}.npz").exists()]
                    feeds = load_dir(base / "feeds")
                    want = {p: dict(np.load(base / ("ref.npz" if p in ("f32", "f64") else f"ref-{p}.npz")))
                            for p in ("f32", *checked)}
                else:
                    feeds, want = tec_feeds(m, args.size, args.seed, tmp, precisions)
                rows += check_model(m, args.size, args.device, checked, runners, feeds, want)
        print_table(rows)
        ok = check_passed(rows)
        print("peers match tec's reference" if ok else "peers.py --check: FAILED", file=sys.stderr)
    else:
        ok = True
        for m in models:
            cfg = config(m, args.size, defines)
            feeds = load_dir(pathlib.Path(args.feeds, m)) if args.feeds else random_feeds(m, cfg, args.seed, args.pos)
            for precision in precisions:
                for runner in runners:
                    row = {"model": m, "size": args.size, "runner": runner, "precision": precision}
                    if defines:
                        row["defines"] = dict(defines)
                    if m.startswith("llama"):
                        row["batch"] = cfg["B"]
                    if "pos" in feeds:
                        row["pos"] = sorted({int(p) for p in np.ravel(feeds["pos"])})
                    rows.append(row)
                    try:
                        peer = make_peer(runner, SPECS[m], cfg, feeds, args.device, precision)
                        t = time_peer(peer, args.iters, args.warmup)
                        row.update(status="ok", median_ms=float(np.median(t)), min_ms=min(t), max_ms=max(t), runs=len(t))
                        if args.outputs and runner == "eager" and precision == "f32":
                            os.makedirs(args.outputs, exist_ok=True)
                            out = peer()
                            np.savez(os.path.join(args.outputs, f"{m}.npz"),
                                     **{o: peer.ops.to_numpy(x).astype(np.float32) for o, x in zip(SPECS[m].outputs, out)})
                    except Unavailable as e:
                        row.update(status="n/a", detail=str(e))
                    except Exception as e:
                        row.update(status="ERROR", detail=f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
                        ok = False
                    print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
