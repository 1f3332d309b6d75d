#!/bin/bash
# What --sync-bn costs (issue 30): the reference Pix2Pix (U-Net + 70x70 PatchGAN, batch norm,
# ngf = ndf = 64) on 2 ranks, one thread each, bound to cores, at 128x128 with batch 4 and 256x256
# with batch 1 per rank; --sync-bn on and off interleaved (on, off, on, off, ...) and repeated.
# Prints ms per step min/median/max for each, their ratio, and the batch-norm sync phase of
# `bench --phases` (its own share of the step). Not part of CI: it takes minutes.
#
#   bench/sync-bn-cost.sh [--rounds N] [--steps N] [--warmup N] [--bin build/bin/pix2pix]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=$root/build/bin/pix2pix
rounds=3 steps=6 warmup=1
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "sync-bn-cost.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
mpirun=(mpirun -np 2 --bind-to core)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
echo "# $(uptime)"
for size in 128 256; do
  "$bin" prepare --images idx:/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz --derive edges \
    --size "$size" --limit 200 --out "$work/d$size.h5" >/dev/null 2>&1
done
# One timed bench: ms/step, then the batch-norm sync phase's ms and share.
measure() {  # size batch on|off
  "${mpirun[@]}" "$bin" bench --what train --data "$work/d$1.h5" --batch-size "$2" --steps "$steps" \
    --warmup "$warmup" --phases --sync-bn "$3" >"$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
  local ms bn
  ms=$(sed -n 's/.*ms\/step \([0-9.]*\).*/\1/p' "$work/out")
  bn=$(sed -n 's/^batch-norm sync[^0-9]*\([0-9.]*\) *[0-9.]* *\([0-9.]*\)%$/\1 \2/p' "$work/out")
  echo "$ms $bn"
}
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "%.1f / %.1f / %.1f", v[1], v[int((NR + 1) / 2)], v[NR] }'; }
printf "%-12s %-28s %-28s %-10s %s\n" "config" "on: ms/step min/med/max" "off: ms/step min/med/max" "on/off" \
  "batch-norm sync (on, median: ms, share)"
for config in "128 4" "256 1"; do
  set -- $config
  : >"$work/on" && : >"$work/off"
  for ((r = 0; r < rounds; r++)); do
    measure "$1" "$2" on >>"$work/on"
    measure "$1" "$2" off >>"$work/off"
  done
  on=$(cut -d' ' -f1 "$work/on" | stats) off=$(cut -d' ' -f1 "$work/off" | stats)
  ratio=$(awk -v a="$(cut -d' ' -f1 "$work/on" | sort -n | sed -n "$(((rounds + 1) / 2))p")" \
    -v b="$(cut -d' ' -f1 "$work/off" | sort -n | sed -n "$(((rounds + 1) / 2))p")" 'BEGIN { printf "%.3f", a / b }')
  bn_ms=$(cut -d' ' -f2 "$work/on" | stats) bn_share=$(cut -d' ' -f3 "$work/on" | sort -n | sed -n "$(((rounds + 1) / 2))p")
  printf "%-12s %-28s %-28s %-10s %s ms, %s %%\n" "${1}² b$2" "$on" "$off" "$ratio" "$bn_ms" "$bn_share"
done
