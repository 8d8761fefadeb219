#!/usr/bin/env python3
"""bench/gpu/report.py DIR: the tables of one bench/gpu/run.sh run.

Reads DIR/results.jsonl (tec's builds: checks, timings, DRAM bytes),
DIR/peers-check.json and DIR/peers-bench.json (bench/gpu/peers.py), and
writes DIR/results.json (all of it, with the speed-ups) and DIR/results.md:

- correctness: every tec build and every peer against tec's reference;
- timings at full size, per model and precision: tec at each level and every
  peer, median, min and max ms, and each tec build's speed-up: the best
  peer's median over its own, the peers measured in the same run;
- the Llama decode step (DIR/peers-decode-bB.json, run.sh's llama-decode
  rows): per B and precision, each step's median time, tec's speed-up over
  the best peer, and the fraction of the memory-bandwidth limit reached:
  the bytes a step must move at least (decode_bytes: the weights, the KV
  cache read up to the position, the slots written), over the step's time,
  over the GPU's peak DRAM bandwidth (PEAK_DRAM, by the name nvidia-smi
  gives).

- the stage clock (run.sh --stage-clock): per build, each segment of its
  kernels (what runs between two grid syncs) measured on the GPU beside the
  cost model's prediction of its stages (the build's report.json), the
  longest segments first, and the sums by what the model says bounds them.

Prints results.md; exits 1 if a row failed. Only the standard library.
``report.py --tensors MODEL.h`` prints the tensors a build's C header lists
(role, name, dtype, shape, bytes) as JSON, for run.sh to record.
"""

import json
import math
import pathlib
import re
import sys

# Peak DRAM bandwidth in bytes per second, by a pattern of the name
# nvidia-smi --query-gpu=name gives; the first match counts (NVL and PCIe
# before the SXM part). Sources: NVIDIA's datasheets: H100 Tensor Core GPU
# datasheet (H100 SXM 3.35 TB/s, H100 PCIe 2 TB/s, H100 NVL 3.9 TB/s;
# nvidia.com/en-us/data-center/h100/), H200 Tensor Core GPU product page and
# datasheet (H200 SXM and NVL 4.8 TB/s; nvidia.com/en-us/data-center/h200/),
# A100 Tensor Core GPU datasheet (A100 40GB 1,555 GB/s, A100 80GB PCIe 1,935
# GB/s, A100 80GB SXM 2,039 GB/s; nvidia.com/en-us/data-center/a100/).
PEAK_DRAM = [
    (r"H100.*NVL", 3.9e12, "H100 NVL, H100 datasheet"),
    (r"H100.*PCIe", 2.0e12, "H100 PCIe, H100 datasheet"),
    (r"H100", 3.35e12, "H100 SXM, H100 datasheet"),
    (r"H200", 4.8e12, "H200, H200 datasheet"),
    (r"A100.*80GB.*PCIe|A100.*PCIE.*80GB", 1.935e12, "A100 80GB PCIe, A100 datasheet"),
    (r"A100.*80GB", 2.039e12, "A100 80GB SXM, A100 datasheet"),
    (r"A100", 1.555e12, "A100 40GB, A100 datasheet"),
]

DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "bool": 1}


def peak_dram(name):
    """(bytes per second, source) of the GPU nvidia-smi calls name, or
    (None, why) for a GPU the table does not have."""
    for pattern, bw, src in PEAK_DRAM:
        if re.search(pattern, name or "", re.I):
            return bw, src
    return None, f"no peak bandwidth known for GPU {name!r} (add it to PEAK_DRAM in bench/gpu/report.py)"


def header_tensors(text):
    """The tensors a tec C header lists under Inputs, Params and Outputs:
    dicts of role, name, dtype, shape, bytes and in_place."""
    out, role = [], None
    for line in text.splitlines():
        m = re.match(r"^ \*\s+(Inputs|Params|Outputs):\s*$", line)
        if m:
            role = m.group(1)[:-1].lower()
            continue
        m = re.match(r"^ \*\s+\[\d+\] (\S+) (\w+)\[([\d, ]*)\](.*)$", line)
        if m and role:
            shape = [int(d) for d in m.group(3).split(",") if d.strip()]
            out.append({"role": role, "name": m.group(1), "dtype": m.group(2), "shape": shape,
                        "bytes": math.prod(shape) * DTYPE_BYTES[m.group(2)],
                        "in_place": "updated in place" in m.group(4)})
        elif not line.startswith(" *"):
            role = None
    return out


def decode_bytes(tensors, pos, cache_t):
    """The bytes a decode step moves at least, from its tensors: every param
    read once (weights), every cache (an input updated in place) read at
    positions 0..pos-1 of its axis of extent cache_t, and one slot of it
    written per sequence. Returns (weights, kv_read, slots)."""
    weights = sum(t["bytes"] for t in tensors if t["role"] == "param")
    caches = [t for t in tensors if t["role"] == "input" and t["in_place"]]
    if not caches:
        raise ValueError("no cache: no input is updated in place")
    kv_read = slots = 0
    for t in caches:
        axes = [i for i, d in enumerate(t["shape"]) if d == cache_t]
        if len(axes) != 1:
            raise ValueError(f"{t['name']} {t['shape']}: {len(axes)} axes of extent T = {cache_t}, want one")
        per_position = t["bytes"] // cache_t
        kv_read += per_position * pos
        slots += per_position
    return weights, kv_read, slots


def load(dir):
    d = pathlib.Path(dir)
    tec = [json.loads(line) for line in (d / "results.jsonl").read_text().splitlines() if line.strip()] \
        if (d / "results.jsonl").exists() else []
    check = json.loads((d / "peers-check.json").read_text()) if (d / "peers-check.json").exists() else []
    bench = json.loads((d / "peers-bench.json").read_text()) if (d / "peers-bench.json").exists() else []
    for f in sorted(d.glob("peers-decode-b*.json")):
        bench += json.loads(f.read_text())
    for f in sorted(d.glob("peers-generate*.json")):
        check += json.loads(f.read_text())
    return tec, check, bench


def _ms(v):
    return f"{v:.3f}" if isinstance(v, float) else ""


def speedups(tec, bench):
    """Adds best_peer and speedup to each timed tec row of tec: the fastest
    peer of the same model, size and precision, and its median over tec's."""
    for row in tec:
        if not isinstance(row.get("median_ms"), float):
            continue
        peers = [b for b in bench if b.get("status") == "ok" and b["model"] == row["model"]
                 and b["size"] == row["size"] and b["precision"] == row["precision"]]
        if peers:
            best = min(peers, key=lambda b: b["median_ms"])
            row["best_peer"] = f"{best['runner']} {best['median_ms']:.3f} ms"
            row["speedup"] = best["median_ms"] / row["median_ms"]


def decode_rows(tec, bench):
    """The Llama decode table's rows: tec's timed llama-decode builds and the
    peers' llama-decode timings, each with its batch, precision, median,
    min, max, the step's minimum bytes (from tec's build of the same batch
    and precision), the bandwidth reached and its fraction of the GPU's
    peak (None where unknown), and for tec the speed-up over the best peer."""
    gpus = [r for r in tec if r.get("kind") == "gpu"]
    peak, why = peak_dram(gpus[0]["name"]) if gpus else (None, "no GPU recorded")
    builds = [r for r in tec if r.get("kind") == "tec" and r.get("model") == "llama-decode"
              and "batch" in r and isinstance(r.get("median_ms"), float)]
    need = {}
    for r in builds:
        key = (int(r["batch"]), r["precision"])
        need[key] = sum(decode_bytes(r["tensors_json"], int(r["pos"]), int(r["cache_t"])))
    peers = [b for b in bench if b.get("model") == "llama-decode" and b.get("size") == "full"]
    rows = []
    for r in builds:
        rows.append({"who": f"tec {r['level']}", "batch": int(r["batch"]), "precision": r["precision"],
                     "median_ms": r["median_ms"], "min_ms": r.get("min_ms"), "max_ms": r.get("max_ms"),
                     "dram_mb": r.get("dram_mb", "")})
    for b in peers:
        rows.append({"who": b["runner"], "batch": int(b.get("batch", 1)), "precision": b["precision"],
                     "median_ms": b.get("median_ms") if b.get("status") == "ok" else None,
                     "min_ms": b.get("min_ms"), "max_ms": b.get("max_ms"),
                     "note": "" if b.get("status") == "ok" else f"{b.get('status')}: {b.get('detail', '')}"})
    for row in rows:
        key = (row["batch"], row["precision"])
        row["bytes"] = need.get(key)
        ms = row["median_ms"]
        if row["bytes"] and isinstance(ms, float) and ms > 0:
            row["gbps"] = row["bytes"] / (ms * 1e-3) / 1e9
            row["fraction"] = row["bytes"] / (ms * 1e-3) / peak if peak else None
        if row["who"].startswith("tec") and isinstance(ms, float):
            timed = [p for p in rows if not p["who"].startswith("tec") and (p["batch"], p["precision"]) == key
                     and isinstance(p["median_ms"], float)]
            if timed:
                best = min(timed, key=lambda p: p["median_ms"])
                row["best_peer"], row["speedup"] = best["who"], best["median_ms"] / ms
    rows.sort(key=lambda r: (r["batch"], r["precision"], not r["who"].startswith("tec"), r["who"]))
    return rows, peak, why


def decode_markdown(rows, peak, why):
    """The "Llama decode" section: one row per (B, precision, who)."""
    if not rows:
        return []
    bw = f"peak DRAM bandwidth {peak / 1e12:.3g} TB/s ({why})" if peak else f"fraction n/a: {why}"
    lines = ["", "## Llama decode (Llama-3.2-1B shape, one step; " + bw + ")", "",
             "Minimum bytes: weights + KV cache read up to the position + slots written (from the build's "
             "tensors); fraction: minimum bytes / median time / peak DRAM bandwidth; speed-up: the best "
             "peer's median / tec's, same B and precision, same run.", "",
             "| B | precision | who | median ms | min ms | max ms | min bytes (MB) | DRAM MB (ncu) | GB/s | fraction of peak | speed-up |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        mb = f"{r['bytes'] / 1e6:.1f}" if r.get("bytes") else ""
        gbps = f"{r['gbps']:.0f}" if "gbps" in r else ""
        frac = f"{100 * r['fraction']:.1f} %" if r.get("fraction") is not None else ("n/a" if "gbps" in r else "")
        sp = f"{r['speedup']:.2f}× (vs {r['best_peer']})" if "speedup" in r else r.get("note", "")
        lines.append(f"| {r['batch']} | {r['precision']} | {r['who']} | {_ms(r['median_ms'])} | {_ms(r.get('min_ms'))} | "
                     f"{_ms(r.get('max_ms'))} | {mb} | {r.get('dram_mb', '')} | {gbps} | {frac} | {sp} |")
    return lines


def stage_rows(clock, report):
    """The stage clock's segments (clock: run_clock --stage-clock's JSON)
    beside the predictions of the build's report (report.json): one dict
    per segment with kernel, stages, measured us, passes, predicted us (the
    sum of its stages' predictions; None for the time between kernels and
    where the report lists none of its stages), bound (that of its stage
    predicted longest), and unpredicted: its stages the report does not
    list (the lowering's own, such as zeroing the per-tile counters, or the
    idle blocks' L2 prefetches of a later stage's weights, which that
    stage's prediction counts)."""
    by_kernel = {k["name"]: {s["stage"]: s for s in k.get("stages", [])} for k in report.get("kernels", [])}
    rows = []
    for seg in clock["segments"]:
        names = [n for n in seg["stages"].split(",") if n]
        preds = [by_kernel.get(seg["kernel"], {}).get(n) for n in names]
        row = {"kernel": seg["kernel"], "stages": names, "us": seg["us"], "passes": seg["passes"],
               "predicted_us": None, "bound": "launch" if not names else "unknown",
               "unpredicted": [n for n, p in zip(names, preds) if not p]}
        known = [p for p in preds if p]
        if known:
            row["predicted_us"] = sum(p["predicted_us"] for p in known)
            row["bound"] = max(known, key=lambda p: p["predicted_us"])["bound"]
        rows.append(row)
    return rows


def stage_markdown(title, clock, rows, top=15):
    """A build's stage clock section: the longest segments, and the sums by
    bound."""
    predicted = sum(r["predicted_us"] or 0 for r in rows)
    lines = ["", f"### {title}: {clock['total_us'] / 1e3:.3f} ms measured in {len(rows)} segments "
             f"(median of {clock['runs']} runs); the stages' predictions add up to {predicted / 1e3:.3f} ms", "",
             "| segment | kernel | stages | measured us | predicted us | measured / predicted | bound (predicted) |",
             "|---|---|---|---|---|---|---|"]
    order = sorted(range(len(rows)), key=lambda i: -rows[i]["us"])
    for i in order[:top]:
        r = rows[i]
        names = ", ".join(r["stages"][:4]) + (f" and {len(r['stages']) - 4} more" if len(r["stages"]) > 4 else "")
        pred = r["predicted_us"]
        ratio = f"{r['us'] / pred:.2f}" if pred else ""
        passes = f" ({r['passes']} passes)" if r["passes"] > 1 else ""
        lines.append(f"| {i} | {r['kernel']} | {names or '(launch)'}{passes} | {r['us']:.2f} | "
                     f"{'' if pred is None else f'{pred:.2f}'} | {ratio} | {r['bound']} |")
    sums = {}
    for r in rows:
        m, p, n = sums.get(r["bound"], (0.0, 0.0, 0))
        sums[r["bound"]] = (m + r["us"], p + (r["predicted_us"] or 0), n + 1)
    lines += ["", "| bound (predicted) | segments | measured us | predicted us | measured / predicted |",
              "|---|---|---|---|---|"]
    for bound, (m, p, n) in sorted(sums.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {bound} | {n} | {m:.1f} | {p:.1f} | {f'{m / p:.2f}' if p else ''} |")
    return lines


def clock_sections(d, tec):
    """The stage clock sections of the builds run.sh timed with it, and
    their rows (for results.json)."""
    lines, out = [], []
    for r in tec:
        if r.get("kind") != "stage-clock" or "clock" not in r:
            continue
        clock = json.loads((d / r["clock"]).read_text())
        report = json.loads((d / r["report"]).read_text()) if (d / r["report"]).exists() else {}
        rows = stage_rows(clock, report)
        size = r.get("size", "") + (f" B={r['batch']}" if r.get("batch") else "")
        title = f"{r['model']} {size} {r['level']}-{r['precision']}"
        lines += stage_markdown(title, clock, rows)
        out.append({"build": title, "total_us": clock["total_us"], "segments": rows})
    if lines:
        lines = ["", "## Stage clock (measured per segment; predicted: the cost model's stages)"] + lines
    return lines, out


def calibrate_markdown(tec):
    """The tables of bench/gpu/calibrate.cu's figures, if it ran: one grid
    sync by blocks per SM, and each read rate with the round trip that
    Little's law gives (bytes in flight over the rate)."""
    rows = [r for r in tec if r.get("kind") == "calibrate" and r.get("what") != "failed"]
    if not rows:
        return []
    lines = ["", "## Calibration (bench/gpu/calibrate.cu)", ""]
    for r in rows:
        if r["what"] == "device":
            lines += [f"{r['name']}, {r['sms']} SMs, L2 {r['l2_bytes'] / 2**20:.0f} MiB.", ""]
    syncs = [r for r in rows if r["what"] == "grid_sync"]
    if syncs:
        lines += ["| grid sync | blocks per SM (256 threads) | µs |", "|---|---|---|"]
        lines += [f"| grid.sync() | {r['blocks_per_sm']} | {r['us']:.2f} |" for r in syncs]
        lines.append("")
    reads = [r for r in rows if r["what"] in ("dram_read", "l2_read")]
    if reads:
        lines += ["| read | blocks per SM | 16-byte loads in flight a thread | MB in flight | TB/s | round trip µs |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {r['what']} | {r['blocks_per_sm']} | {r['loads_in_flight']} | {r['bytes_in_flight'] / 1e6:.2f} | "
                  f"{r['tbps']:.2f} | {r['latency_us']:.2f} |" for r in reads]
    return lines


def markdown(tec, check, bench, clocks=()):
    lines = ["## Correctness", "", "| what | model | size | build | check |", "|---|---|---|---|---|"]
    for r in tec:
        if r.get("kind") == "gpu" or (r.get("kind") == "calibrate" and r.get("what") != "failed"):
            continue
        what = {"full-vs-peer": "tec vs PyTorch eager (full)", "stage-clock": "tec's stage clock (full)",
                "generate-skipped": "tec generate --device cuda", "calibrate": "bench/gpu/calibrate.cu"}.get(r.get("kind"), "tec vs reference")
        build = r.get("level", "") + ("" if r.get("precision", "f32") == "f32" else "-" + r["precision"])
        size = r.get("size", "") + (f" B={r['batch']}" if r.get("batch") else "")
        lines.append(f"| {what} | {r.get('model', '')} | {size} | {build} | {r.get('check', '')} |")
    for r in check:
        lines.append(f"| peer {r['runner']} vs reference | {r['model']} | tiny | {r['precision']} | "
                     f"{r['status']} {r.get('detail', '')} |")
    lines += ["", "## Timings at full size (ms; speed-up: best peer's median / tec's)", "",
              "| model | precision | who | median | min | max | DRAM MB | speed-up |", "|---|---|---|---|---|---|---|---|"]
    timed = [r for r in tec if r.get("size") == "full" and r.get("kind") == "tec" and r.get("model") != "llama-decode"]
    for r in timed:
        sp = f"{r['speedup']:.2f}× (vs {r['best_peer']})" if "speedup" in r else ""
        lines.append(f"| {r['model']} | {r['precision']} | tec {r['level']} | {_ms(r.get('median_ms'))} | "
                     f"{_ms(r.get('min_ms'))} | {_ms(r.get('max_ms'))} | {r.get('dram_mb', '')} | {sp} |")
    for b in bench:
        if b.get("size") != "full" or b.get("model") == "llama-decode":
            continue
        note = "" if b.get("status") == "ok" else f"{b.get('status')}: {b.get('detail', '')}"
        lines.append(f"| {b['model']} | {b['precision']} | {b['runner']} | {_ms(b.get('median_ms'))} | "
                     f"{_ms(b.get('min_ms'))} | {_ms(b.get('max_ms'))} | | {note} |")
    lines += decode_markdown(*decode_rows(tec, bench))
    lines += list(clocks)
    lines += calibrate_markdown(tec)
    return "\n".join(lines) + "\n"


def failed(tec, check, bench):
    return any(r.get("ok") == "false" for r in tec) \
        or any(r["status"] in ("MISMATCH", "ERROR") for r in check) \
        or any(b.get("status") == "ERROR" for b in bench) \
        or any(r.get("kind") == "full-vs-peer" and r.get("check") != "ok" for r in tec)


def main(argv):
    if len(argv) == 3 and argv[1] == "--tensors":
        print(json.dumps(header_tensors(pathlib.Path(argv[2]).read_text())))
        return 0
    if len(argv) != 2:
        print("usage: bench/gpu/report.py DIR", file=sys.stderr)
        return 2
    d = pathlib.Path(argv[1])
    tec, check, bench = load(d)
    speedups(tec, bench)
    clock_lines, clocks = clock_sections(d, tec)
    md = markdown(tec, check, bench, clock_lines)
    (d / "results.md").write_text(md)
    decode, peak, why = decode_rows(tec, bench)
    (d / "results.json").write_text(json.dumps({"tec": tec, "peer_checks": check, "peer_timings": bench,
                                                "decode": decode, "peak_dram": peak, "peak_dram_source": why,
                                                "stage_clock": clocks},
                                               indent=1))
    print(md)
    return 1 if failed(tec, check, bench) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
