"""Tests of tec.py, the Python helper; run from python/ with ``python3 -m unittest``.

They run the real tec command (found as tec.binary() says: set TEC to a built
tec to skip the build).
"""

import json
import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

import numpy as np

import tec

REPO = pathlib.Path(__file__).resolve().parent.parent
SOFTMAX = str(REPO / "examples" / "softmax.te")
NOTEBOOKS = REPO / "examples" / "notebooks"

SCALE = """\
const N = 3
const M = 5

model scale {
  input x: f32[N, M]
  param w: f32[M]
  y[i, j] = x[i, j] * w[j] + 1.0
  z[i] = sum[j](x[i, j])
  output y
  output z
}
"""

STAGES = """\
model stages {
  input x: f32[4]
  h[j] = x[j]
  for l in 0..2 {
    param w: f32[4 - 2 * l, 2 + l]
    h = matmul(reshape2(h, 1, 4 - 2 * l), w)[0]
  }
  output y = h
}
"""

BAD = """\
model m {
  input x: f32[4]
  y[i] = exq(x[i])
  output y
}
"""


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test-tec-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path


class RunTest(TempDirTest):
    def test_inputs_and_params_round_trip(self):
        path = self.write("scale.te", SCALE)
        rng = np.random.default_rng(1)
        x = rng.standard_normal((3, 5)).astype(np.float32)
        w = rng.standard_normal(5).astype(np.float32)
        out = tec.run(path, inputs={"x": x}, params={"w": w})
        self.assertEqual(sorted(out), ["y", "z"])
        self.assertEqual(out["y"].dtype, np.float32)
        self.assertEqual(out["y"].shape, (3, 5))
        np.testing.assert_allclose(out["y"], x * w + 1, rtol=1e-6)
        np.testing.assert_allclose(out["z"], x.sum(axis=1), rtol=1e-5, atol=1e-6)
        self.assertEqual(out.summary["model"], "scale")
        self.assertEqual(out.summary["device"], "ref")

    def test_params_declared_in_a_loop(self):
        # A param declared in a loop is one per iteration, named w.0, w.1:
        # the names are keys of the params dict as they are.
        path = self.write("stages.te", STAGES)
        x = np.arange(4, dtype=np.float32)
        w0 = np.full((4, 2), 0.5, np.float32)
        w1 = np.arange(6, dtype=np.float32).reshape(2, 3)
        out = tec.run(path, inputs={"x": x}, params={"w.0": w0, "w.1": w1})
        np.testing.assert_allclose(out["y"], (x @ w0) @ w1, rtol=1e-6)

    def test_fortran_order_and_float64_inputs(self):
        # A transposed view is Fortran-ordered, which tec refuses; the helper
        # must hand it over in C order. float64 is converted by tec.
        path = self.write("scale.te", SCALE)
        x = np.arange(15, dtype=np.float64).reshape(5, 3).T
        self.assertFalse(x.flags.c_contiguous)
        out = tec.run(path, inputs={"x": x}, params={"w": np.ones(5)})
        np.testing.assert_allclose(out["y"], x + 1)

    def test_warnings_are_kept(self):
        # An array that names no input is warned about, as JSON or as text.
        x = np.ones((4, 8), np.float32)
        out = tec.run(SOFTMAX, inputs={"x": x, "xx": x}, defines={"N": 4, "D": 8})
        said = out.stderr + "".join(d.message for d in out.diagnostics)
        self.assertIn("xx", said)

    def test_defines_and_fill(self):
        out = tec.run(SOFTMAX, fill="random", seed=3, defines={"N": 2, "D": 6})
        self.assertEqual(out["y"].shape, (2, 6))
        np.testing.assert_allclose(out["y"].sum(axis=1), 1, rtol=1e-6)

    def test_sim_equals_ref_on_softmax(self):
        rng = np.random.default_rng(7)
        x = (4 * rng.standard_normal((4, 8))).astype(np.float32)
        defines = {"N": 4, "D": 8}
        want = np.exp(x - x.max(axis=1, keepdims=True))
        want /= want.sum(axis=1, keepdims=True)
        ref = tec.run(SOFTMAX, inputs={"x": x}, defines=defines)
        np.testing.assert_allclose(ref["y"], want, rtol=1e-6, atol=1e-7)
        for level in (0, 4):
            with self.subTest(level=level):
                sim = tec.run(SOFTMAX, inputs={"x": x}, defines=defines,
                              device="sim", level=level)
                self.assertEqual(sim.summary["device"], "sim")
                np.testing.assert_allclose(sim["y"], ref["y"], rtol=1e-5, atol=1e-7)

    def test_bad_program_raises_with_position(self):
        path = self.write("bad.te", BAD)
        with self.assertRaises(tec.TecError) as caught:
            tec.run(path, fill="zeros")
        err = caught.exception
        self.assertEqual(err.returncode, 1)
        self.assertEqual(len(err.errors()), 1)
        d = err.errors()[0]
        self.assertEqual((d.file, d.line, d.col), (path, 3, 10))
        self.assertEqual(d.code, "undefined")
        self.assertIn("exp", d.hint)
        self.assertIn(f"{path}:3:10: error[undefined]: undefined name 'exq'", str(err))

    def test_wrong_shape_raises_with_the_reason(self):
        # The reason may come as a JSON diagnostic or as text on stderr: the
        # exception carries it either way.
        x = np.zeros((3, 8), np.float32)
        with self.assertRaises(tec.TecError) as caught:
            tec.run(SOFTMAX, inputs={"x": x}, defines={"N": 4, "D": 8})
        self.assertEqual(caught.exception.returncode, 1)
        self.assertRegex(str(caught.exception), r"\(3, 8\)|\[3, 8\]|3, 8")

    def test_cuda_without_its_runtime_raises(self):
        # tec-cuda (docs/gpu.md) where TEC_CUDA says, and not there: one
        # clear line, status 1, whatever GPU the machine has.
        with mock.patch.dict(os.environ, {"TEC_CUDA": os.path.join(self.tmp, "no-tec-cuda")}):
            with self.assertRaises(tec.TecError) as caught:
                tec.run(SOFTMAX, device="cuda", fill="random", defines={"N": 4, "D": 8})
        self.assertEqual(caught.exception.returncode, 1)
        self.assertIn("TEC_CUDA", str(caught.exception))

    def test_missing_input_raises(self):
        with self.assertRaises(tec.TecError) as caught:
            tec.run(SOFTMAX, defines={"N": 4, "D": 8})
        self.assertIn("x", str(caught.exception))


LLAMA = str(REPO / "examples" / "llama.te")
LLAMA_TINY = {"B": 2, "P": 8, "T": 32, "L": 2, "D": 32, "NH": 4, "NKV": 2, "FF": 64, "V": 64}


class GenerateTest(TempDirTest):
    def test_tokens_and_times(self):
        g = tec.generate(LLAMA, fill="random", seed=3, steps=3, defines=LLAMA_TINY)
        self.assertEqual(g.tokens.shape, (2, 4))
        self.assertTrue(((g.tokens >= 0) & (g.tokens < 64)).all(), g.tokens)
        self.assertEqual(len(g.step_ms), 3)
        self.assertGreater(g.prefill_ms, 0)
        self.assertEqual(g.device, "ref")
        self.assertIn("ids", g.summary["filled"])

    def test_prompt_and_params_from_arrays(self):
        # The prompt and the params as tec's --fill random makes them
        # (tec run --save-feeds with the same seed) give the tokens of the filled run,
        # on the reference and on the kernels in the simulator.
        feeds = os.path.join(self.tmp, "feeds")
        subprocess.run([tec.binary(), "run", LLAMA, "--model", "prefill", "--fill", "random", "--seed", "4",
                        "--save-feeds", feeds] + [a for n, v in LLAMA_TINY.items() for a in ("-D", f"{n}={v}")],
                       check=True, capture_output=True)
        arrays = {p.stem: np.load(p) for p in pathlib.Path(feeds).glob("*.npy")}
        params = {n: a for n, a in arrays.items() if n not in ("ids", "k_cache", "v_cache")}
        want = tec.generate(LLAMA, fill="random", seed=4, steps=2, defines=LLAMA_TINY).tokens
        got = tec.generate(LLAMA, prompt=arrays["ids"], params=params, steps=2, defines=LLAMA_TINY)
        np.testing.assert_array_equal(got.tokens, want)
        self.assertEqual(got.summary["filled"], [])
        sim = tec.generate(LLAMA, prompt=arrays["ids"], params=params, steps=2, device="sim", level=4,
                           defines=LLAMA_TINY)
        np.testing.assert_array_equal(sim.tokens, want)

    def test_too_many_steps_raises_with_the_fix(self):
        with self.assertRaises(tec.TecError) as caught:
            tec.generate(LLAMA, fill="ones", steps=30, defines=LLAMA_TINY)
        self.assertEqual(caught.exception.returncode, 1)
        self.assertIn("need 38 cache positions, but the caches hold 32", str(caught.exception))
        self.assertIn("steps=24", caught.exception.diagnostics[0].hint)

    def test_prompt_of_another_shape_raises(self):
        with self.assertRaises(tec.TecError) as caught:
            tec.generate(LLAMA, prompt=np.zeros((2, 5), np.int32), fill="ones", defines=LLAMA_TINY)
        self.assertIn("want i32[2, 8]", str(caught.exception))


class SamplingTest(unittest.TestCase):
    SAMPLE = dict(fill="random", seed=3, steps=5, defines=LLAMA_TINY, temperature=1.5, top_k=20, top_p=0.9)

    def test_sampled_tokens(self):
        greedy = tec.generate(LLAMA, fill="random", seed=3, steps=5, defines=LLAMA_TINY)
        g = tec.generate(LLAMA, **self.SAMPLE)
        self.assertEqual(g.tokens.shape, (2, 6))
        self.assertFalse((g.tokens == greedy.tokens).all(), "sampling gave the greedy tokens")
        self.assertEqual(g.finish, ["steps", "steps"])
        self.assertEqual(g.summary["sampling"], {"temperature": 1.5, "top_k": 20, "top_p": 0.9, "seed": 3})
        sim = tec.generate(LLAMA, device="sim", level=4, race=False, **self.SAMPLE)
        np.testing.assert_array_equal(sim.tokens, g.tokens)

    def test_eos_and_stream(self):
        free = tec.generate(LLAMA, **self.SAMPLE).tokens
        eos = int(free[0, 2])
        self.assertNotIn(eos, free[0, :2])
        g = tec.generate(LLAMA, eos=[eos], **self.SAMPLE)
        ends = [list(row).index(eos) if eos in row else len(row) - 1 for row in free]
        self.assertEqual(g.tokens.shape, (2, max(ends) + 1))
        for b, end in enumerate(ends):
            np.testing.assert_array_equal(g.tokens[b, :end + 1], free[b, :end + 1])
            self.assertTrue((g.tokens[b, end + 1:] == -1).all(), g.tokens)
            self.assertEqual(g.finish[b], "eos" if eos in free[b] else "steps")
        self.assertEqual(len(g.step_ms), max(ends))

        stream = tec.generate_stream(LLAMA, eos=eos, **self.SAMPLE)
        runs = []
        while True:
            try:
                runs.append(next(stream))
            except StopIteration as stop:
                done = stop.value
                break
        np.testing.assert_array_equal(np.stack(runs, axis=1), g.tokens)
        np.testing.assert_array_equal(done.tokens, g.tokens)
        self.assertEqual(done.finish, g.finish)

    def test_stream_raises_after_the_tokens(self):
        stream = tec.generate_stream(LLAMA, fill="ones", steps=30, defines=LLAMA_TINY)
        with self.assertRaises(tec.TecError) as caught:
            list(stream)
        self.assertIn("use steps=24 or fewer", str(caught.exception))

    def test_bad_sampling(self):
        tests = [
            (dict(temperature=-1), "temperature= -1: want 0 or a positive number"),
            (dict(temperature=1, top_p=0), "top_p= 0: want a probability above 0 and at most 1"),
            (dict(top_k=5), "top_k= filters the tokens that sampling draws from, but generation is greedy at temperature 0"),
            (dict(eos=64), "eos=: end-of-sequence token 64 is not in the vocabulary"),
        ]
        for kw, want in tests:
            with self.subTest(**kw):
                with self.assertRaises(tec.TecError) as caught:
                    tec.generate(LLAMA, fill="ones", defines=LLAMA_TINY, **kw)
                self.assertEqual(caught.exception.returncode, 2)
                self.assertIn(want, str(caught.exception))
                self.assertNotIn("--", str(caught.exception))


class TextTest(unittest.TestCase):
    """Text prompts with a Hugging Face checkpoint: hf_models.py's
    llama3_text, whose greedy text PyTorch worked out."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="tec-text-")
        subprocess.run([sys.executable, str(REPO / "python" / "hf_models.py"), cls.tmp.name, "llama3_text"],
                       check=True, capture_output=True)
        cls.ckpt = os.path.join(cls.tmp.name, "llama3_text")
        with open(cls.ckpt + ".expected.json") as f:
            cls.spec = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_text_as_it_comes(self):
        plain, want = self.spec["prompts"]["plain"], self.spec["expected"]["plain"]
        stream = tec.generate_text(self.ckpt, plain["prompt"], steps=self.spec["steps"])
        pieces = []
        while True:
            try:
                pieces.append(next(stream))
            except StopIteration as stop:
                done = stop.value
                break
        self.assertEqual("".join(pieces), want["text"])
        self.assertEqual(done.text, [want["text"]])
        self.assertEqual(done.tokens[0].tolist(), want["tokens"])

    def test_chat_and_stop(self):
        chat, want = self.spec["prompts"]["chat"], self.spec["expected"]["chat"]
        g = tec.generate(self.ckpt, prompt=chat["prompt"], chat=True, system=chat["system"], steps=self.spec["steps"])
        self.assertEqual(g.text, [want["text"]])
        stop = want["text"][3:5]
        g = tec.generate(self.ckpt, prompt=chat["prompt"], chat=True, system=chat["system"],
                         steps=self.spec["steps"], stop=stop)
        self.assertEqual(g.text, [want["text"][:want["text"].index(stop)]])
        self.assertEqual(g.finish, ["stop"])

    def test_not_text(self):
        with self.assertRaises(tec.TecError) as caught:
            list(tec.generate_text(self.ckpt, [[1, 2]]))
        self.assertIn("want the prompt's text", str(caught.exception))


class ArgumentTest(unittest.TestCase):
    """Arguments tec would refuse, or the helper would change, are refused
    before tec runs: a TecError (status 2, no command) naming the argument."""

    def refused(self, call, want):
        with self.assertRaises(tec.TecError) as caught:
            call()
        err = caught.exception
        self.assertEqual((err.returncode, err.command), (2, []))
        self.assertEqual(len(err.diagnostics), 1)
        self.assertEqual(err.diagnostics[0].code, "usage")
        self.assertEqual(err.diagnostics[0].message, want)
        return err

    def test_prompts(self):
        tests = [
            ([[1.9, 2]], "prompt=: token ids must be integers, not float64 (tec neither rounds nor converts them)"),
            ([[1.0, 2.0]], "prompt=: token ids must be integers, not float64 (tec neither rounds nor converts them)"),
            ([[True, False]], "prompt=: token ids must be integers, not bool (tec neither rounds nor converts them)"),
            ([[1, 2**32 + 1]], "prompt=: token id 4294967297 at [0, 1] does not fit in int32 (-2147483648 to 2147483647)"),
            ([[2**40, 1]], "prompt=: token id 1099511627776 at [0, 0] does not fit in int32 (-2147483648 to 2147483647)"),
            (np.array([[0], [2**31]], np.uint64), "prompt=: token id 2147483648 at [1, 0] does not fit in int32 (-2147483648 to 2147483647)"),
            ([[2**70]], "prompt=: token id 1180591620717411303424 at [0, 0] does not fit in int32 (-2147483648 to 2147483647)"),
            ([[1, "2"]], "prompt=: token ids must be integers, not <U21 (tec neither rounds nor converts them)"),
            (np.array([[1, None]], object), "prompt=: token ids must be integers, not NoneType (None)"),
        ]
        for prompt, want in tests:
            with self.subTest(prompt=prompt):
                self.refused(lambda: tec.generate(LLAMA, prompt=prompt, fill="ones", defines=LLAMA_TINY), want)

    def test_integers(self):
        calls = {
            "run": lambda **kw: tec.run(SOFTMAX, fill="ones", **kw),
            "generate": lambda **kw: tec.generate(LLAMA, fill="ones", defines=LLAMA_TINY, **kw),
            "explain": lambda **kw: tec.explain(SOFTMAX, plan=True, **kw),
            "build": lambda **kw: tec.build(SOFTMAX, **kw),
        }
        tests = [
            ("level", 4.7, "level=4.7: want an integer from 0 to 4"),
            ("level", "x", "level='x': want an integer from 0 to 4"),
            ("level", True, "level=True: want an integer from 0 to 4"),
            ("level", 5, "level=5: want an integer from 0 to 4"),
            ("level", np.int64(-1), "level=-1: want an integer from 0 to 4"),
            ("steps", 2.9, "steps=2.9: want an integer, 0 or more"),
            ("steps", -1, "steps=-1: want an integer, 0 or more"),
            ("seed", 1.5, "seed=1.5: want an integer, 0 or more"),
            ("seed", 2**64, "seed=18446744073709551616: want an integer, 0 or more"),
            ("top_k", 2.5, "top_k=2.5: want an integer, 0 or more"),
            ("eos", -1, "eos=-1: want an integer, 0 or more"),
            ("eos", [1, 2.0], "eos=2.0: want an integer, 0 or more"),
            ("temperature", "hot", "temperature='hot': want a number"),
            ("top_p", True, "top_p=True: want a number"),
        ]
        for name, value, want in tests:
            for function, call in calls.items():
                if name == "steps" and function != "generate" or name == "seed" and function not in ("run", "generate"):
                    continue
                if name in ("top_k", "eos", "temperature", "top_p") and function != "generate":
                    continue
                with self.subTest(function=function, name=name, value=value):
                    err = self.refused(lambda: call(**{name: value}), want)
                    self.assertEqual(err.diagnostics[0].hint, f"see help(tec.{function})")

    def test_integers_of_numpy_are_taken(self):
        out = tec.run(SOFTMAX, fill="ones", device="sim", level=np.int64(2), seed=np.uint8(3),
                      defines={"N": 2, "D": 4})
        self.assertEqual(out["y"].shape, (2, 4))
        prompt = np.arange(16, dtype=np.uint16).reshape(2, 8)
        g = tec.generate(LLAMA, prompt=prompt.tolist(), fill="random", steps=np.int32(1), defines=LLAMA_TINY)
        want = tec.generate(LLAMA, prompt=prompt.astype(np.int32), fill="random", steps=1, defines=LLAMA_TINY)
        np.testing.assert_array_equal(g.tokens, want.tokens)


class MessageTest(unittest.TestCase):
    """tec's messages name the Python arguments, not the temporary files,
    tensorio, the .npy header or the command-line flags."""

    def assertPython(self, text):
        # The temporary directories are named by their prefixes: the
        # checkout itself may well live under the temporary directory.
        for word in ("tensorio", "tec-run-", "tec-generate-", "--", "header", ".npz", ".npy"):
            self.assertNotIn(word, text)

    def caught(self, call):
        with self.assertRaises(tec.TecError) as caught:
            call()
        self.assertPython(str(caught.exception))
        for d in caught.exception.diagnostics:
            self.assertPython(d.file)
        return str(caught.exception)

    def test_errors(self):
        x = np.zeros((4, 8), np.float32)
        tests = [
            (lambda: tec.run(SOFTMAX, inputs={"x": np.zeros((3, 8), np.float32)}, defines={"N": 4, "D": 8}),
             "inputs['x']: the array is float32[3, 8], want f32[4, 8]"),
            (lambda: tec.run(SOFTMAX, inputs={"x": x.astype(np.complex64)}, defines={"N": 4, "D": 8}),
             "inputs['x']: unsupported dtype complex64 (want float32, float16, int32, bool, float64 or int64)"),
            (lambda: tec.run(SOFTMAX, defines={"N": 4, "D": 8}),
             "pass inputs= or params=, or fill='zeros'|'ones'|'random'"),
            (lambda: tec.generate(LLAMA, params={"wte": np.zeros((3, 3), np.float32)}, fill="ones", defines=LLAMA_TINY),
             "params['wte']: the array is float32[3, 3], want f32[64, 32]"),
            (lambda: tec.generate(LLAMA, prompt=np.full((2, 8), 70), fill="ones", defines=LLAMA_TINY),
             "prompt=: the prompt's token 70 at [0, 0] is not in the vocabulary [0, 64)"),
            (lambda: tec.generate(LLAMA, prompt=np.zeros((2, 5), np.int32), fill="ones", defines=LLAMA_TINY),
             "defines={'B': ..., 'P': ...}"),
            (lambda: tec.generate(LLAMA, fill="bogus", defines=LLAMA_TINY),
             "fill=: unknown fill \"bogus\" (want zeros, ones or random)\n  hint: see help(tec.generate)"),
            (lambda: tec.generate(LLAMA, fill="ones", steps=30, defines=LLAMA_TINY),
             "use steps=24 or fewer"),
            (lambda: tec.run(SOFTMAX, fill="ones", level=2),
             "level=2 configures the kernels, which only device='sim' runs"),
        ]
        for call, want in tests:
            with self.subTest(want=want):
                self.assertIn(want, self.caught(call))

    def test_warnings(self):
        x = np.ones((4, 8), np.float32)
        out = tec.run(SOFTMAX, inputs={"x": x, "xx": x}, defines={"N": 4, "D": 8})
        said = out.stderr + "".join(d.message for d in out.diagnostics)
        self.assertIn('inputs= holds "xx", which is no input or param of model softmax', said)
        self.assertPython(said)

    def test_translate(self):
        files = {"/tmp/t/params.npz": "params", "/tmp/t/prompt.npy": "prompt"}
        tests = [
            ("tensorio: /tmp/t/params.npz: w.0.npy: element 3: int64 value 4294967296 does not fit in i32",
             "params['w.0']: element 3: int64 value 4294967296 does not fit in i32"),
            ("/tmp/t/params.npz: param \"wte\": bad", "params=: param \"wte\": bad"),
            ("--prompt /tmp/t/prompt.npy: the prompt's token 70", "prompt=: the prompt's token 70"),
            ("pass --prompt ids.npy (token ids, i32[B, P]), or --fill random to fill it",
             "pass prompt= (token ids, i32[B, P]), or fill='random' to fill it"),
            ("use smaller sizes (-D NAME=VALUE) or fewer --steps, or --max-time 0 to run it anyway",
             "use smaller sizes (defines={'NAME': VALUE}) or fewer steps=, or max_time=0 to run it anyway"),
            ("name them with --prefill NAME and --decode NAME", "name them with prefill='NAME' and decode='NAME'"),
            ("detect races (--race=false to skip)", "detect races (race=false to skip)"),
            ("an --unknown-flag stays", "an --unknown-flag stays"),
            ("usage: tec run [flags] FILE; run 'tec help run' for details", "see help(tec.run)"),
        ]
        for text, want in tests:
            with self.subTest(text=text):
                self.assertEqual(tec._translate(text, "run", files), want)


class CommandsTest(TempDirTest):
    def test_check(self):
        self.assertEqual(tec.check(SOFTMAX), [])
        with self.assertRaises(tec.TecError) as caught:
            tec.check(self.write("bad.te", BAD))
        self.assertEqual(caught.exception.errors()[0].line, 3)

    def test_unknown_define_is_a_diagnostic(self):
        with self.assertRaises(tec.TecError) as caught:
            tec.check(SOFTMAX, defines={"Q": 1})
        self.assertIn("Q", str(caught.exception))

    def test_explain(self):
        analysis = tec.explain(SOFTMAX, defines={"N": 4, "D": 8})
        self.assertEqual(analysis["program"], "softmax")
        self.assertEqual(analysis["summary"]["tes"], 4)
        self.assertEqual([t["name"] for t in analysis["tes"]], ["m", "e", "s", "y"])
        self.assertNotIn("plan", analysis)

    def test_explain_plan_levels(self):
        kernels = {level: tec.explain(SOFTMAX, plan=True, level=level)["plan"]["kernels"]
                   for level in (0, 4)}
        self.assertGreater(len(kernels[0]), len(kernels[4]))
        self.assertTrue(all(k["predicted_ms"] > 0 for k in kernels[4]))

    def test_graph_dot(self):
        dot = tec.graph(SOFTMAX, format="dot")
        self.assertIn("digraph", dot)
        self.assertRegex(dot, r"\n\s+\S")  # indentation kept

    @unittest.skipUnless(shutil.which("dot"), "needs Graphviz's dot")
    def test_graph_svg(self):
        svg = tec.graph(SOFTMAX)
        self.assertIsInstance(svg, tec.SVG)
        self.assertIn("<svg", svg)
        self.assertEqual(svg._repr_svg_(), str(svg))

    def test_build(self):
        b = tec.build(SOFTMAX, level=0, defines={"N": 4, "D": 8})
        self.assertEqual(b.model, "softmax")
        self.assertIn("__global__", b.source)
        self.assertIn("softmax.h", b.files)
        self.assertEqual(len(b.report["kernels"]), 4)
        self.assertIsNone(b.dir)

    def test_build_into_dir(self):
        out = os.path.join(self.tmp, "out")
        b = tec.build(SOFTMAX, out_dir=out, emit="cu,host")
        self.assertEqual(b.dir, pathlib.Path(out))
        self.assertEqual(sorted(os.listdir(out)), ["main.cu", "softmax.cu", "softmax.h"])
        self.assertEqual(b.files["main.cu"], pathlib.Path(out, "main.cu").read_text())

    def test_usage_error_carries_text(self):
        with self.assertRaises(tec.TecError) as caught:
            tec.build(SOFTMAX, gpu="no-such-gpu")
        self.assertEqual(caught.exception.returncode, 2)
        self.assertIn("no-such-gpu", str(caught.exception))


class FakeTecTest(TempDirTest):
    """The helper against a stand-in tec, for output tec does not print today."""

    def fake(self, script):
        path = self.write("tec", "#!/bin/sh\n" + script)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        tec.binary.cache_clear()
        self.addCleanup(tec.binary.cache_clear)
        patcher = mock.patch.dict(os.environ, {"TEC": path})
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_tec_env_var_is_used(self):
        self.fake("exit 0\n")
        self.assertEqual(tec.binary(), os.environ["TEC"])

    def test_diagnostic_without_position(self):
        diag = {"severity": "error", "code": "data", "message": "no data for tensor x"}
        self.fake(f"echo '{json.dumps(diag)}'\necho 'tec run: more' >&2\nexit 1\n")
        with self.assertRaises(tec.TecError) as caught:
            tec.check("model.te")
        d = caught.exception.diagnostics[0]
        self.assertEqual((d.line, d.col, d.code), (0, 0, "data"))
        self.assertEqual(str(d), "error[data]: no data for tensor x")
        self.assertIn("tec run: more", caught.exception.stderr)

    def test_summary_of_a_failed_run(self):
        summary = {"model": "m", "compare": {"ok": False}}
        self.fake(f"echo '{json.dumps(summary, indent=2)}'\nexit 1\n")
        with self.assertRaises(tec.TecError) as caught:
            tec.run("model.te")
        self.assertEqual(caught.exception.summary, summary)
        self.assertEqual(caught.exception.diagnostics, [])


class ParseTest(unittest.TestCase):
    def test_json_and_text_mixed(self):
        text = '{"a": 1}\nplain line\n  {"b": [\n 2]}\n{not json\n'
        values, rest = tec._parse_json_stream(text)
        self.assertEqual(values, [{"a": 1}, {"b": [2]}])
        self.assertEqual(rest, "\nplain line\n\n{not json\n")


class DocsTest(unittest.TestCase):
    def test_cli_md_python_snippets_run_as_written(self):
        # docs/cli.md's Python, followed literally from the repository root.
        text = (REPO / "docs" / "cli.md").read_text()
        snippets = re.findall(r"```python\n(.*?)```", text, re.S)
        self.assertTrue(snippets, "no Python snippet in docs/cli.md")
        for snippet in snippets:
            with self.subTest(snippet=snippet.splitlines()[0]):
                r = subprocess.run([sys.executable, "-c", snippet], cwd=REPO,
                                   capture_output=True, text=True)
                self.assertEqual(r.returncode, 0, r.stderr)


class NotebookTest(unittest.TestCase):
    def test_committed_notebooks_have_no_outputs(self):
        notebooks = sorted(NOTEBOOKS.glob("*.ipynb"))
        self.assertTrue(notebooks, f"no notebook in {NOTEBOOKS}")
        for path in notebooks:
            nb = json.loads(path.read_text())
            for i, cell in enumerate(nb["cells"]):
                if cell["cell_type"] != "code":
                    continue
                with self.subTest(notebook=path.name, cell=i):
                    self.assertEqual(cell["outputs"], [])
                    self.assertIsNone(cell["execution_count"])


if __name__ == "__main__":
    unittest.main()
