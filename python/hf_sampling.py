"""Hugging Face's sampling and tec's draw, in NumPy, independent of tec's
Go code: a reference to check tec generate's sampling against (docs/cli.md,
tec generate), and a way to reproduce its draws in Python.

Usage: python3 python/hf_sampling.py CASES.json

The warpers follow transformers' logits_process.py (written there with
PyTorch, here with NumPy), applied in the order its sampling applies them:
TemperatureLogitsWarper (the scores divided by the temperature),
TopKLogitsWarper (every score below the k-th greatest, as torch.topk counts
them, set to -inf) and TopPLogitsWarper (the scores sorted ascending, their
softmax's cumulative sum, and those at which it is at most 1 - top_p set to
-inf, the greatest always kept); then a softmax. They run in float64. Where
scores tie in the top-p sort, which torch.sort leaves unspecified, tec's
order is taken: the higher position first.

The draw is tec's (generate.Sampling.Uniform and Pick): token k of sequence
seq (k = 0 the prefill's) draws u = (x >> 11) / 2**53, x the first output of
a PCG-DXSM generator (Go's math/rand/v2 PCG) of 128-bit state
(seed << 64) | (seq << 32 | k); the token is the first, in position order,
of nonzero probability at which the cumulative probability exceeds u.

CASES.json, which the Go test TestSampleHF (cmd/tec) writes, holds rows of
logits (null for -inf), and cases: each a row, a temperature, top_k and
top_p, tec's distribution (probs) and its draws (seed, seq, k, u, token).
The script recomputes each and exits with status 1, naming the first
disagreement, where a distribution differs by more than 1e-6, a uniform
at all, or a token. Needs NumPy (Debian's python3-numpy).
"""

import json
import sys

import numpy as np

MASK = 2**64 - 1
MUL = (2549297995355413924 << 64) | 4865540595714422341
INC = (6364136223846793005 << 64) | 1442695040888963407


def uniform(seed, seq, k):
    """The uniform in [0, 1) that token k of sequence seq draws (tec's)."""
    state = (seed << 64) | (seq << 32) | k
    state = (state * MUL + INC) % (1 << 128)
    hi, lo = state >> 64, state & MASK
    hi ^= hi >> 32
    hi = (hi * 0xDA942042E4DD58B5) & MASK
    hi ^= hi >> 48
    hi = (hi * (lo | 1)) & MASK
    return float(hi >> 11) / float(1 << 53)


def temperature_warp(scores, temperature):
    return scores / temperature


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def top_k_warp(scores, top_k):
    top_k = min(max(top_k, 1), scores.shape[-1])
    kth = np.sort(scores)[::-1][top_k - 1]
    return np.where(scores < kth, -np.inf, scores)


def top_p_warp(scores, top_p):
    # ascending, equal scores the higher position first: a stable sort of
    # the reversed row
    n = scores.shape[-1]
    sorted_idx = (n - 1) - np.argsort(scores[::-1], kind="stable")
    cumulative = np.cumsum(softmax(scores[sorted_idx]))
    remove_sorted = cumulative <= (1 - top_p)
    remove_sorted[-1] = False
    remove = np.zeros(n, dtype=bool)
    remove[sorted_idx] = remove_sorted
    return np.where(remove, -np.inf, scores)


def probs(logits, temperature, top_k, top_p):
    """The distribution that sampling draws from, as Hugging Face filters it."""
    scores = np.asarray(logits, dtype=np.float64)
    scores = temperature_warp(scores, temperature)
    if top_k:
        scores = top_k_warp(scores, top_k)
    if top_p < 1.0:
        scores = top_p_warp(scores, top_p)
    return softmax(scores)


def pick(p, u):
    """The token that u draws from p by inverse CDF (tec's Pick)."""
    cum, last = 0.0, -1
    for t, x in enumerate(p):
        if x <= 0:
            continue
        cum += float(x)
        last = t
        if u < cum:
            return t
    return last


def main():
    with open(sys.argv[1]) as f:
        data = json.load(f)
    rows = [[-float("inf") if x is None else x for x in r] for r in data["rows"]]
    checked = 0
    for i, c in enumerate(data["cases"]):
        what = f"case {i} (row {c['row']}, temperature {c['temperature']}, top_k {c['top_k']}, top_p {c['top_p']})"
        p = probs(rows[c["row"]], c["temperature"], c["top_k"], c["top_p"])
        diff = np.max(np.abs(p - np.asarray(c["probs"])))
        if not diff <= 1e-6:
            sys.exit(f"{what}: tec's distribution differs by {diff:g}\n  tec:  {c['probs']}\n  here: {p.tolist()}")
        for d in c["draws"]:
            u = uniform(d["seed"], d["seq"], d["k"])
            if u != d["u"]:
                sys.exit(f"{what}: seed {d['seed']}, sequence {d['seq']}, token {d['k']}: tec's uniform {d['u']!r}, here {u!r}")
            tok = pick(p, u)
            if tok != d["token"]:
                sys.exit(f"{what}: seed {d['seed']}, sequence {d['seq']}, token {d['k']}: tec drew {d['token']}, here {tok} (u {u!r})")
            checked += 1
    print(f"{len(data['cases'])} distributions and {checked} draws agree")


if __name__ == "__main__":
    main()
