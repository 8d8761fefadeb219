#!/usr/bin/env bash
# bench/gpu/prepare.sh OUT [MODEL...]
#
# Prepares, on a machine with Go, what bench/gpu/run.sh needs on a machine
# with a GPU (which needs no Go): for each example (all of examples/*.te by
# default), at its tiny configuration (the "# tiny:" line of its header)
# and at full size, at each level of $LEVELS (default "0 1 2 3 4") and each
# precision of $PRECISIONS (default "f32 f16 bf16"), the CUDA C++, C interface
# and runner (tec build --emit cu,host --precision P) in
# OUT/MODEL/SIZE/OLEVEL (f32) or OUT/MODEL/SIZE/OLEVEL-P, the full-size
# builds with tec build's --report (report.json: the cost model's
# predictions per stage, set beside run.sh --stage-clock's measurements);
# and for the tiny
# configuration, random inputs and params in OUT/MODEL/tiny/feeds/NAME.npy
# with the reference evaluator's outputs on exactly those float32 arrays:
# OUT/MODEL/tiny/ref.npz (f32) and ref-P.npz (tec run --precision P, the
# same rounding points as the build). The feeds of the six models with a
# peer (bench/gpu/peers.py) are the peers' own (peers.py --make-feeds); the
# others' are tec run --fill random --seed 1's. Full-size feeds are made on
# the GPU machine (run.sh), being too large to carry. Copy OUT to the GPU
# machine with the repository's bench/gpu/, and run bench/gpu/run.sh there.
# A file with several models gives one MODEL per model: FILE for its first
# (llama: the prefill), FILE-NAME for each other (llama-decode: model decode),
# as bench/gpu/peers.py names them.
#
# llama-decode's full size is the timed decode step instead: B sequences
# ($DECODE_BATCHES, default "1 8") each at position $DECODE_POS (default 128,
# so the step attends over 129 positions) of caches of $DECODE_T positions
# (default DECODE_POS + 1, all the step needs), at the levels of
# $DECODE_LEVELS (default 4) and precisions of $DECODE_PRECISIONS (default
# "f32 bf16"), planned for $DECODE_GPU (default h100: H200's SMs are
# H100's) and compiled for $DECODE_TARGET (default sm_90; an A100 wants
# DECODE_GPU=a100 DECODE_TARGET=sm_80), in OUT/llama-decode/full-bB/OLEVEL[-P],
# with tec build's --report (report.json) and a bench.env (B, T, POS and the
# DEFINES that DECODE_SIZE=tiny gives: the tiny sizes but for B and T)
# (B=, T=, POS=) for run.sh. With it, OUT/bin gets tec (CGO_ENABLED=0, runs
# anywhere) and, where cgo and the CUDA driver's cuda.h are here, tec-cuda
# (it needs glibc 2.34 and the GPU machine's libcuda.so.1), for run.sh's
# tec generate --device cuda against PyTorch's greedy tokens.
#
# $TEC, if set, is a tec binary built from this tree to use instead of
# building one (CI builds it once for all its steps); TEC_CUDA=0 skips
# OUT/bin/tec-cuda (test_fake_gpu.sh, which cannot load it). $PTXAS (default
# auto) is the builds' --ptxas, the register check that compiles the kernels
# of -O3 and -O4 builds once with nvcc where it is installed, and
# $FULL_PTXAS (default $PTXAS) the full-size builds': off where no nvcc
# compiles a build (CI's compile-only run, test_fake_gpu.sh's stand-ins),
# whose check would take minutes of nvcc for the decode steps alone.
# $GPU and $TARGET (default: tec build's, a100 and sm_80) plan and target
# the other full-size builds for the GPU that will run them (GPU=h200
# TARGET=sm_90 on an H200), so that their report.json predicts what
# run.sh --stage-clock measures there.
set -euo pipefail

out=${1:?usage: bench/gpu/prepare.sh OUT [MODEL...]}
shift
levels=${LEVELS:-0 1 2 3 4}
precisions=${PRECISIONS:-f32 f16 bf16}
ptxas=${PTXAS:-auto}
full_ptxas=${FULL_PTXAS:-$ptxas}
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-python3}
mkdir -p "$out"
if [ -n "${TEC:-}" ]; then
  tec=$TEC
else
  tec="$out/.tec"
  (cd "$root" && go build -o "$tec" ./cmd/tec)
fi
peer_models=" bert resnext lstm efficientnet swin mmoe llama llama-decode "
decode_pos=${DECODE_POS:-128}
decode_t=${DECODE_T:-$((decode_pos + 1))}
decode_batches=${DECODE_BATCHES:-1 8}
decode_levels=${DECODE_LEVELS:-4}
decode_precisions=${DECODE_PRECISIONS:-f32 bf16}
gpu=()
[ -n "${GPU:-}" ] && gpu+=(--gpu "$GPU")
[ -n "${TARGET:-}" ] && gpu+=(--target "$TARGET")

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  for f in "$root"/examples/*.te; do
    base=$(basename "$f" .te)
    models+=("$base")
    for e in $(sed -n 's/^model \([A-Za-z0-9_]*\).*/\1/p' "$f" | tail -n +2); do models+=("$base-$e"); done
  done
fi

# npz DIR NAME...: packs DIR/NAME.npy for each NAME given into an .npz on
# standard output's path argument; used to hand the saved feeds back to tec.
pack() {
  "$python" - "$@" <<'PY'
import sys, numpy as np
out, src, names = sys.argv[1], sys.argv[2], sys.argv[3:]
np.savez(out, **{n: np.load(f"{src}/{n}.npy") for n in names})
PY
}

for m in "${models[@]}"; do
  src="$root/examples/$m.te" entry=()
  if [ ! -f "$src" ] && [[ "$m" == *-* ]] && [ -f "$root/examples/${m%%-*}.te" ]; then
    src="$root/examples/${m%%-*}.te" entry=(--model "${m#*-}")
    grep -q "^model ${m#*-} " "$src" || { echo "prepare.sh: $src has no model ${m#*-}" >&2; exit 2; }
  fi
  [ -f "$src" ] || { echo "prepare.sh: no example $m ($src)" >&2; exit 2; }
  read -r -a tiny <<< "$(sed -n 's/^# tiny://p' "$src" | head -n 1)"
  # The first model, when the file has several.
  if [ ${#entry[@]} -eq 0 ] && [ "$(grep -c '^model ' "$src")" -gt 1 ]; then
    entry=(--model "$(sed -n 's/^model \([A-Za-z0-9_]*\).*/\1/p' "$src" | head -n 1)")
  fi
  tiny+=("${entry[@]}")
  for level in $levels; do
    for p in $precisions; do
      dir="$out/$m/tiny/O$level"
      [ "$p" = f32 ] || dir="$dir-$p"
      "$tec" build -O"$level" --precision "$p" --ptxas "$ptxas" --emit cu,host "${tiny[@]}" -o "$dir" "$src" > /dev/null
    done
  done
  if [ "$m" = llama-decode ]; then
    # DECODE_SIZE=tiny: the tiny model's sizes but for B and T, to try the
    # GPU machine's whole decode path in seconds before the real one.
    shrink=()
    if [ "${DECODE_SIZE:-full}" = tiny ]; then
      read -r -a pairs <<< "$(sed -n 's/^# tiny://p' "$src" | head -n 1)"  # -D NAME=VALUE ...
      for ((i = 0; i + 1 < ${#pairs[@]}; i += 2)); do
        case ${pairs[i+1]} in B=* | T=* | P=*) ;; *) shrink+=("${pairs[i]}" "${pairs[i+1]}") ;; esac
      done
    fi
    for b in $decode_batches; do
      for level in $decode_levels; do
        for p in $decode_precisions; do
          dir="$out/$m/full-b$b/O$level"
          [ "$p" = f32 ] || dir="$dir-$p"
          "$tec" build -O"$level" --precision "$p" --gpu "${DECODE_GPU:-h100}" --target "${DECODE_TARGET:-sm_90}" \
            --ptxas "$full_ptxas" --emit cu,host "${entry[@]}" "${shrink[@]}" -D B="$b" -D T="$decode_t" \
            -o "$dir" --report "$dir/report.json" "$src" > /dev/null
          printf 'B=%s\nT=%s\nPOS=%s\nDEFINES="%s"\n' "$b" "$decode_t" "$decode_pos" "${shrink[*]}" > "$dir/bench.env"
        done
      done
    done
  else
    for level in $levels; do
      for p in $precisions; do
        dir="$out/$m/full/O$level"
        [ "$p" = f32 ] || dir="$dir-$p"
        "$tec" build -O"$level" --precision "$p" --ptxas "$full_ptxas" --emit cu,host "${entry[@]}" "${gpu[@]}" \
          -o "$dir" --report "$dir/report.json" "$src" > /dev/null
      done
    done
  fi
  feeds="$out/$m/tiny/feeds"
  rm -rf "$feeds"
  if [[ "$peer_models" == *" $m "* ]]; then
    "$python" "$root/bench/gpu/peers.py" --make-feeds "$feeds" --model "$m" --size tiny --seed 1
  else
    "$tec" run --device ref "${tiny[@]}" --fill random --seed 1 --save-feeds "$feeds" "$src" > /dev/null
  fi
  # The reference on the float32 feeds as saved: tec te lists which are
  # inputs and which params.
  inputs=() params=()
  while read -r name kind; do
    case $kind in input) inputs+=("$name") ;; param) params+=("$name") ;; esac
  done < <("$tec" te "${tiny[@]}" "$src" | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\) = placeholder(.*# \(input\|param\),.*/\1 \2/p')
  pack "$out/$m/tiny/inputs.npz" "$feeds" "${inputs[@]}"
  pack "$out/$m/tiny/params.npz" "$feeds" "${params[@]}"
  for p in f32 $precisions; do
    ref="$out/$m/tiny/ref.npz"
    [ "$p" = f32 ] || ref="$out/$m/tiny/ref-$p.npz"
    "$tec" run --device ref --precision "$p" "${tiny[@]}" --inputs "$out/$m/tiny/inputs.npz" \
      --params "$out/$m/tiny/params.npz" --outputs "$ref" "$src" > /dev/null
  done
  echo "prepared $m"
done
[ -n "${TEC:-}" ] || rm -f "$tec"

# The binaries for tec generate --device cuda on the GPU machine.
if [[ " ${models[*]} " == *" llama-decode "* ]]; then
  mkdir -p "$out/bin"
  (cd "$root" && CGO_ENABLED=0 go build -o "$out/bin/tec" ./cmd/tec)
  if [ "${TEC_CUDA:-1}" = 0 ]; then
    echo "built $out/bin/tec; no tec-cuda (TEC_CUDA=0)"
  elif (cd "$root" && CGO_ENABLED=1 go build -tags cuda -o "$out/bin/tec-cuda" ./cmd/tec-cuda) 2> "$out/bin/tec-cuda.log"; then
    glibc=$(objdump -T "$out/bin/tec-cuda" 2> /dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1 || true)
    echo "built $out/bin/tec and tec-cuda (needs libcuda.so.1 and ${glibc:-an unknown glibc})"
  else
    rm -f "$out/bin/tec-cuda"
    echo "built $out/bin/tec; no tec-cuda (no cgo or cuda.h here: $out/bin/tec-cuda.log), so run.sh skips tec generate --device cuda" >&2
  fi
fi
