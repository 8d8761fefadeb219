#!/usr/bin/env python3
"""bench/gpu/report.py DIR: the tables of one bench/gpu/run.sh run.

Reads DIR/results.jsonl (tec's builds: checks, timings, DRAM bytes),
DIR/peers-check.json and DIR/peers-bench.json (bench/gpu/peers.py), and
writes DIR/results.json (all of it, with the speed-ups) and DIR/results.md:

- correctness: every tec build and every peer against tec's reference;
- timings at full size, per model and precision: tec at each level and every
  peer, median, min and max ms, and each tec build's speed-up: the best
  peer's median over its own, the peers measured in the same run.

Prints results.md; exits 1 if a row failed. Only the standard library.
"""

import json
import pathlib
import sys


def load(dir):
    d = pathlib.Path(dir)
    tec = [json.loads(line) for line in (d / "results.jsonl").read_text().splitlines() if line.strip()] \
        if (d / "results.jsonl").exists() else []
    check = json.loads((d / "peers-check.json").read_text()) if (d / "peers-check.json").exists() else []
    bench = json.loads((d / "peers-bench.json").read_text()) if (d / "peers-bench.json").exists() else []
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


def markdown(tec, check, bench):
    lines = ["## Correctness", "", "| what | model | size | build | check |", "|---|---|---|---|---|"]
    for r in tec:
        what = "tec vs PyTorch eager (full)" if r.get("kind") == "full-vs-peer" else "tec vs reference"
        build = r.get("level", "") + ("" if r.get("precision", "f32") == "f32" else "-" + r["precision"])
        lines.append(f"| {what} | {r['model']} | {r['size']} | {build} | {r.get('check', '')} |")
    for r in check:
        lines.append(f"| peer {r['runner']} vs reference | {r['model']} | tiny | {r['precision']} | "
                     f"{r['status']} {r.get('detail', '')} |")
    lines += ["", "## Timings at full size (ms; speed-up: best peer's median / tec's)", "",
              "| model | precision | who | median | min | max | DRAM MB | speed-up |", "|---|---|---|---|---|---|---|---|"]
    timed = [r for r in tec if r.get("size") == "full" and r.get("kind") == "tec"]
    for r in timed:
        sp = f"{r['speedup']:.2f}× (vs {r['best_peer']})" if "speedup" in r else ""
        lines.append(f"| {r['model']} | {r['precision']} | tec {r['level']} | {_ms(r.get('median_ms'))} | "
                     f"{_ms(r.get('min_ms'))} | {_ms(r.get('max_ms'))} | {r.get('dram_mb', '')} | {sp} |")
    for b in bench:
        if b.get("size") != "full":
            continue
        note = "" if b.get("status") == "ok" else f"{b.get('status')}: {b.get('detail', '')}"
        lines.append(f"| {b['model']} | {b['precision']} | {b['runner']} | {_ms(b.get('median_ms'))} | "
                     f"{_ms(b.get('min_ms'))} | {_ms(b.get('max_ms'))} | | {note} |")
    return "\n".join(lines) + "\n"


def failed(tec, check, bench):
    return any(r.get("ok") == "false" for r in tec) \
        or any(r["status"] in ("MISMATCH", "ERROR") for r in check) \
        or any(b.get("status") == "ERROR" for b in bench) \
        or any(r.get("kind") == "full-vs-peer" and r.get("check") != "ok" for r in tec)


def main(argv):
    if len(argv) != 2:
        print("usage: bench/gpu/report.py DIR", file=sys.stderr)
        return 2
    d = pathlib.Path(argv[1])
    tec, check, bench = load(d)
    speedups(tec, bench)
    md = markdown(tec, check, bench)
    (d / "results.md").write_text(md)
    (d / "results.json").write_text(json.dumps({"tec": tec, "peer_checks": check, "peer_timings": bench}, indent=1))
    print(md)
    return 1 if failed(tec, check, bench) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
