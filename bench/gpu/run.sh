#!/usr/bin/env bash
# bench/gpu/run.sh [--compile-only] [--sanitize] [--ncu] [--bench N] [--arch sm_XX] DIR
#
# Runs, on a machine with an NVIDIA GPU, nvcc and Python 3 with NumPy (no Go
# needed), what bench/gpu/prepare.sh put in DIR. For each MODEL/SIZE/OLEVEL
# it compiles the runner (nvcc -O3), then
#   - tiny: runs the model on the saved random feeds and compares every output
#     with the reference evaluator's (|got - want| <= 1e-4 + 1e-3·|want|); with
#     --sanitize, also under compute-sanitizer's memcheck and racecheck;
#   - full: times it with the runner's --bench N (default 20; median of N
#     runs after 3 warm-up runs, CUDA events) and, with --ncu, measures the
#     DRAM bytes it moves (Nsight Compute's dram__bytes_read.sum and
#     dram__bytes_write.sum, summed over kernels).
# It prints one Markdown table row per model and level, and exits 1 if a
# tiny run does not match or a tool fails. --compile-only stops after nvcc
# (for machines without a GPU). --arch defaults to the GPU's own (nvidia-smi).
set -euo pipefail

compile_only= sanitize= ncu= bench=20 arch=
while [ $# -gt 1 ]; do
  case $1 in
    --compile-only) compile_only=1 ;;
    --sanitize) sanitize=1 ;;
    --ncu) ncu=1 ;;
    --bench) bench=$2; shift ;;
    --arch) arch=$2; shift ;;
    *) echo "run.sh: unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
dir=${1:?usage: bench/gpu/run.sh [--compile-only] [--sanitize] [--ncu] [--bench N] [--arch sm_XX] DIR}
dir=$(cd "$dir" && pwd)
if [ -z "$arch" ]; then
  if [ -n "$compile_only" ]; then
    arch=sm_80
  else
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1)
    arch=sm_${cap/./}
  fi
fi

# compare REF.npz GOT_DIR: every output of REF.npz against GOT_DIR/NAME.npy.
compare() {
  python3 - "$1" "$2" <<'PY'
import sys, numpy as np
ref, got = np.load(sys.argv[1]), sys.argv[2]
bad = []
for name in ref.files:
    want = ref[name].astype(np.float64)
    have = np.load(f"{got}/{name}.npy").astype(np.float64)
    if have.shape != want.shape:
        bad.append(f"{name}: shape {have.shape}, want {want.shape}")
        continue
    ok = np.isclose(have, want, rtol=1e-3, atol=1e-4, equal_nan=True)
    if not ok.all():
        i = np.unravel_index(np.argmin(ok), ok.shape)
        bad.append(f"{name}{list(i)}: got {have[i]}, want {want[i]} ({(~ok).sum()} differ)")
print("; ".join(bad) if bad else "ok")
sys.exit(1 if bad else 0)
PY
}

status=0
echo "| model | size | level | check | median ms | DRAM MB |"
echo "|---|---|---|---|---|---|"
for build in "$dir"/*/*/O*; do
  [ -f "$build/main.cu" ] || continue
  level=$(basename "$build"); size=$(basename "$(dirname "$build")"); model=$(basename "$(dirname "$(dirname "$build")")")
  cu=$(ls "$build"/*.cu | grep -v '/main.cu$')
  if ! nvcc -O3 -arch="$arch" -o "$build/run" "$build/main.cu" "$cu" 2> "$build/nvcc.log"; then
    echo "| $model | $size | $level | nvcc failed: $(head -c 300 "$build/nvcc.log" | tr '\n|' '  ') | | |"
    status=1; continue
  fi
  check= ms= mb=
  if [ -n "$compile_only" ]; then
    check=compiled
  elif [ "$size" = tiny ]; then
    feeds="$dir/$model/tiny/feeds"
    mkdir -p "$build/got"
    if "$build/run" --inputs "$feeds" --params "$feeds" --outputs "$build/got" > "$build/run.log" 2>&1; then
      check=$(compare "$dir/$model/tiny/ref.npz" "$build/got") || status=1
    else
      check="run failed: $(tail -c 300 "$build/run.log" | tr '\n|' '  ')"; status=1
    fi
    if [ -n "$sanitize" ]; then
      for tool in memcheck racecheck; do
        if ! compute-sanitizer --tool "$tool" --error-exitcode 1 "$build/run" --inputs "$feeds" --params "$feeds" \
            --outputs "$build/got" > "$build/$tool.log" 2>&1; then
          check="$check; $tool: $(grep -m1 -i error "$build/$tool.log" | tr '|' ' ')"; status=1
        else
          check="$check; $tool clean"
        fi
      done
    fi
  else
    if out=$("$build/run" --fill random --bench "$bench" 2>&1); then
      ms=$(sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' <<< "$out")
      check=ran
    else
      check="run failed: $(tail -c 300 <<< "$out" | tr '\n|' '  ')"; status=1
    fi
    if [ -n "$ncu" ]; then
      mb=$(ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum --csv "$build/run" --fill random 2> /dev/null |
        python3 -c '
import csv, sys
rows = [r for r in csv.reader(sys.stdin) if len(r) > 3]
head = rows[0]; m, u, v = head.index("Metric Name"), head.index("Metric Unit"), head.index("Metric Value")
scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}
print("%.1f" % (sum(float(r[v].replace(",", "")) * scale.get(r[u], 1) for r in rows[1:] if r[m].startswith("dram__bytes")) / 1e6))
') || { mb="ncu failed"; status=1; }
    fi
  fi
  echo "| $model | $size | $level | $check | $ms | $mb |"
done
exit $status
