#!/usr/bin/env bash
# bench/gpu/run.sh [--compile-only] [--all] [--sanitize] [--ncu] [--stage-clock] [--calibrate] [--peers] [--bench N] [--arch sm_XX] [--append] DIR
#
# Runs, on a machine with an NVIDIA GPU, nvcc and Python 3 with NumPy (no Go
# needed), what bench/gpu/prepare.sh put in DIR. For each MODEL/SIZE/BUILD
# (BUILD: OLEVEL or OLEVEL-PRECISION) it compiles the runner (nvcc -O3), then
#   - tiny: runs the model on the saved feeds and compares every output with
#     the reference evaluator's at the build's precision (f32:
#     |got - want| <= 1e-4 + 1e-3·|want|; f16, bf16: 1e-3 + 1e-2·|want|); with
#     --sanitize, also under compute-sanitizer's memcheck and racecheck;
#   - full: times it with the runner's --bench N (default 20; median, min and
#     max of N runs after 3 warm-up runs, CUDA events), on the peers' feeds
#     (peers.py --make-feeds, made here once per model) for the six models
#     with a peer, and, with --ncu, measures the DRAM bytes it moves (Nsight
#     Compute's dram__bytes_read.sum and dram__bytes_write.sum, over kernels)
#     and, with --stage-clock, times each segment between its kernels' grid
#     syncs with a second runner built with -DTEC_STAGE_CLOCK (run_clock;
#     docs/gpu.md, "The stage clock") into BUILD/stage_clock.json, which
#     report.py sets beside the predictions of BUILD/report.json.
# With --calibrate it compiles and runs bench/gpu/calibrate.cu, which
# measures what the cost model's GPU description takes and no datasheet
# gives (one grid sync; DRAM and L2 read rates and round trips by loads in
# flight), into results.jsonl and results.md's "Calibration" tables
# (--compile-only compiles it).
# With --peers it then checks every peer (bench/gpu/peers.py: PyTorch eager,
# torch.compile, max-autotune, CUDA graphs, JAX) against the tiny references
# and times each at full size on the same feeds, and compares tec's full-size
# f32 outputs with PyTorch eager's. Every result is a JSON line of
# DIR/results.jsonl; bench/gpu/report.py turns them into DIR/results.md (the
# tables, speed-ups as ratios to the best peer of the same run) and
# DIR/results.json. It exits 1 if a check does not match or a tool fails.
# --compile-only stops after nvcc (for machines without a GPU) and checks the
# peers on the CPU against DIR's tiny references; it skips nvcc on the
# full-size decode steps (a minute each on a 2-core machine) unless
# COMPILE_FULL=1. --arch defaults to the GPU's own (nvidia-smi).
#
# The Llama decode step (DIR/llama-decode, prepare.sh llama-decode): each
# full-bB build is timed as the others are, on feeds with every sequence at
# bench.env's POS (peers.py --make-feeds -D B -D T --pos), and with --peers
# PyTorch times the same step on the same feeds (eager, a CUDA graph of
# eager, torch.compile max-autotune: $DECODE_RUNNERS), compares its f32
# outputs with tec's, and, where DIR/bin has tec and a tec-cuda that loads
# here, runs tec generate --device cuda on the tiny (B = 1, 4) and the
# full-size Llama (B = 1, 16 steps, f32) against PyTorch's greedy tokens.
# report.py's "Llama decode" table gives each step's time, the speed-up over
# the best peer and the fraction of the GPU's DRAM bandwidth reached.
#
# REUSE_RUNNERS=1 skips nvcc for a build whose runner is newer than its
# sources (compiled ahead, e.g. all builds at once with xargs -P).
#
# To fit a time limit, a run can be split: BUILDS (a glob under DIR, default
# "*/*/O*") picks the builds, DECODE_RUNNERS the decode peers (one file per
# B and set of runners, not run again if present), GENERATE=0 skips tec
# generate, and --append adds to DIR/results.jsonl instead of starting it
# afresh; report.py reads all of it.
#
# The one command on a GPU machine is
#   bench/gpu/run.sh --all DIR      (--sanitize --ncu --stage-clock --calibrate --peers)
set -euo pipefail

compile_only= sanitize= ncu= peers= bench=20 arch= append= stage_clock= calibrate=
while [ $# -gt 1 ]; do
  case $1 in
    --compile-only) compile_only=1 ;;
    --sanitize) sanitize=1 ;;
    --ncu) ncu=1 ;;
    --stage-clock) stage_clock=1 ;;
    --calibrate) calibrate=1 ;;
    --peers) peers=1 ;;
    --all) sanitize=1 ncu=1 peers=1 stage_clock=1 calibrate=1 ;;
    --bench) bench=$2; shift ;;
    --arch) arch=$2; shift ;;
    --append) append=1 ;;
    *) echo "run.sh: unknown flag $1" >&2; exit 2 ;;
  esac
  shift
done
dir=${1:?usage: bench/gpu/run.sh [--compile-only] [--sanitize] [--ncu] [--stage-clock] [--calibrate] [--peers] [--bench N] [--arch sm_XX] DIR}
dir=$(cd "$dir" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
peer_models=" bert resnext lstm efficientnet swin mmoe llama llama-decode "
decode_runners=${DECODE_RUNNERS:-eager,cudagraph,compile-max}
results="$dir/results.jsonl"
[ -n "$append" ] || : > "$results"
if [ -z "$arch" ]; then
  if [ -n "$compile_only" ]; then
    arch=sm_80
  else
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1)
    arch=sm_${cap/./}
  fi
fi

# compare REF.npz GOT_DIR [RTOL ATOL]: every output of REF.npz against
# GOT_DIR/NAME.npy.
compare() {
  "$python" - "$1" "$2" "${3:-1e-3}" "${4:-1e-4}" <<'PY'
import sys, numpy as np
ref, got = np.load(sys.argv[1]), sys.argv[2]
rtol, atol = float(sys.argv[3]), float(sys.argv[4])
bad = []
for name in ref.files:
    want = ref[name].astype(np.float64)
    have = np.load(f"{got}/{name}.npy").astype(np.float64)
    if have.shape != want.shape:
        bad.append(f"{name}: shape {have.shape}, want {want.shape}")
        continue
    ok = np.isclose(have, want, rtol=rtol, atol=atol, equal_nan=True)
    if not ok.all():
        i = np.unravel_index(np.argmin(ok), ok.shape)
        bad.append(f"{name}{list(i)}: got {have[i]}, want {want[i]} ({(~ok).sum()} differ)")
print("; ".join(bad) if bad else "ok")
sys.exit(1 if bad else 0)
PY
}

# record KEY=VALUE...: appends one JSON object to results.jsonl.
record() {
  "$python" -c '
import json, sys
row = {}
for kv in sys.argv[2:]:
    k, v = kv.split("=", 1)
    try:
        row[k] = float(v) if k.endswith(("_ms", "_mb")) else json.loads(v) if k.endswith("_json") else v
    except ValueError:
        row[k] = v
print(json.dumps(row))' x "$@" >> "$results"
}

status=0
if [ -z "$compile_only" ]; then
  record kind=gpu name="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)" arch="$arch" \
    driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)"
fi
echo "| model | size | build | check | median ms | min ms | max ms | DRAM MB |"
echo "|---|---|---|---|---|---|---|---|"
for build in "$dir"/${BUILDS:-*/*/O*}; do
  [ -f "$build/main.cu" ] || continue
  name=$(basename "$build"); size=$(basename "$(dirname "$build")"); model=$(basename "$(dirname "$(dirname "$build")")")
  level=${name%%-*}; precision=f32
  [[ "$name" == *-* ]] && precision=${name#*-}
  cu=$(ls "$build"/*.cu | grep -v '/main.cu$')
  # A decode step's build: B sequences at position POS of caches of T.
  B= T= POS= DEFINES= extra=()
  if [ -f "$build/bench.env" ]; then
    . "$build/bench.env"
    extra=(batch="$B" pos="$POS" cache_t="$T" tensors_json="$("$python" "$here/report.py" --tensors "$(ls "$build"/*.h)")")
    size=full
    if [ -n "$compile_only" ] && [ -z "${COMPILE_FULL:-}" ]; then
      echo "| $model | full B=$B | $name | skipped (compile-only; COMPILE_FULL=1 compiles it) | | | | |"
      continue
    fi
  fi
  # REUSE_RUNNERS=1 keeps a runner compiled after its sources (one
  # compiled ahead, in parallel with others, on a machine with many cores).
  if [ -n "${REUSE_RUNNERS:-}" ] && [ "$build/run" -nt "$cu" ] && [ "$build/run" -nt "$build/main.cu" ]; then
    :
  elif ! nvcc -O3 -arch="$arch" -o "$build/run" "$build/main.cu" "$cu" 2> "$build/nvcc.log"; then
    check="nvcc failed: $(head -c 300 "$build/nvcc.log" | tr '\n|' '  ')"
    echo "| $model | $size | $name | $check | | | | |"
    record kind=tec model="$model" size="$size" level="$level" precision="$precision" check="$check" ok=false
    status=1; continue
  fi
  # The stage clock's runner (full size only).
  clocked=
  if [ -n "$stage_clock" ] && [ "$size" != tiny ]; then
    if [ -n "${REUSE_RUNNERS:-}" ] && [ "$build/run_clock" -nt "$cu" ] && [ "$build/run_clock" -nt "$build/main.cu" ]; then
      clocked=1
    elif nvcc -O3 -arch="$arch" -DTEC_STAGE_CLOCK -o "$build/run_clock" "$build/main.cu" "$cu" 2> "$build/nvcc-clock.log"; then
      clocked=1
    else
      check="nvcc -DTEC_STAGE_CLOCK failed: $(head -c 300 "$build/nvcc-clock.log" | tr '\n|' '  ')"
      record kind=stage-clock model="$model" size="$size" level="$level" precision="$precision" check="$check" ok=false
      status=1
    fi
  fi
  check= ms= lo= hi= mb= ok=true
  if [ -n "$compile_only" ]; then
    check=compiled
  elif [ "$size" = tiny ]; then
    feeds="$dir/$model/tiny/feeds"
    ref="$dir/$model/tiny/ref.npz" tol=(1e-3 1e-4)
    [ "$precision" = f32 ] || { ref="$dir/$model/tiny/ref-$precision.npz"; tol=(1e-2 1e-3); }
    rm -rf "$build/got"; mkdir -p "$build/got"
    if "$build/run" --inputs "$feeds" --params "$feeds" --outputs "$build/got" > "$build/run.log" 2>&1; then
      check=$(compare "$ref" "$build/got" "${tol[@]}") || { status=1; ok=false; }
    else
      check="run failed: $(tail -c 300 "$build/run.log" | tr '\n|' '  ')"; status=1; ok=false
    fi
    if [ -n "$sanitize" ]; then
      for tool in memcheck racecheck; do
        if ! compute-sanitizer --tool "$tool" --error-exitcode 1 "$build/run" --inputs "$feeds" --params "$feeds" \
            --outputs "$build/got" > "$build/$tool.log" 2>&1; then
          check="$check; $tool: $(grep -m1 -i error "$build/$tool.log" | tr '|' ' ')"; status=1; ok=false
        else
          check="$check; $tool clean"
        fi
      done
    fi
  else
    feedargs=(--fill random)
    if [ -n "$B" ]; then
      feeds="$dir/full-feeds/b$B/$model" b1="$dir/full-feeds/b1/$model"
      from=()
      [ "$B" != 1 ] && [ -d "$b1" ] && from=(--params-from "$b1")
      # shellcheck disable=SC2086 # DEFINES: -D NAME=VALUE words
      [ -d "$feeds" ] || "$python" "$here/peers.py" --make-feeds "$feeds" --model "$model" --size full --seed 1 \
        $DEFINES -D B="$B" -D T="$T" --pos "$POS" "${from[@]}"
      feedargs=(--inputs "$feeds" --params "$feeds" --outputs "$build/got")
      rm -rf "$build/got"; mkdir -p "$build/got"
    elif [[ "$peer_models" == *" $model "* ]]; then
      feeds="$dir/full-feeds/$model"
      [ -d "$feeds" ] || "$python" "$here/peers.py" --make-feeds "$feeds" --model "$model" --size full --seed 1
      feedargs=(--inputs "$feeds" --params "$feeds" --outputs "$build/got")
      rm -rf "$build/got"; mkdir -p "$build/got"
    fi
    if out=$("$build/run" "${feedargs[@]}" --bench "$bench" 2>&1); then
      read -r ms lo hi < <(sed -n 's/.*median \([0-9.]*\) ms, min \([0-9.]*\) ms, max \([0-9.]*\) ms.*/\1 \2 \3/p' <<< "$out")
      check=ran
    else
      check="run failed: $(tail -c 300 <<< "$out" | tr '\n|' '  ')"; status=1; ok=false
    fi
    if [ -n "$ncu" ]; then
      mb=$(ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum --csv "$build/run" "${feedargs[@]}" 2> /dev/null |
        "$python" -c '
import csv, sys
rows = [r for r in csv.reader(sys.stdin) if len(r) > 3]
head = rows[0]; m, u, v = head.index("Metric Name"), head.index("Metric Unit"), head.index("Metric Value")
scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}
print("%.1f" % (sum(float(r[v].replace(",", "")) * scale.get(r[u], 1) for r in rows[1:] if r[m].startswith("dram__bytes")) / 1e6))
') || { mb="ncu failed"; status=1; ok=false; }
    fi
    if [ -n "$clocked" ]; then
      rel=${build#"$dir"/}
      if "$build/run_clock" "${feedargs[@]}" --bench 5 --stage-clock "$build/stage_clock.json" > "$build/clock.log" 2>&1; then
        record kind=stage-clock model="$model" size="$size" level="$level" precision="$precision" batch="$B" \
          clock="$rel/stage_clock.json" report="$rel/report.json" check=ran ok=true
      else
        record kind=stage-clock model="$model" size="$size" level="$level" precision="$precision" \
          check="run_clock failed: $(tail -c 300 "$build/clock.log" | tr '\n|' '  ')" ok=false
        status=1
      fi
    fi
  fi
  echo "| $model | $size${B:+ B=$B} | $name | $check | $ms | $lo | $hi | $mb |"
  record kind=tec runner=runner model="$model" size="$size" level="$level" precision="$precision" check="$check" \
    ok="$ok" median_ms="$ms" min_ms="$lo" max_ms="$hi" dram_mb="$mb" "${extra[@]}"
done

# The GPU's own figures (bench/gpu/calibrate.cu), each a JSON line.
if [ -n "$calibrate" ] || [ -n "$compile_only" ]; then
  echo "== calibrate.cu"
  if ! nvcc -O3 -arch="$arch" -o "$dir/calibrate" "$here/calibrate.cu" 2> "$dir/calibrate-nvcc.log"; then
    record kind=calibrate what=failed check="nvcc failed: $(head -c 300 "$dir/calibrate-nvcc.log" | tr '\n|' '  ')" ok=false
    status=1
  elif [ -n "$calibrate" ] && [ -z "$compile_only" ]; then
    if "$dir/calibrate" > "$dir/calibrate.jsonl" 2> "$dir/calibrate.log"; then
      cat "$dir/calibrate.jsonl" >> "$results"
    else
      record kind=calibrate what=failed check="calibrate failed: $(tail -c 300 "$dir/calibrate.log" | tr '\n|' '  ')" ok=false
      status=1
    fi
  fi
fi

# The peers: checked against the tiny references, then timed at full size.
present=()
for m in $peer_models; do [ -f "$dir/$m/tiny/ref.npz" ] && present+=(--model "$m"); done
if [ ${#present[@]} -gt 0 ] && { [ -n "$compile_only" ] || [ -n "$peers" ]; }; then
  device=cuda
  [ -n "$compile_only" ] && device=cpu
  echo "== peers.py --check --device $device --prepared $dir"
  "$python" "$here/peers.py" --check --device "$device" --prepared "$dir" "${present[@]}" \
    --json "$dir/peers-check.json" || status=1
  if [ -z "$compile_only" ]; then
    echo "== peers.py --bench --device cuda --size full"
    others=()
    for m in $peer_models; do
      [ "$m" != llama-decode ] && [ -f "$dir/$m/tiny/ref.npz" ] && others+=(--model "$m")
    done
    if [ ${#others[@]} -gt 0 ]; then
      "$python" "$here/peers.py" --bench --device cuda --size full --feeds "$dir/full-feeds" "${others[@]}" \
        --iters "$bench" --outputs "$dir/peer-outputs" --json "$dir/peers-bench.json" > /dev/null || status=1
    fi
    # The decode step: the same step as each full-bB build, on its feeds.
    for env in "$dir"/llama-decode/full-b*/O*/bench.env; do
      [ -f "$env" ] || continue
      B= T= POS= DEFINES=
      . "$env"
      out_json="$dir/peers-decode-b$B-${decode_runners//,/-}.json"
      [ -f "$out_json" ] && continue
      precs=$(ls -d "$dir/llama-decode/full-b$B"/O* | sed -n 's/.*O[0-9]-\(.*\)/\1/p; s/.*O[0-9]$/f32/p' | sort -u | paste -sd,)
      echo "== peers.py --bench llama-decode B=$B T=$T pos=$POS ($precs; $decode_runners)"
      # shellcheck disable=SC2086
      "$python" "$here/peers.py" --bench --device cuda --size full --model llama-decode $DEFINES -D B="$B" -D T="$T" \
        --pos "$POS" --feeds "$dir/full-feeds/b$B" --runner "$decode_runners" --precision "$precs" \
        --iters "$bench" --outputs "$dir/peer-outputs/b$B" --json "$out_json" > /dev/null || status=1
      for got in "$dir/llama-decode/full-b$B"/O[0-9]/got; do
        [ -f "$dir/peer-outputs/b$B/llama-decode.npz" ] || continue
        level=$(basename "$(dirname "$got")")
        check=$(compare "$dir/peer-outputs/b$B/llama-decode.npz" "$got" 1e-2 1e-3) || status=1
        echo "full llama-decode B=$B $level against PyTorch eager: $check"
        record kind=full-vs-peer model=llama-decode size="full B=$B" level="$level" precision=f32 check="$check"
      done
    done
    # tec generate --device cuda against PyTorch's greedy tokens.
    if [ -d "$dir/llama-decode" ] && [ -x "$dir/bin/tec" ] && [ "${GENERATE:-1}" != 0 ]; then
      if [ -x "$dir/bin/tec-cuda" ] && ldd "$dir/bin/tec-cuda" > /dev/null 2>&1 && ! ldd "$dir/bin/tec-cuda" | grep -q 'not found'; then
        target=sm_80
        [[ "$arch" == sm_9* ]] && target=sm_90
        flags="--codegen cu --target $target"
        echo "== peers.py --generate-check: tec generate --device cuda ($flags) against PyTorch"
        TEC="$dir/bin/tec" "$python" "$here/peers.py" --generate-check --device cuda --tec-devices cuda \
          --tec-flags "$flags" --precision f32 --batch 1,4 --json "$dir/peers-generate.json" || status=1
        TEC="$dir/bin/tec" "$python" "$here/peers.py" --generate-check --device cuda --tec-devices cuda \
          --tec-flags "$flags" --precision f32 --size full -D T=160 --batch 1 --steps 16 \
          --json "$dir/peers-generate-full.json" || status=1
      else
        echo "== no tec generate --device cuda: $dir/bin/tec-cuda is missing or does not load here ($(ldd "$dir/bin/tec-cuda" 2>&1 | grep -m1 'not found\|GLIBC' || echo missing))"
        record kind=generate-skipped model=llama-decode check="tec-cuda missing or does not load"
      fi
    fi
    # tec's full-size f32 outputs against PyTorch eager's on the same feeds
    for got in "$dir"/*/full/O[0-9]/got; do
      m=$(basename "$(dirname "$(dirname "$(dirname "$got")")")")
      [ -f "$dir/peer-outputs/$m.npz" ] || continue
      level=$(basename "$(dirname "$got")")
      check=$(compare "$dir/peer-outputs/$m.npz" "$got" 1e-2 1e-3) || status=1
      echo "full $m $level against PyTorch eager: $check"
      record kind=full-vs-peer model="$m" size=full level="$level" precision=f32 check="$check"
    done
  fi
fi
"$python" "$here/report.py" "$dir" || status=1
exit $status
