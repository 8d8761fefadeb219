"""Export the PyTorch models that tec import is tested against.

Usage: python3 python/onnx_models.py OUTDIR [NAME...]

For each model NAME (all of them when none is named) it writes, into OUTDIR:

  NAME.onnx           the model, exported by torch.onnx.export in eval mode
  NAME.inputs.npz     the inputs it was run on, by ONNX input name
  NAME.expected.npz   PyTorch's outputs on them, by ONNX output name

Weights are random (seeded), as are batch-norm running statistics, so that
every layer computes something. Sizes are small, so that tec's simulator
runs each model in seconds. The Go test TestImportPyTorch (cmd/tec) runs this
script and checks tec run --device ref and --device sim against the outputs.
Needs Debian's python3-torch, python3-torchvision and python3-onnx.
"""

import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision


def randomize(model, gen):
    """Random weights everywhere (PyTorch initialises some biases and norms
    to constants), and random running statistics in every batch norm."""
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() < 2:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1 + (p.data == 1).float() * 0.9)
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(c, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.1)


class GPT2Block(nn.Module):
    """A GPT-2-style model: token and position embeddings, one pre-norm block
    of causal self-attention and a GELU MLP, and the tied output head."""

    def __init__(self, vocab=50, seq=8, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.lnf = nn.LayerNorm(d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).bool())

    def forward(self, ids):
        b, s = ids.shape
        pos = torch.arange(s)
        x = self.wte(ids) + self.wpe(pos)
        h = self.ln1(x)
        q, k, v = self.qkv(h).split(x.shape[-1], dim=-1)
        dh = x.shape[-1] // self.heads
        q = q.view(b, s, self.heads, dh).transpose(1, 2)
        k = k.view(b, s, self.heads, dh).transpose(1, 2)
        v = v.view(b, s, self.heads, dh).transpose(1, 2)
        att = q @ k.transpose(-2, -1) / math.sqrt(dh)
        att = att.masked_fill(~self.mask[:s, :s], float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, -1)
        x = x + self.proj(y)
        x = x + self.out(nn.functional.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return self.lnf(x) @ self.wte.weight.t()


class LSTMModel(nn.Module):
    """A 2-layer LSTM over a sequence, returning every step's output."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=8, hidden_size=16, num_layers=2)

    def forward(self, x):
        y, _ = self.lstm(x)
        return y


class ConvOps(nn.Module):
    """The convolution and pooling variants the torchvision models do not
    reach: strides and dilations per axis, groups, asymmetric padding, ceil
    mode, average pooling with and without the padding, batch norm not
    folded into a convolution, HardSwish, HardSigmoid, ReLU6, LeakyReLU,
    PReLU, channel split and concat."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, (3, 5), stride=(2, 1), padding=(1, 2), dilation=(1, 2))
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=4, bias=False)
        self.conv1d = nn.Conv1d(8, 4, 3, stride=2)
        self.bn2 = nn.BatchNorm2d(8)
        self.prelu = nn.PReLU(8)
        self.avg2 = nn.AvgPool2d(2)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
        self.avg = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)

    def forward(self, x):
        x = nn.functional.pad(x, (1, 0, 2, 1))
        y = self.bn2(nn.functional.hardswish(self.bn(self.conv1(x))))
        y = nn.functional.hardsigmoid(self.conv2(y)) + nn.functional.relu6(self.prelu(y))
        a, b = y.split([3, 5], dim=1)
        y = torch.cat([nn.functional.leaky_relu(b, 0.1), a], dim=1)
        p = self.pool(y) + self.avg(y) + self.avg2(y).mean()
        q = self.conv1d(p.flatten(2))
        return torch.cat([p.flatten(1), q.flatten(1)], dim=1)


class MiscOps(nn.Module):
    """Element-wise, reduction and layout operators: exact GELU (Erf),
    softmax and log-softmax over inner and last axes, layer norm on 2-D and
    3-D tensors, reductions, a strided and a
    reversed slice, a gather of fixed indices, where, cast, expand, tile,
    pow, sqrt, exp, ELU, softplus, a product, and a bidirectional GRU."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(12)
        self.ln2 = nn.LayerNorm(12)
        self.gru = nn.GRU(12, 6, bidirectional=True)
        self.fc = nn.Linear(12, 12)

    def forward(self, x):  # x: [4, 3, 12]
        h = nn.functional.gelu(self.fc(x))
        s = torch.softmax(h, dim=1) + torch.log_softmax(h, dim=0)
        m = h.max(dim=-1, keepdim=True).values + h.sum(dim=(0, 2), keepdim=True) / 10
        r = self.ln(s * m).reshape(12, 12)
        r = self.ln2(torch.softmax(r, dim=1) * 12)
        r = r[::2, 1::3] + r.flip(0)[1:7:1, 2:6]
        g = r[:, [3, 0, 2]].transpose(0, 1)  # [3, 6]
        w = torch.where(g > 0, g, torch.exp(g) - 1) + g.abs().sqrt() * g.pow(2)
        c = (w * 3).int().float() + w.mean()
        c = nn.functional.elu(c) + nn.functional.softplus(c) + c.prod(dim=0, keepdim=True) / 100
        e = c.repeat(2, 2).reshape(2, 6, 6)[:, 1:4, :].repeat(2, 1, 1)  # [4, 3, 6]
        y, hn = self.gru(x)
        return torch.cat([y[:, :, :6] + e, hn.transpose(0, 1).reshape(1, 3, 12).expand(4, 3, 12)], dim=2)


class ResizeOps(nn.Module):
    """Upsampling and the padding modes of image models: nearest by 2,
    bilinear with and without align_corners (by a factor, and to sizes
    whose neighbours are read through index tables), bicubic by 2 and with
    align_corners to sizes, reflection and replication padding, and the newer
    language forms: sin, cos, an integer power, -inf in a masked maximum,
    and an argmax (as a float, so that the outputs stay one tensor)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.pad = nn.ReflectionPad2d((2, 1, 1, 2))
        self.edge = nn.ReplicationPad2d(1)

    def forward(self, x):  # x: [1, 3, 6, 5]
        h = self.conv(self.pad(x))  # [1, 4, 7, 6]
        a = nn.functional.interpolate(h, scale_factor=2, mode="nearest")
        b = nn.functional.interpolate(h, scale_factor=2, mode="bilinear", align_corners=False)
        c = nn.functional.interpolate(h, size=(14, 12), mode="bilinear", align_corners=True)
        d = nn.functional.interpolate(self.edge(h), size=(13, 14), mode="bilinear", align_corners=False)
        e = nn.functional.interpolate(h, scale_factor=2, mode="bicubic", align_corners=False)
        f = nn.functional.interpolate(h, size=(14, 12), mode="bicubic", align_corners=True)
        u = a + b * c - d[:, :, 3:4, 1:13] * d[:, :, 12:13, :12] + e * f  # [1, 4, 14, 12]
        t = torch.sin(u) * torch.cos(2 * u) + u ** 3 / 10
        m = torch.where(u > 0, t, torch.full_like(t, float("-inf"))).amax(dim=-1, keepdim=True)
        m = torch.where(torch.isinf(m), torch.zeros_like(m), m)
        i = t.argmax(dim=1, keepdim=True).float()
        return torch.cat([t.flatten(), m.flatten(), i.flatten()])


class HalfOps(nn.Module):
    """A model in float16: f16 input, weights and output, linear layers
    computed in f32 from their f16 weights (Cast), a round trip through f16
    in the middle, and element-wise arithmetic on f16 tensors."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)
        self.scale = nn.Parameter(torch.ones(8))

    def forward(self, x):  # x: f16[4, 16]
        h = nn.functional.linear(x.float(), self.fc1.weight.float(), self.fc1.bias.float())
        h = torch.tanh(h).half()
        h = h * h + h
        y = nn.functional.linear(h.float(), self.fc2.weight.float(), self.fc2.bias.float())
        return (y * self.scale.float()).half()


class ImageOps(nn.Module):
    """The normalisations and pixel shuffles of image-to-image models:
    InstanceNorm2d with affine parameters, GroupNorm (which PyTorch
    exports as an InstanceNormalization over the groups), PixelShuffle
    (DepthToSpace, mode CRD) and PixelUnshuffle."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.gnorm = nn.GroupNorm(4, 8)
        self.shuffle = nn.PixelShuffle(2)
        self.unshuffle = nn.PixelUnshuffle(2)

    def forward(self, x):  # x: [2, 3, 6, 4]
        h = self.conv(x)
        a = self.inorm(h)
        g = self.gnorm(torch.tanh(h) + a)  # [2, 8, 6, 4]
        s = self.shuffle(g)  # [2, 2, 12, 8]
        u = self.unshuffle(s * s)  # [2, 8, 6, 4]
        return torch.cat([s.flatten(), (u + g).flatten()])


class EinsumOps(nn.Module):
    """Attention written with torch.einsum (exported as Einsum): the
    scores, the weighted sum of the values, a permutation, a diagonal and
    an outer product; running sums (torch.cumsum, exported as CumSum) and
    the largest and smallest elements (torch.topk, TopK)."""

    def __init__(self, d=8, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x):  # x: [2, 5, 8]
        b, t, d = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).unbind(2)
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // self.heads)
        o = torch.einsum("bhqk,bkhd->bqhd", s.softmax(-1), v)
        p = torch.einsum("bqhd->bhdq", o)
        g = torch.einsum("bii->bi", s[:, 0])  # the scores' diagonals
        w = torch.einsum("bi,bj->bij", g, g)
        c = torch.cumsum(w, dim=1) + torch.cumsum(o, dim=-1).sum()  # CumSum
        tv, ti = torch.topk(c.flatten(1), 4, dim=1)  # TopK
        lv, li = torch.topk(p.flatten(2), 2, dim=-1, largest=False)
        return torch.cat([p.flatten(), c.flatten(), tv.flatten(), ti.float().flatten(), lv.flatten(), li.float().flatten()])


class DecoderOps(nn.Module):
    """The upsampling of U-Nets and decoders: transposed convolutions by 2
    (kernel 4, padding 1), with an output padding, grouped and dilated,
    and one-dimensional."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose2d(4, 6, 4, stride=2, padding=1)
        self.odd = nn.ConvTranspose2d(6, 4, 3, stride=2, padding=1, output_padding=1)
        self.group = nn.ConvTranspose2d(4, 4, 3, stride=1, padding=2, dilation=2, groups=2, bias=False)
        self.line = nn.ConvTranspose1d(4, 2, 5, stride=3, padding=(2,))

    def forward(self, x):  # x: [1, 4, 3, 5]
        a = torch.tanh(self.up(x))  # [1, 6, 6, 10]
        b = self.group(self.odd(a))  # [1, 4, 12, 20]
        c = self.line(b.mean(dim=2))  # [1, 2, 58]
        return torch.cat([b.flatten(), c.flatten()])


class ScatterOps(nn.Module):
    """Scatters whose indices the model computes (ScatterND with indices
    read at run time): each row's largest element replaced by the row's
    mean, and the column of each row's smallest marked in a mask (an
    index_put_ of rows and computed columns). PyTorch 1.13 exports
    index_put_'s accumulate as a plain ScatterND and an Add, which is not
    its meaning where indices repeat, so the reductions are checked in
    frontend/onnx's tests instead."""

    def forward(self, x):  # x: [5, 7]
        rows = torch.arange(x.shape[0])
        y = x.clone()
        y[rows, x.argmax(dim=1)] = x.mean(dim=1)
        mask = torch.zeros(x.shape)
        mask[rows, x.argmin(dim=1)] = 1.0
        return torch.cat([y.flatten(), mask.flatten()])


def models():
    """name -> (module, example inputs, opset)"""
    gen = torch.Generator().manual_seed(0)
    out = {}

    resnet = torchvision.models.resnet18(weights=None, num_classes=10)
    randomize(resnet, gen)
    out["resnet18"] = (resnet, {"x": torch.randn(1, 3, 32, 32, generator=gen)}, 13)

    eff = torchvision.models.efficientnet_b0(weights=None, num_classes=10)
    randomize(eff, gen)
    out["efficientnet_b0"] = (eff, {"x": torch.randn(1, 3, 32, 32, generator=gen)}, 17)

    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0)
    enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    randomize(enc, gen)
    out["transformer"] = (enc, {"x": torch.randn(8, 1, 32, generator=gen)}, 15)

    lstm = LSTMModel()
    randomize(lstm, gen)
    out["lstm"] = (lstm, {"x": torch.randn(6, 1, 8, generator=gen)}, 14)

    gpt2 = GPT2Block()
    randomize(gpt2, gen)
    out["gpt2"] = (gpt2, {"ids": torch.randint(0, 50, (1, 8), generator=gen)}, 13)
    conv = ConvOps()
    randomize(conv, gen)
    out["conv_ops"] = (conv, {"x": torch.randn(1, 3, 13, 11, generator=gen)}, 15)

    misc = MiscOps()
    randomize(misc, gen)
    out["misc_ops"] = (misc, {"x": torch.randn(4, 3, 12, generator=gen)}, 17)

    mobile = torchvision.models.mobilenet_v2(weights=None, num_classes=10)
    randomize(mobile, gen)
    out["mobilenet_v2"] = (mobile, {"x": torch.randn(1, 3, 32, 32, generator=gen)}, 13)

    resize = ResizeOps()
    randomize(resize, gen)
    out["resize_ops"] = (resize, {"x": torch.randn(1, 3, 6, 5, generator=gen)}, 17)

    image = ImageOps()
    randomize(image, gen)
    out["image_ops"] = (image, {"x": torch.randn(2, 3, 6, 4, generator=gen)}, 17)

    ein = EinsumOps()
    randomize(ein, gen)
    out["einsum_ops"] = (ein, {"x": torch.randn(2, 5, 8, generator=gen)}, 17)

    dec = DecoderOps()
    randomize(dec, gen)
    out["decoder_ops"] = (dec, {"x": torch.randn(1, 4, 3, 5, generator=gen)}, 17)
    out["scatter_ops"] = (ScatterOps(), {"x": torch.randn(5, 7, generator=gen)}, 17)

    # torchvision's Swin Transformer (swin_t's code: shifted windows, the
    # attention mask built by ScatterND, Mod and Dropout with a ratio of 0)
    # at a size the simulator runs in seconds
    swin = torchvision.models.swin_transformer.SwinTransformer(
        patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4], window_size=[4, 4], num_classes=10)
    randomize(swin, gen)
    out["swin_small"] = (swin, {"x": torch.randn(1, 3, 32, 32, generator=gen)}, 17)

    # exported with a dynamic batch axis, run at batch sizes 1 and 5
    # (tec import --dim batch=B)
    dyn = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 5 * 5, 6), nn.Tanh())
    randomize(dyn, gen)
    out["dynamic_batch"] = (dyn, {"x": torch.randn(2, 3, 5, 5, generator=gen)}, 17, (("batch",), [(1,), (5,)]))
    # GPT-2's block with a dynamic batch and sequence: the reshapes'
    # targets come from Shape, Gather and Concat, the mask's slice and the
    # positions' Range from the sequence's size (tec build -D batch=B -D
    # seq=S)
    gpt_dyn = GPT2Block()
    randomize(gpt_dyn, gen)
    out["dynamic_gpt2"] = (gpt_dyn, {"ids": torch.randint(0, 50, (2, 8), generator=gen)}, 17,
                           (("batch", "seq"), [(1, 8), (3, 8), (3, 5)]))

    half = HalfOps()
    randomize(half, gen)
    half.half()
    out["half_ops"] = (half, {"x": torch.randn(4, 16, generator=gen).half()}, 17)
    return out


def export(outdir, name, module, inputs, opset, dynamic_axes=None):
    """Exports module and writes its inputs and outputs. With dynamic_axes,
    a tuple of names and a list of sizes, the inputs' first axes are
    exported as dynamic axes of those names ("batch", "seq"), and each
    tuple of sizes gets inputs and outputs of its own, drawn afresh:
    NAME.batch1_seq8.inputs.npz and NAME.batch1_seq8.expected.npz."""
    module.eval()
    names = list(inputs)
    args = tuple(inputs[n] for n in names)
    path = os.path.join(outdir, name + ".onnx")
    axes, sizes = dynamic_axes or ((), [])
    dynamic = {n: dict(enumerate(axes)) for n in names} if axes else None
    with torch.no_grad():
        # the float16 model keeps its weights' Casts, which PyTorch's
        # folding would turn into float32 weights
        torch.onnx.export(module, args, path, input_names=names, output_names=["y"],
                          opset_version=opset, do_constant_folding=not name.startswith("half"),
                          dynamic_axes=dynamic)
        y = module(*args)
        for at in sizes:
            gen = torch.Generator().manual_seed(sum(at))
            feeds = {}
            for n, t in inputs.items():
                shape = tuple(at) + tuple(t.shape[len(at):])
                if t.dtype.is_floating_point:
                    feeds[n] = torch.randn(shape, generator=gen)
                else:
                    feeds[n] = torch.randint(0, int(t.max()) + 1, shape, generator=gen)
            tag = "_".join("%s%d" % (a, s) for a, s in zip(axes, at))
            np.savez(os.path.join(outdir, "%s.%s.inputs.npz" % (name, tag)), **{n: t.numpy() for n, t in feeds.items()})
            yb = module(*(feeds[n] for n in names))
            np.savez(os.path.join(outdir, "%s.%s.expected.npz" % (name, tag)), y=yb.numpy())
    np.savez(os.path.join(outdir, name + ".inputs.npz"),
             **{n: t.numpy() for n, t in inputs.items()})
    np.savez(os.path.join(outdir, name + ".expected.npz"), y=y.numpy())


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    outdir, wanted = argv[1], argv[2:]
    torch.manual_seed(0)
    all_models = models()
    for name in wanted or all_models:
        if name not in all_models:
            sys.exit("unknown model %r; the models are %s" % (name, ", ".join(all_models)))
        export(outdir, name, *all_models[name])


if __name__ == "__main__":
    main(sys.argv)
