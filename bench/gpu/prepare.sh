#!/usr/bin/env bash
# bench/gpu/prepare.sh OUT [MODEL...]
#
# Prepares, on a machine with Go, what bench/gpu/run.sh needs on a machine
# with a GPU (which needs no Go): for each example (all of examples/*.te by
# default), at its tiny configuration (the "# tiny:" line of its header)
# and at full size, at each level of $LEVELS (default "0 1 2 3 4") and each
# precision of $PRECISIONS (default "f32 f16 bf16"), the CUDA C++, C interface
# and runner (tec build --emit cu,host --precision P) in
# OUT/MODEL/SIZE/OLEVEL (f32) or OUT/MODEL/SIZE/OLEVEL-P; and for the tiny
# configuration, random inputs and params in OUT/MODEL/tiny/feeds/NAME.npy
# with the reference evaluator's outputs on exactly those float32 arrays:
# OUT/MODEL/tiny/ref.npz (f32) and ref-P.npz (tec run --precision P, the
# same rounding points as the build). The feeds of the six models with a
# peer (bench/gpu/peers.py) are the peers' own (peers.py --make-feeds); the
# others' are tec run --fill random --seed 1's. Full-size feeds are made on
# the GPU machine (run.sh), being too large to carry. Copy OUT to the GPU
# machine with the repository's bench/gpu/, and run bench/gpu/run.sh there.
# A file with several models (llama.te: prefill and decode) is prepared for
# its first, the one its peer of the same name runs (llama: the prefill).
set -euo pipefail

out=${1:?usage: bench/gpu/prepare.sh OUT [MODEL...]}
shift
levels=${LEVELS:-0 1 2 3 4}
precisions=${PRECISIONS:-f32 f16 bf16}
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-python3}
mkdir -p "$out"
tec="$out/.tec"
(cd "$root" && go build -o "$tec" ./cmd/tec)
peer_models=" bert resnext lstm efficientnet swin mmoe llama "

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  for f in "$root"/examples/*.te; do models+=("$(basename "$f" .te)"); done
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
  src="$root/examples/$m.te"
  [ -f "$src" ] || { echo "prepare.sh: no example $m ($src)" >&2; exit 2; }
  read -r -a tiny <<< "$(sed -n 's/^# tiny://p' "$src" | head -n 1)"
  # The first model, when the file has several.
  entry=()
  if [ "$(grep -c '^model ' "$src")" -gt 1 ]; then
    entry=(--model "$(sed -n 's/^model \([A-Za-z0-9_]*\).*/\1/p' "$src" | head -n 1)")
  fi
  tiny+=("${entry[@]}")
  for size in tiny full; do
    defines=("${entry[@]}")
    [ "$size" = tiny ] && defines=("${tiny[@]}")
    for level in $levels; do
      for p in $precisions; do
        dir="$out/$m/$size/O$level"
        [ "$p" = f32 ] || dir="$dir-$p"
        "$tec" build -O"$level" --precision "$p" --emit cu,host "${defines[@]}" -o "$dir" "$src" > /dev/null
      done
    done
  done
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
rm -f "$tec"
