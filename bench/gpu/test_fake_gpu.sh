#!/usr/bin/env bash
# bench/gpu/test_fake_gpu.sh [DIR]: the GPU machine's path of run.sh --all,
# tried without a GPU. prepare.sh prepares llama-decode with its decode
# builds at the tiny sizes (DECODE_SIZE=tiny, B = 1 and 2 at position 5),
# and run.sh --all runs with stand-ins for the GPU's tools (bench/gpu/fake:
# nvidia-smi naming an H100 SXM, nvcc making a "runner" that gives tec's
# reference outputs on its feeds and a fixed 0.5 ms, ncu, compute-sanitizer,
# and a Python that runs the peers' --device cuda on the CPU). It checks
# that every step ran and agreed (the tiny checks, PyTorch eager's decode
# outputs against the runner's on the same feeds) and that results.json
# has the Llama decode rows with their bytes and bandwidth fractions, also
# after a second part run with --append; tec generate --device cuda is
# skipped, as it is where tec-cuda cannot load; the stage clock's segments
# (the fake runner's, 1 us each, named as the build's .cu names them) all
# find their stages' predictions in the builds' report.json. The builds skip the
# register check (PTXAS=off): no real nvcc compiles them here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-python3}
if [ $# -gt 0 ]; then
  dir=$1
else
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
LEVELS=4 PRECISIONS=f32 DECODE_SIZE=tiny DECODE_BATCHES="1 2" DECODE_POS=5 DECODE_PRECISIONS=f32 \
  PTXAS=off TEC_CUDA=0 PYTHON=$python "$here/prepare.sh" "$dir" llama-decode
FAKE_PYTHON=$python FAKE_TEC=$dir/bin/tec FAKE_SRC=$root/examples/llama.te PATH="$here/fake:$PATH" \
  PYTHON="$here/fake/python" DECODE_RUNNERS=eager "$here/run.sh" --all --bench 3 "$dir" > "$dir/run.log" 2>&1 ||
  { cat "$dir/run.log"; echo "test_fake_gpu.sh: run.sh --all failed" >&2; exit 1; }
# A second part (--append, no builds, the same decode peers: not timed
# again) keeps the first part's rows.
FAKE_PYTHON=$python FAKE_TEC=$dir/bin/tec FAKE_SRC=$root/examples/llama.te PATH="$here/fake:$PATH" \
  PYTHON="$here/fake/python" DECODE_RUNNERS=eager BUILDS=none GENERATE=0 "$here/run.sh" --peers --append "$dir" \
  > "$dir/run2.log" 2>&1 || { cat "$dir/run2.log"; echo "test_fake_gpu.sh: run.sh --append failed" >&2; exit 1; }
if grep -q "peers.py --bench llama-decode" "$dir/run2.log"; then
  echo "test_fake_gpu.sh: run.sh --append timed the decode peers again" >&2; exit 1
fi
"$python" - "$dir" <<'PY'
import json, math, sys
d = sys.argv[1]
out = json.load(open(f"{d}/results.json"))
rows = {(r["batch"], r["who"]): r for r in out["decode"]}
assert out["peak_dram"] == 3.35e12, out["peak_dram"]
assert set(rows) == {(1, "tec O4"), (1, "eager"), (2, "tec O4"), (2, "eager")}, sorted(rows)
for (b, who), r in rows.items():
    assert r["bytes"] > 0 and isinstance(r["median_ms"], float), r
    want = r["bytes"] / (r["median_ms"] * 1e-3) / 3.35e12
    assert math.isclose(r["fraction"], want), (r, want)
assert rows[(1, "tec O4")]["median_ms"] == 0.5 and "speedup" in rows[(1, "tec O4")]
vs = [r for r in out["tec"] if r.get("kind") == "full-vs-peer"]
assert len(vs) == 2 and all(r["check"] == "ok" for r in vs), vs
tiny = [r for r in out["tec"] if r.get("kind") == "tec" and r["size"] == "tiny"]
assert tiny and all(r["check"].startswith("ok; memcheck clean") for r in tiny), tiny
assert any(r.get("kind") == "generate-skipped" for r in out["tec"])
# The stage clock (--all: --stage-clock): every segment of the full-size
# builds' kernels names stages that their report.json predicts.
clocks = out["stage_clock"]
assert len(clocks) == 2, [c["build"] for c in clocks]
for c in clocks:
    segs = c["segments"]
    assert segs and all(s["predicted_us"] is not None for s in segs if s["stages"]), \
        [(s["kernel"], s["stages"]) for s in segs if s["stages"] and s["predicted_us"] is None]
    # The lowering's own stages, which the plan does not price: zeroing
    # the counters, and the idle blocks' L2 prefetches of a later stage's
    # weights (priced in that stage).
    extra = {n for s in segs for n in s["unpredicted"]}
    assert all(n == "counters.zero" or n.startswith("prefetch/") for n in extra), extra
# --all's --calibrate: the fake calibrate's figures, in results.md's tables.
cal = [r for r in out["tec"] if r.get("kind") == "calibrate"]
assert {r["what"] for r in cal} == {"device", "grid_sync", "dram_read", "l2_read"}, cal
md = open(f"{d}/results.md").read()
assert "| grid.sync() | 2 | 1.50 |" in md and "| dram_read | 2 | 8 | 8.65 | 2.70 | 3.20 |" in md, md
print(f"test_fake_gpu.sh: ok ({len(rows)} decode rows, {len(vs)} full-size comparisons with PyTorch)")
PY
