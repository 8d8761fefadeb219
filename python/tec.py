"""Drive the tec command from Python: NumPy arrays in, NumPy arrays out.

Each function runs one ``tec`` command, passes arrays through ``.npz`` files in a
temporary directory, reads the command's JSON, and raises :class:`TecError` when
tec fails::

    import numpy as np, tec
    x = np.random.rand(4, 8).astype(np.float32)
    y = tec.run("examples/softmax.te", inputs={"x": x}, defines={"N": 4, "D": 8})["y"]
    y_sim = tec.run("examples/softmax.te", inputs={"x": x}, defines={"N": 4, "D": 8},
                    device="sim", level=4)["y"]

The command used is, in this order: the file named by the environment variable
``TEC``; ``tec`` on ``PATH``; or, when this file lies in a clone of the tec
repository and Go is installed, ``./cmd/tec`` of that clone, built once per
Python process (``go build``) into a temporary directory removed at exit.

Arguments are checked before tec runs: ``level``, ``steps``, ``seed``, ``top_k``
and ``eos`` must be integers in range, ``temperature`` and ``top_p`` real numbers,
``prompt`` integer token ids that fit int32, never rounded or wrapped; a bad one
raises :class:`TecError` naming it. tec's messages name the
Python arguments (``params['w']``, ``fill=``), not the temporary files and
command-line flags through which the helper passes them.

Only the standard library and NumPy are needed.
"""

import atexit
import dataclasses
import functools
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import numpy as np

__all__ = [
    "Build",
    "Diagnostic",
    "Outputs",
    "SVG",
    "TecError",
    "binary",
    "build",
    "check",
    "explain",
    "Generation",
    "generate",
    "generate_stream",
    "generate_text",
    "graph",
    "run",
]

_REPO = pathlib.Path(__file__).resolve().parent.parent


@dataclasses.dataclass
class Diagnostic:
    """One error or warning of tec, as ``--diagnostics json`` prints it.

    ``line`` and ``col`` are 1-based (as tec's text diagnostics print them;
    columns count UTF-16 code units); they are 0 when tec gave no position.
    ``raw`` is the JSON object as tec printed it.
    """

    message: str
    file: str = ""
    line: int = 0
    col: int = 0
    end_line: int = 0
    end_col: int = 0
    severity: str = "error"
    code: str = ""
    hint: str = ""
    raw: dict = dataclasses.field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, obj):
        """Makes a Diagnostic from one JSON diagnostic object of tec."""
        rng = obj.get("range") or {}
        start = rng.get("start") or {}
        end = rng.get("end") or start
        has_pos = bool(rng)
        return cls(
            message=str(obj.get("message", "")),
            file=str(obj.get("file", "")),
            line=start.get("line", 0) + 1 if has_pos else 0,
            col=start.get("character", 0) + 1 if has_pos else 0,
            end_line=end.get("line", 0) + 1 if has_pos else 0,
            end_col=end.get("character", 0) + 1 if has_pos else 0,
            severity=str(obj.get("severity", "error")),
            code=str(obj.get("code", "")),
            hint=str(obj.get("hint", "") or ""),
            raw=obj,
        )

    def location(self):
        """Returns ``file:line:col`` (or as much of it as is known)."""
        if self.line and self.file:
            return f"{self.file}:{self.line}:{self.col}"
        return self.file

    def __str__(self):
        code = f"[{self.code}]" if self.code else ""
        loc = self.location()
        text = f"{loc + ': ' if loc else ''}{self.severity}{code}: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class TecError(Exception):
    """A tec command failed.

    ``diagnostics`` holds the structured errors tec printed (``--diagnostics
    json``; empty when tec printed only text); ``stderr`` the text it printed on
    standard error; ``returncode`` its exit status (1: the model or its data
    has errors, 2: the command line was misused, or an argument of the helper
    was refused before tec ran); ``command`` the command line (empty when tec
    did not run); ``summary`` the JSON summary, when the command printed one.
    """

    def __init__(self, command, returncode, diagnostics, stderr, summary=None):
        self.command = list(command)
        self.returncode = returncode
        self.diagnostics = list(diagnostics)
        self.stderr = stderr
        self.summary = summary
        super().__init__(self._message())

    def _message(self):
        parts = [str(d) for d in self.diagnostics]
        if self.stderr.strip():
            parts.append(self.stderr.strip())
        if not parts:
            parts.append(f"exit status {self.returncode}")
        return "\n".join(parts)

    def errors(self):
        """Returns the diagnostics whose severity is error."""
        return [d for d in self.diagnostics if d.severity == "error"]


class Outputs(dict):
    """The outputs of :func:`run`, by name, with what tec said of them.

    ``summary`` is tec's ``--json`` summary (model, device, time_ms, filled,
    per-output statistics); ``diagnostics`` the warnings tec printed as JSON,
    ``stderr`` those it printed as text.
    """

    def __init__(self, arrays, summary, diagnostics, stderr):
        super().__init__(arrays)
        self.summary = summary
        self.diagnostics = diagnostics
        self.stderr = stderr


class SVG(str):
    """SVG text that Jupyter displays as a picture."""

    def _repr_svg_(self):
        return str(self)


@dataclasses.dataclass
class Build:
    """What :func:`build` wrote.

    ``files`` maps each file name (``softmax.cu``, ``softmax.h``, ``main.cu``,
    ``softmax.ll``, ``softmax.ptx``) to its text; ``report`` is the static cost
    report (``--report``); ``dir`` is where the files are, or None when they
    were written to a temporary directory that is gone; ``log`` is what tec
    printed.
    """

    model: str
    files: dict
    report: dict
    dir: pathlib.Path = None
    log: str = ""

    @property
    def source(self):
        """The kernels in CUDA C++ (``MODEL.cu``), or None if not emitted."""
        return self.files.get(f"{self.model}.cu")


@dataclasses.dataclass
class Generation:
    """What :func:`generate` produced.

    ``tokens`` is an int64 array [B, steps + 1]: each sequence's tokens, the
    prefill's then each decode step's; a sequence that ended at one of the
    ``eos`` tokens has fewer, the row padded with -1 after its end token (and
    the array is narrower where every sequence ended early). ``finish`` says
    why each ended: ``"steps"``, ``"eos"`` or ``"stop"``. ``prefill_ms`` and
    ``step_ms`` (one per step that ran) are the times tec measured;
    ``summary`` the whole ``--json`` object; ``diagnostics`` the warnings.
    ``text`` is each sequence's text, for a prompt given as text.
    """

    tokens: np.ndarray
    prefill_ms: float
    step_ms: list
    device: str
    summary: dict
    diagnostics: list = dataclasses.field(default_factory=list)
    finish: list = dataclasses.field(default_factory=list)
    text: list = dataclasses.field(default_factory=list)


@functools.lru_cache(maxsize=None)
def binary():
    """Returns the path of the tec command this module runs (see the module doc)."""
    env = os.environ.get("TEC")
    if env:
        return env
    found = shutil.which("tec")
    if found:
        return found
    go = shutil.which("go")
    if go and (_REPO / "cmd" / "tec").is_dir():
        tmp = tempfile.mkdtemp(prefix="tec-bin-")
        atexit.register(shutil.rmtree, tmp, True)
        exe = os.path.join(tmp, "tec")
        r = subprocess.run([go, "build", "-o", exe, "./cmd/tec"], cwd=_REPO,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"go build ./cmd/tec in {_REPO} failed:\n{r.stderr}")
        return exe
    raise FileNotFoundError(
        "no tec command: set TEC to its path, put tec on PATH, "
        "or install Go to build it from this repository")


def _parse_json_stream(text):
    """Splits text into the JSON values it holds and the text that is not JSON."""
    decoder = json.JSONDecoder()
    values, rest, i = [], [], 0
    while i < len(text):
        start = i
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            rest.append(text[start:])
            break
        if text[i] in "{[":
            try:
                value, i = decoder.raw_decode(text, i)
                values.append(value)
                continue
            except json.JSONDecodeError:
                pass
        end = text.find("\n", i)
        end = len(text) if end < 0 else end + 1
        rest.append(text[start:end])
        i = end
    return values, "".join(rest)


def _is_diagnostic(value):
    return isinstance(value, dict) and "message" in value and (
        "severity" in value or "range" in value)


def _refuse(function, message):
    """Returns the TecError for an argument of ``function`` refused before tec ran."""
    return TecError([], 2, [Diagnostic(message=message, code="usage",
                                       hint=f"see help(tec.{function})")], "")


def _number(function, name, value):
    """Returns ``value`` as a float if it is a real number (a Python or NumPy
    one, not a bool); raises TecError naming the argument otherwise. Its range is
    tec's to check."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise _refuse(function, f"{name}={value!r}: want a number")
    return repr(float(value))


def _integer(function, name, value, low, high):
    """Returns ``value`` as an int if it is an integer (a Python or NumPy one, not
    a bool) in [low, high]; raises TecError naming the argument otherwise. A float
    is refused even where it is whole: tec would not round it, nor should this."""
    want = f"an integer from {low} to {high}" if high - low <= 16 else f"an integer, {low} or more"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise _refuse(function, f"{name}={value!r}: want {want}")
    if not low <= int(value) <= high:
        raise _refuse(function, f"{name}={int(value)}: want {want}")
    return int(value)


_INT32 = (-(1 << 31), (1 << 31) - 1)


def _token_ids(function, value):
    """Returns ``value`` (anything np.asarray takes) as an int32 array, if it holds
    integers that fit int32; raises TecError naming ``prompt=`` otherwise."""
    a = np.asarray(value)
    if a.dtype == object:
        bad = [x for x in a.flat if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer))]
        if bad:
            raise _refuse(function, f"prompt=: token ids must be integers, not {type(bad[0]).__name__} ({bad[0]!r})")
    elif a.dtype.kind not in "iu":
        raise _refuse(function, f"prompt=: token ids must be integers, not {a.dtype} (tec neither rounds nor converts them)")
    if a.size:
        out = [i for i, x in np.ndenumerate(a) if not _INT32[0] <= int(x) <= _INT32[1]]
        if out:
            at = ", ".join(str(i) for i in out[0])
            raise _refuse(function, f"prompt=: token id {int(a[out[0]])} at [{at}] does not fit in int32 "
                                    f"({_INT32[0]} to {_INT32[1]})")
    return a.astype(np.int32)


# The flags that the functions' arguments become, by flag: the argument's name.
_ARGS = {
    "inputs": "inputs", "params": "params", "prompt": "prompt", "steps": "steps",
    "seed": "seed", "fill": "fill", "device": "device", "gpu": "gpu",
    "deterministic": "deterministic", "race": "race", "prefill": "prefill",
    "decode": "decode", "model": "model", "precision": "precision",
    "max-time": "max_time", "threshold": "threshold", "target": "target",
    "emit": "emit", "collapse": "collapse", "plan": "plan", "summary": "summary",
    "temperature": "temperature", "top-k": "top_k", "top-p": "top_p", "eos": "eos",
}
# Arguments whose values are strings, quoted where a message gives one.
_STRINGS = {"fill", "device", "gpu", "prefill", "decode", "model", "precision",
            "target", "emit", "collapse"}
# Arguments that are arrays: a flag's file name is not shown.
_ARRAYS = {"inputs", "params", "prompt"}
# Arguments that take no value after a space.
_BOOLS = {"deterministic", "race", "plan", "summary"}
# Words that follow a flag in a sentence rather than give its value.
_WORDS = {"a", "an", "and", "are", "for", "in", "is", "of", "on", "or", "picks",
          "the", "to", "with"}


def _flag(match):
    """Rewrites one flag of a message, with its value where it has one, as the
    argument it comes from: --steps 5 as steps=5, --fill zeros|ones as
    fill='zeros'|'ones', --prompt ids.npy as prompt=."""
    flag, value = match.group(1), match.group(2)
    name = _ARGS.get(flag)
    if name is None:
        return match.group(0)
    after = match.group(0)[2 + len(flag):]
    takes = value is not None and (after.startswith("=") or (
        name not in _BOOLS and value not in _WORDS and (
            name in _STRINGS or name in _ARRAYS or re.fullmatch(r"-?\d[\w.]*", value))))
    if not takes:
        return f"{name}={after}"
    if name in _ARRAYS:
        return f"{name}="
    if name in _STRINGS:
        return f"{name}=" + "|".join(repr(v) for v in value.split("|"))
    return f"{name}={value}"


def _defines(match):
    pairs = re.findall(r"-D (\w+)=([^\s),]+)", match.group(0))
    return "defines={" + ", ".join(f"{k!r}: {v}" for k, v in pairs) + "}"


def _dtype_name(match):
    try:
        return f"dtype {np.dtype(match.group(1)).name}"
    except TypeError:
        return match.group(0)


def _translate(text, function, files):
    """Rewrites one of tec's messages in terms of ``function``'s arguments:
    ``files`` maps each temporary file through which the helper passed an
    argument to the argument's name ("params"); flags become arguments."""
    if not text:
        return text
    for path, name in sorted(files.items(), key=lambda kv: -len(kv[0])):
        p = re.escape(str(path))
        text = re.sub(r"(?:tensorio: )?" + p + r": ([^:\s]+)\.npy: ",
                      lambda m: f"{name}[{m.group(1)!r}]: ", text)
        text = re.sub(r"(?:--[a-z-]+:? )?(?:tensorio: )?" + p, f"{name}=", text)
    text = re.sub(r"the header declares (.*?), want (.*?) \(nothing was read\)", r"the array is \1, want \2", text)
    text = re.sub(r"dtype '([<>|=][a-zA-Z]\d*)'", _dtype_name, text)
    text = text.replace("(want f4, f2, i4, b1, f8 or i8)", "(want float32, float16, int32, bool, float64 or int64)")
    text = text.replace("tensorio: ", "")
    text = text.replace("--inputs/--params/--input", "inputs= or params=")
    text = re.sub(r"usage: tec \S+ \[flags\] FILE; run 'tec help \S+' for details",
                  f"see help(tec.{function})", text)
    text = re.sub(r"(?<![\w-])-D \w+=[^\s),]+(?: -D \w+=[^\s),]+)*", _defines, text)
    text = re.sub(r"(?<![\w-])-O(\d)\b", r"level=\1", text)
    return re.sub(r"(?<![\w-])--([a-z][a-z-]*)(?:[ =]([^\s,;()]+))?", _flag, text)


def _common_args(defines, model):
    args = ["--diagnostics", "json"]
    for name, value in (defines or {}).items():
        args += ["-D", f"{name}={value}"]
    if model:
        args += ["--model", model]
    return args


def _invoke(command, args, json_summary, files=None):
    """Runs ``tec command args``; returns (summary, diagnostics, stdout text, stderr).

    ``files`` maps the temporary files through which arrays were passed to the
    names of the arguments they hold: messages name those instead (_translate).
    Raises TecError when tec exits with a non-zero status.
    """
    cmd = [binary(), command] + [str(a) for a in args]
    r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return _result(command, cmd, r.returncode, r.stdout, r.stderr, json_summary, files)


def _result(command, cmd, returncode, stdout, stderr, json_summary, files):
    """What _invoke returns, from what ``cmd`` printed and its status."""
    files = {str(k): v for k, v in (files or {}).items()}
    values, text = _parse_json_stream(stdout)
    diagnostics = [Diagnostic.from_json(v) for v in values if _is_diagnostic(v)]
    others = [v for v in values if not _is_diagnostic(v)]
    summary = others[0] if json_summary and others else None
    if isinstance(summary, dict):
        # tec run --json carries its warnings in the summary.
        diagnostics += [Diagnostic.from_json(v) for v in summary.get("warnings") or []
                        if _is_diagnostic(v)]
    for d in diagnostics:
        d.message = _translate(d.message, command, files)
        d.hint = _translate(d.hint, command, files)
        if d.file in files:
            d.file, d.line, d.col, d.end_line, d.end_col = "", 0, 0, 0, 0
    stderr = _translate(stderr, command, files)
    if returncode != 0:
        raise TecError(cmd, returncode, diagnostics, stderr + _translate(text, command, files), summary)
    return summary, diagnostics, text, stderr


def _save_npz(path, arrays):
    # tec reads C-order arrays only; np.savez keeps a transposed view in
    # Fortran order, so each array is made contiguous first.
    np.savez(path, **{name: np.ascontiguousarray(a) for name, a in arrays.items()})


def _duration(value):
    if isinstance(value, (int, float)):
        return f"{value}s"
    return str(value)


def check(path, defines=None, model=None):
    """Checks a .te file (``tec check``); returns its warnings.

    Raises TecError with every error tec found.
    """
    _, diagnostics, _, _ = _invoke("check", ["-q", path] + _common_args(defines, model),
                                   json_summary=False)
    return diagnostics


def run(path, inputs=None, params=None, device="ref", level=None, gpu=None,
        deterministic=None, race=None, fill=None, seed=None, max_time=None,
        defines=None, model=None):
    """Evaluates a model (``tec run``) and returns its outputs.

    ``inputs`` and ``params`` map names to arrays (anything np.asarray takes).
    ``device`` is ``"ref"`` (the float64 reference evaluator), ``"sim"`` (the
    emitted kernels in the simulator) or ``"cuda"`` (the kernels on an NVIDIA
    GPU, through ``tec-cuda``: docs/gpu.md); ``level`` (0 to 4), ``gpu``,
    ``deterministic`` and ``race`` are passed as -O, --gpu, --deterministic and
    --race when given. ``fill`` (``"zeros"``, ``"ones"``, ``"random"``) and
    ``seed`` fill what is not supplied; ``max_time`` (seconds, or a Go duration
    such as ``"5m"``) bounds the estimated run time. Returns an
    :class:`Outputs`: a dict of NumPy arrays by output name.
    """
    with tempfile.TemporaryDirectory(prefix="tec-run-") as tmp:
        args = [path, "--device", device, "--json",
                "--outputs", os.path.join(tmp, "outputs.npz")]
        files = {}
        for flag, arrays in (("--inputs", inputs), ("--params", params)):
            if arrays:
                file = os.path.join(tmp, flag.strip("-") + ".npz")
                _save_npz(file, {n: np.asarray(a) for n, a in arrays.items()})
                args += [flag, file]
                files[file] = flag.strip("-")
        if level is not None:
            args += [f"-O{_integer('run', 'level', level, 0, 4)}"]
        if gpu is not None:
            args += ["--gpu", gpu]
        if deterministic is not None:
            args += [f"--deterministic={str(bool(deterministic)).lower()}"]
        if race is not None:
            args += [f"--race={str(bool(race)).lower()}"]
        if fill is not None:
            args += ["--fill", fill]
        if seed is not None:
            args += ["--seed", _integer("run", "seed", seed, 0, (1 << 64) - 1)]
        if max_time is not None:
            args += ["--max-time", _duration(max_time)]
        args += _common_args(defines, model)
        summary, diagnostics, _, stderr = _invoke("run", args, json_summary=True, files=files)
        with np.load(os.path.join(tmp, "outputs.npz")) as archive:
            arrays = {name: archive[name] for name in archive.files}
    return Outputs(arrays, summary, diagnostics, stderr)


def generate(path, prompt=None, params=None, steps=16, device="ref", level=None,
             gpu=None, precision=None, race=None, fill=None, seed=None,
             prefill=None, decode=None, max_time=None, defines=None,
             temperature=None, top_k=None, top_p=None, eos=None,
             chat=False, system=None, stop=None):
    """Generation with a file's prefill and decode models (``tec generate``):
    the prefill runs ``prompt`` (token ids [B, P]), then ``steps`` decode steps
    each add a token per sequence, the KV caches kept by tec between them
    (docs/cli.md, tec generate).

    ``params`` maps names to arrays (the weights both models share), or is
    the path of a Hugging Face checkpoint's directory; ``path`` may be one
    too. ``prompt`` may be a string, the prompt's text, which the
    checkpoint's tokenizer encodes (with ``chat``, as a user's message in
    its chat template, after ``system``); the Generation's ``text`` is then
    the generated text, which ends before the first of ``stop`` (a string or
    a list of them). ``fill``
    and ``seed`` fill what is not supplied, the prompt too when it is None.
    Each token is the model's greedy one, or with ``temperature`` above 0
    drawn from its logits as Hugging Face samples (``top_k``, ``top_p``),
    seeded by ``seed``; a sequence ends at its first token among ``eos`` (a
    token id or a list of them). ``device`` is ``"ref"`` or ``"sim"`` (with
    ``level``, ``gpu``, ``race``); ``prefill`` and ``decode`` name the models
    when they are not called so. Returns a :class:`Generation`.
    """
    with tempfile.TemporaryDirectory(prefix="tec-generate-") as tmp:
        args, files = _generate_args("generate", tmp, path, prompt, params, steps, device, level, gpu,
                                     precision, race, fill, seed, prefill, decode, max_time, defines,
                                     temperature, top_k, top_p, eos, chat, system, stop)
        summary, diagnostics, _, _ = _invoke("generate", args, json_summary=True, files=files)
    return _generation(summary, diagnostics)


def generate_stream(path, prompt=None, params=None, steps=16, device="ref", level=None,
                    gpu=None, precision=None, race=None, fill=None, seed=None,
                    prefill=None, decode=None, max_time=None, defines=None,
                    temperature=None, top_k=None, top_p=None, eos=None,
                    chat=False, system=None, stop=None):
    """:func:`generate`, as a generator of each run's tokens as tec gives them
    (``tec generate --json --stream``): for the prefill and then each decode
    step, an int64 array [B] of each sequence's new token, -1 for a sequence
    that had ended. Its return value (``StopIteration.value``, or ``yield
    from``'s) is the :class:`Generation`. The arguments are :func:`generate`'s;
    a failure raises :class:`TecError` once tec has ended, after the tokens of
    the runs before it. With ``device="cuda"`` the tokens come at the end.
    """
    return (yield from _stream("generate_stream", lambda event: np.asarray(event["tokens"], dtype=np.int64),
                               path, prompt, params, steps, device, level, gpu, precision, race, fill, seed,
                               prefill, decode, max_time, defines, temperature, top_k, top_p, eos, chat, system, stop))


def generate_text(path, prompt, params=None, steps=16, device="ref", level=None,
                  gpu=None, precision=None, race=None, seed=None,
                  max_time=None, defines=None, temperature=None, top_k=None, top_p=None, eos=None,
                  chat=False, system=None, stop=None):
    """:func:`generate` of a text prompt with a Hugging Face checkpoint
    (``path``, or ``params`` beside a .te of it), as a generator of the
    generated text as it comes: one string per run (empty where a character
    waits for the rest of its bytes, or for the end, where it might begin
    one of ``stop``), then what was held back. Its return value
    (``StopIteration.value``, or ``yield from``'s) is the
    :class:`Generation`, whose ``text[0]`` is all of it.
    """
    if not isinstance(prompt, str):
        raise _refuse("generate_text", f"prompt=: want the prompt's text, a str, not {type(prompt).__name__}")
    return (yield from _stream("generate_text", lambda event: (event.get("text") or [""])[0],
                               path, prompt, params, steps, device, level, gpu, precision, race, None, seed,
                               None, None, max_time, defines, temperature, top_k, top_p, eos, chat, system, stop))


def _stream(function, item, path, prompt, params, steps, device, level, gpu, precision, race, fill, seed,
            prefill, decode, max_time, defines, temperature, top_k, top_p, eos, chat, system, stop):
    """Runs tec generate --json --stream and yields item(event) of each
    line; returns the Generation."""
    with tempfile.TemporaryDirectory(prefix="tec-generate-") as tmp:
        args, files = _generate_args(function, tmp, path, prompt, params, steps, device, level, gpu,
                                     precision, race, fill, seed, prefill, decode, max_time, defines,
                                     temperature, top_k, top_p, eos, chat, system, stop)
        cmd = [binary(), "generate"] + [str(a) for a in args + ["--stream"]]
        with tempfile.TemporaryFile(mode="w+") as err:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True)
            rest = []
            try:
                for line in p.stdout:
                    event = None
                    if line.startswith('{"step":'):
                        try:
                            event = json.loads(line)
                        except json.JSONDecodeError:
                            pass
                    if isinstance(event, dict) and "tokens" in event:
                        yield item(event)
                    else:
                        rest.append(line)
            finally:
                p.stdout.close()
                returncode = p.wait()
            err.seek(0)
            stderr = err.read()
        summary, diagnostics, _, _ = _result("generate", cmd, returncode, "".join(rest), stderr, True, files)
    return _generation(summary, diagnostics)


def _generate_args(function, tmp, path, prompt, params, steps, device, level, gpu, precision, race,
                   fill, seed, prefill, decode, max_time, defines, temperature, top_k, top_p, eos,
                   chat=False, system=None, stop=None):
    """The arguments of tec generate --json for :func:`generate`'s, with the
    files (in ``tmp``) through which arrays pass, by argument."""
    args = [path, "--device", device, "--steps",
            _integer(function, "steps", steps, 0, (1 << 63) - 1), "--json"]
    files = {}
    if isinstance(prompt, str):
        args += ["--prompt", prompt]
    elif prompt is not None:
        file = os.path.join(tmp, "prompt.npy")
        np.save(file, np.ascontiguousarray(_token_ids(function, prompt)))
        args += ["--prompt", file]
        files[file] = "prompt"
    if chat:
        args += ["--chat"]
    if system is not None:
        args += ["--system", system]
    if stop is not None:
        for s in [stop] if isinstance(stop, str) else list(stop):
            args += ["--stop", s]
    if isinstance(params, (str, os.PathLike)):
        args += ["--params", os.fspath(params)]
    elif params:
        file = os.path.join(tmp, "params.npz")
        _save_npz(file, {n: np.asarray(a) for n, a in params.items()})
        args += ["--params", file]
        files[file] = "params"
    if level is not None:
        args += [f"-O{_integer(function, 'level', level, 0, 4)}"]
    if gpu is not None:
        args += ["--gpu", gpu]
    if precision is not None:
        args += ["--precision", precision]
    if race is not None:
        args += [f"--race={str(bool(race)).lower()}"]
    if fill is not None:
        args += ["--fill", fill]
    if seed is not None:
        args += ["--seed", _integer(function, "seed", seed, 0, (1 << 64) - 1)]
    if prefill is not None:
        args += ["--prefill", prefill]
    if decode is not None:
        args += ["--decode", decode]
    if max_time is not None:
        args += ["--max-time", _duration(max_time)]
    if temperature is not None:
        args += ["--temperature", _number(function, "temperature", temperature)]
    if top_k is not None:
        args += ["--top-k", _integer(function, "top_k", top_k, 0, (1 << 31) - 1)]
    if top_p is not None:
        args += ["--top-p", _number(function, "top_p", top_p)]
    if eos is not None:
        ids = [eos] if isinstance(eos, (int, np.integer, bool, np.bool_)) or not hasattr(eos, "__iter__") else list(eos)
        for i in ids:
            args += ["--eos", _integer(function, "eos", i, 0, (1 << 31) - 1)]
    args += _common_args(defines, None)
    return args, files


def _generation(summary, diagnostics):
    """The Generation of tec generate --json's summary: the tokens padded
    with -1 after the end of a sequence that ended early."""
    toks = summary["tokens"]
    width = max((len(t) for t in toks), default=0)
    tokens = np.full((len(toks), width), -1, dtype=np.int64)
    for b, t in enumerate(toks):
        tokens[b, :len(t)] = t
    return Generation(tokens=tokens, prefill_ms=summary["prefill_ms"], step_ms=list(summary["step_ms"]),
                      device=summary["device"], summary=summary, diagnostics=diagnostics,
                      finish=list(summary.get("finish") or []), text=list(summary.get("text") or []))


def explain(path, plan=False, level=None, gpu=None, deterministic=None,
            summary=False, threshold=None, defines=None, model=None):
    """Returns the global analysis of a model (``tec explain --json``) as a dict.

    With ``plan`` the dict has a ``plan`` too (``--plan``: the kernels of -O
    ``level`` for ``gpu``, with the cost model's predicted times).
    """
    args = [path, "--json"]
    if plan:
        args += ["--plan"]
    if level is not None:
        args += [f"-O{_integer('explain', 'level', level, 0, 4)}"]
    if gpu is not None:
        args += ["--gpu", gpu]
    if deterministic is not None:
        args += [f"--deterministic={str(bool(deterministic)).lower()}"]
    if summary:
        args += ["--summary"]
    if threshold is not None:
        args += ["--threshold", threshold]
    result, _, _, _ = _invoke("explain", args + _common_args(defines, model),
                              json_summary=True)
    return result


def graph(path, collapse=None, format="svg", defines=None, model=None):
    """Draws the tensor-dependency graph (``tec graph``).

    ``format="svg"`` (needs Graphviz's dot) returns an :class:`SVG`, which a
    notebook shows inline; ``format="dot"`` returns the DOT text.
    """
    args = [path]
    if collapse is not None:
        args += ["--collapse", collapse]
    args += _common_args(defines, model)
    if format == "dot":
        _, _, text, _ = _invoke("graph", args, json_summary=False)
        return text
    with tempfile.TemporaryDirectory(prefix="tec-graph-") as tmp:
        file = os.path.join(tmp, f"graph.{format}")
        _invoke("graph", args + ["-o", file], json_summary=False)
        return SVG(pathlib.Path(file).read_text())


def build(path, out_dir=None, level=None, target=None, gpu=None,
          deterministic=None, emit="cu", defines=None, model=None):
    """Compiles a model (``tec build``) and returns a :class:`Build`.

    ``emit`` is what to write (``"cu"``, ``"cu,host"``, ``"cu,ll,ptx,host"``:
    see ``tec build -h``). Without ``out_dir`` the files are written to a
    temporary directory, read, and removed; with it they stay there.
    """
    with tempfile.TemporaryDirectory(prefix="tec-build-") as tmp:
        out = pathlib.Path(out_dir) if out_dir is not None else pathlib.Path(tmp, "out")
        report_file = os.path.join(tmp, "report.json")
        args = [path, "-o", out, "--emit", emit, "--report", report_file]
        if level is not None:
            args += [f"-O{_integer('build', 'level', level, 0, 4)}"]
        if target is not None:
            args += ["--target", target]
        if gpu is not None:
            args += ["--gpu", gpu]
        if deterministic is not None:
            args += [f"--deterministic={str(bool(deterministic)).lower()}"]
        _, _, log, _ = _invoke("build", args + _common_args(defines, model),
                               json_summary=False)
        with open(report_file) as f:
            report = json.load(f)
        name = report["model"]
        files = {}
        for kind in emit.split(","):
            for file in _emitted(name, kind.strip()):
                files[file] = (out / file).read_text()
    return Build(model=name, files=files, report=report,
                 dir=out if out_dir is not None else None, log=log)


def _emitted(model, kind):
    """The files ``tec build --emit KIND`` writes (docs/cli.md, tec build)."""
    return {
        "cu": [f"{model}.cu", f"{model}.h"],
        "host": ["main.cu"],
        "ll": [f"{model}.ll"],
        "ptx": [f"{model}.ptx"],
    }.get(kind, [])
