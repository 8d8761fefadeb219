#!/usr/bin/env bash
# bench/gpu/prepare.sh OUT [MODEL...]
#
# Prepares, on a machine with Go, what bench/gpu/run.sh needs on a machine
# with a GPU (which needs no Go): for each example (all of examples/*.te by
# default), at its tiny configuration (the "# tiny:" line of its header)
# and at full size, at -O0 and -O4, the CUDA C++, C interface and runner
# (tec build --emit cu,host) in OUT/MODEL/SIZE/OLEVEL; and for the tiny
# configuration, random inputs and params (tec run --save-feeds) in
# OUT/MODEL/tiny/feeds with the reference evaluator's outputs in
# OUT/MODEL/tiny/ref.npz. Copy OUT to the GPU machine with the repository's
# bench/gpu/run.sh, and run it there.
set -euo pipefail

out=${1:?usage: bench/gpu/prepare.sh OUT [MODEL...]}
shift
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
tec="$out/.tec"
(cd "$root" && go build -o "$tec" ./cmd/tec)

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
  for f in "$root"/examples/*.te; do models+=("$(basename "$f" .te)"); done
fi

for m in "${models[@]}"; do
  src="$root/examples/$m.te"
  [ -f "$src" ] || { echo "prepare.sh: no example $m ($src)" >&2; exit 2; }
  read -r -a tiny <<< "$(sed -n 's/^# tiny://p' "$src" | head -n 1)"
  for size in tiny full; do
    defines=()
    [ "$size" = tiny ] && defines=("${tiny[@]}")
    for level in 0 4; do
      "$tec" build -O"$level" --emit cu,host "${defines[@]}" -o "$out/$m/$size/O$level" "$src" > /dev/null
    done
  done
  "$tec" run --device ref "${tiny[@]}" --fill random --seed 1 \
    --save-feeds "$out/$m/tiny/feeds" --outputs "$out/$m/tiny/ref.npz" "$src" > /dev/null
  echo "prepared $m"
done
rm -f "$tec"
