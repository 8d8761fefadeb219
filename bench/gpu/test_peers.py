"""Tests of peers.py; run from bench/gpu with ``python3 -m unittest``.

They run the real tec command (python/tec.py's tec.binary(): set TEC to a
built tec to skip the build) and PyTorch on the CPU. Besides the check
itself passing, they show that it can fail: a peer with a planted mistake
(a weight off by 1e-3 of its size, a gate order swapped, the exact GELU for
the tanh one, no shifted-window mask, Llama's RoPE on interleaved pairs or
its query heads reading the wrong key/value heads, a decode step that
attends past its position or writes the wrong slot, generation that forgets
the cache) must not pass.
"""

import json
import re
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import numpy as np

import peers

sys.path.insert(0, str(peers.REPO / "python"))
import tec  # noqa: E402  (the notebook helper, for tec.binary())

_FEEDS = {}


def tiny_feeds(model):
    """The model's tiny feeds and tec's references, bound once per process."""
    if model not in _FEEDS:
        tmp = tempfile.mkdtemp(prefix="test-peers-")
        _FEEDS[model] = peers.tec_feeds(model, "tiny", 1, tmp, ("f64", "f32", "bf16"))
    return _FEEDS[model]


def check(model, precisions=("f64",), perturb=None):
    feeds, want = tiny_feeds(model)
    return peers.check_model(model, "tiny", "cpu", precisions, ["eager"], feeds, want, perturb)


class CheckTest(unittest.TestCase):
    def test_every_model_matches(self):
        for model in peers.MODELS:
            with self.subTest(model=model):
                rows = check(model, ("f64", "f32", "bf16"))
                self.assertTrue(peers.check_passed(rows), rows)

    def test_every_weight_matters(self):
        # Each param scaled by 1 + 1e-3 must fail the f64 check (its bound is
        # 1e-7 relative): no param goes unused. The first and last element
        # of a packed vector (the stem's first weight, the classifier's last
        # bias) moved by the largest output must fail it too: the peer
        # unpacks the vector from the start to the end (Unpacker.done checks
        # that it takes all of it).
        for model in peers.MODELS:
            feeds, want = tiny_feeds(model)
            spec = peers.SPECS[model]
            largest = max(np.abs(w).max() for w in want["f32"].values())
            for name in feeds:
                if name in spec.inputs:
                    continue
                for where in ([0, -1] if name == "wts" else [None]):
                    def perturb(f, name=name, where=where):
                        a = f[name].astype(np.float64)
                        if where is None:
                            a = a * (1 + 1e-3)
                        else:
                            a.flat[where] += largest
                        f[name] = a
                        return f
                    with self.subTest(model=model, param=name, element=where):
                        rows = check(model, perturb=perturb)
                        self.assertFalse(peers.check_passed(rows), rows)

    def test_planted_mistakes_fail(self):
        # The exact GELU differs from the tanh one by at most 5e-4: f32's
        # bound passes it, f64's does not; that is why --check runs f64.
        erf_gelu = lambda self, x: self.F.gelu(x)  # noqa: E731
        cases = [
            ("bert", mock.patch.object(peers.TorchOps, "gelu", erf_gelu)),
            ("swin", mock.patch.object(peers.TorchOps, "gelu", erf_gelu)),
            ("lstm", mock.patch.object(peers, "TORCH_GATE_ORDER", (0, 1, 2, 3))),
            ("swin", mock.patch.object(peers, "_swin_mask", lambda res, ws, shift: np.zeros(
                ((res // ws) ** 2, ws * ws, ws * ws)))),
            ("mmoe", mock.patch.object(peers.TorchOps, "softmax", lambda self, x, axis=-1: x.softmax(0))),
            ("efficientnet", mock.patch.object(peers.TorchOps, "swish", lambda self, x: self.torch.relu(x))),
            ("resnext", mock.patch.object(peers.TorchOps, "max_pool2d",
                                          lambda self, x, k, s, p: self.F.avg_pool2d(x, k, s, p))),
            # RoPE rotating the pairs (2i, 2i+1), GPT-J's layout, instead of
            # the halves (i, i + DH/2) that Llama's rotate_half pairs.
            ("llama", mock.patch.object(peers, "llama_rotate_half", lambda ops, x: ops.stack(
                [-x[..., 1::2], x[..., 0::2]], -1).reshape(x.shape))),
            # Query head n reading key/value head n % NKV (x.repeat) instead of
            # n // G (repeat_interleave).
            ("llama", mock.patch.object(peers.TorchOps, "repeat_kv", lambda self, x, g: x.repeat(1, g, 1, 1))),
            # Plain RoPE, without Llama 3's frequency scaling (the tiny head
            # dimension has a frequency in each of its three bands).
            ("llama", mock.patch.object(peers, "llama_rope_tables",
                                        lambda cfg, f=peers.llama_rope_tables: f({**cfg, "ROPE_FACTOR": 1.0}))),
            # A decode step whose attention leaves out the new token (t <
            # pos[b]), or reads every slot of the cache (no mask).
            ("llama-decode", mock.patch.object(peers.TorchOps, "position_bias", lambda self, pos, T, f=peers.TorchOps.position_bias:
                                               f(self, pos - 1, T))),
            ("llama-decode", mock.patch.object(peers.TorchOps, "position_bias", lambda self, pos, T, f=peers.TorchOps.position_bias:
                                               f(self, pos * 0 + T, T))),
            # The new key and value written one slot late.
            ("llama-decode", mock.patch.object(peers.TorchOps, "write_slots", lambda self, c, l, pos, new, f=peers.TorchOps.write_slots:
                                               f(self, c, l, (pos + 1) % c.shape[3], new))),
        ]
        for model, patch in cases:
            with self.subTest(model=model, patch=patch.attribute), patch:
                rows = check(model, ("f64", "f32"))
                self.assertFalse(peers.check_passed(rows), rows)

    def test_llama_next_token(self):
        # The greedy next token is not among the compared outputs (a near
        # tie may flip it at a half precision); at f64 it must be tec's, and
        # tec's must be the argmax of its own logits, for the prefill and the
        # decode step.
        for model in ("llama", "llama-decode"):
            with self.subTest(model=model):
                feeds, want = tiny_feeds(model)
                spec, cfg = peers.SPECS[model], peers.config(model, "tiny")
                ops = peers.TorchOps("cpu", "f64")
                out = spec.forward(ops, cfg, spec.prepare(ops, cfg, feeds),
                                   {n: ops.asarray(feeds[n]) for n in spec.inputs})
                ref = want["f32"]
                np.testing.assert_array_equal(ref["next"], ref["logits"].argmax(-1))
                np.testing.assert_array_equal(ops.to_numpy(out["next"]), ref["next"])
                self.assertEqual(ref["next"].shape, (cfg["B"],))

    def test_llama_caches_updated_in_place(self):
        # The prefill writes positions 0..P-1 of the caches and leaves the
        # rest as given; a decode step writes slot pos[b] of each sequence
        # only. tec's reference agrees (the check compares the caches), and
        # so the feeds' other slots come back unchanged.
        cfg = peers.config("llama", "tiny")
        feeds, want = tiny_feeds("llama")
        for name in ("k_cache", "v_cache"):
            got, old = want["f32"][name], feeds[name]
            np.testing.assert_array_equal(got[:, :, :, cfg["P"]:], old[:, :, :, cfg["P"]:])
            self.assertFalse(np.array_equal(got[:, :, :, :cfg["P"]], old[:, :, :, :cfg["P"]]))
        feeds, want = tiny_feeds("llama-decode")
        for name in ("k_cache", "v_cache"):
            got, old = want["f32"][name].copy(), feeds[name]
            for b, p in enumerate(feeds["pos"]):
                self.assertFalse(np.array_equal(got[:, b, :, p], old[:, b, :, p]))
                got[:, b, :, p] = old[:, b, :, p]
            np.testing.assert_array_equal(got, old)

    def test_generate_check(self):
        # PyTorch's greedy tokens are tec generate's on the reference; a
        # decode step that forgets the cache (attends to its own token only)
        # or generation that feeds each token one position late must not
        # pass.
        rows = peers.generate_check("cpu", [2], 6, 1, tec_devices=(("ref", None),))
        self.assertTrue(peers.check_passed(rows), rows)
        forget = mock.patch.object(peers, "llama_decode_forward", lambda ops, cfg, w, f, g=peers.llama_decode_forward: g(
            ops, cfg, w, {**f, "k_cache": f["k_cache"] * 0, "v_cache": f["v_cache"] * 0}))
        late = mock.patch.object(peers, "llama_decode_forward", lambda ops, cfg, w, f, g=peers.llama_decode_forward: g(
            ops, cfg, w, {**f, "pos": f["pos"] + 1}))
        for patch in (forget, late):
            with self.subTest(patch=patch), patch:
                rows = peers.generate_check("cpu", [2], 6, 1, tec_devices=(("ref", None),))
                self.assertFalse(peers.check_passed(rows), rows)

    def test_nothing_ran_is_no_pass(self):
        rows = [{"model": "m", "runner": "jax", "precision": "f32", "status": "n/a"}]
        self.assertFalse(peers.check_passed(rows))


class ShapeTest(unittest.TestCase):
    def test_full_size_feeds_are_tecs(self):
        # The full sizes are never run here; their shapes (the packed vectors'
        # lengths counted by the peers' unpacking) must be tec's.
        for model in peers.MODELS:
            with self.subTest(model=model):
                out = subprocess.run([tec.binary(), "te", *peers.model_flags(model), str(peers.source(model))],
                                     capture_output=True, text=True, check=True).stdout
                want = {n: tuple(int(d) for d in dims.split(",") if d.strip())
                        for n, dims in re.findall(r'^(\w+) = placeholder\(\(([^)]*)\)', out, re.M)}
                got = peers.feed_shapes(model, peers.config(model, "full"))
                self.assertEqual(got, want)

    def test_unpacker_fails_on_leftovers(self):
        u = peers.Unpacker(np.zeros(10))
        u.take(2, 3)
        with self.assertRaisesRegex(ValueError, "6 of 10"):
            u.done()
        with self.assertRaisesRegex(ValueError, "passes its end"):
            u.take(5)

    def test_random_feeds_distribution(self):
        cfg = peers.config("mmoe", "tiny")
        f = peers.random_feeds("mmoe", cfg, 1)
        self.assertEqual(f["we"].shape, (3, 6, 4))
        # An input is uniform in [-1, 1); a param of rank >= 2 is scaled by
        # 1/sqrt(size / largest dimension), as tec run --fill random does.
        self.assertLessEqual(np.abs(f["x"]).max(), 1)
        self.assertLessEqual(np.abs(f["we"]).max(), 1 / np.sqrt(3 * 6 * 4 / 6))
        self.assertGreater(np.abs(f["we"]).max(), 0.5 / np.sqrt(3 * 6 * 4 / 6))


class DecodeBenchTest(unittest.TestCase):
    """What run.sh asks of peers.py for the timed decode step."""

    def test_feeds_at_a_position_with_shared_params(self):
        with tempfile.TemporaryDirectory() as d:
            b1, b3 = f"{d}/b1", f"{d}/b3"
            peers.main(["--make-feeds", b1, "--model", "llama-decode", "-D", "B=1", "-D", "T=7", "--pos", "6"])
            peers.main(["--make-feeds", b3, "--model", "llama-decode", "-D", "B=3", "-D", "T=7", "--pos", "6",
                        "--params-from", b1])
            f1, f3 = peers.load_dir(b1), peers.load_dir(b3)
            cfg = peers.config("llama-decode", "tiny", [("B", "3"), ("T", "7")])
            self.assertEqual(f3["pos"].tolist(), [6, 6, 6])
            self.assertEqual(f3["k_cache"].shape, (cfg["L"], 3, cfg["NKV"], 7, cfg["D"] // cfg["NH"]))
            self.assertEqual(f3["ids"].shape, (3,))
            np.testing.assert_array_equal(f1["wq"], f3["wq"])  # the same weights, linked
            self.assertEqual(set(f1), set(f3))
            with self.assertRaisesRegex(ValueError, "position 7 is outside the cache's 7"):
                peers.main(["--make-feeds", f"{d}/bad", "--model", "llama-decode", "-D", "T=7", "--pos", "7"])

    def test_bench_rows_name_the_batch_and_position(self):
        with tempfile.TemporaryDirectory() as d:
            rc = peers.main(["--bench", "--device", "cpu", "--model", "llama-decode", "-D", "B=2", "--pos", "3",
                             "--runner", "eager,cudagraph", "--precision", "f32", "--iters", "2", "--warmup", "1",
                             "--json", f"{d}/rows.json"])
            self.assertEqual(rc, 0)
            with open(f"{d}/rows.json") as f:
                rows = {r["runner"]: r for r in json.load(f)}
            self.assertEqual((rows["eager"]["batch"], rows["eager"]["pos"], rows["eager"]["status"]), (2, [3], "ok"))
            self.assertEqual(rows["eager"]["defines"], {"B": "2"})
            self.assertEqual(rows["eager"]["runs"], 2)
            self.assertEqual(rows["cudagraph"]["status"], "n/a")


class CompareTest(unittest.TestCase):
    def test_tolerances(self):
        want = np.array([1.0, -2.0, 0.0])
        self.assertTrue(peers.compare(want * (1 + 5e-8), want, "f64")[0])
        self.assertFalse(peers.compare(want * (1 + 1e-6), want, "f64")[0])
        self.assertFalse(peers.compare(want[:2], want, "f32")[0])
        self.assertFalse(peers.compare(want * np.nan, want, "f32")[0])
        self.assertTrue(peers.compare(want * 1.01, want, "bf16", want)[0])
        self.assertFalse(peers.compare(want * 1.2, want, "bf16", want)[0])
        with self.assertRaises(peers.IllConditioned):
            peers.compare(want, want, "f16", want * 3)


if __name__ == "__main__":
    unittest.main()
