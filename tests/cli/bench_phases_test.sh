#!/usr/bin/env bash
# `bench --what train --phases` on 2 ranks: every phase of the step is reported (mean over ranks,
# slowest rank, share), and the phases account for the timed steps: their shares add up to
# between 80 and 101 % (nothing else runs in the timed loop).
set -euo pipefail
bin="$1"
shift
mpirun=("$@")
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

"$bin" prepare --images idx:/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 120 --out "$dir/d.h5" >/dev/null 2>&1
"${mpirun[@]}" -np 2 "$bin" bench --what train --config "$root/configs/smoke.cfg" --data "$dir/d.h5" \
  --steps 6 --warmup 1 --phases >"$dir/out.log" 2>&1 || { cat "$dir/out.log"; exit 1; }
for phase in "forward G" "D step" "D gradient averaging" "D check + Adam" "G step" "G gradient averaging" \
  "G check + Adam" "data (next batch)"; do
  grep -q "^$phase" "$dir/out.log" || { cat "$dir/out.log"; echo "no line for phase '$phase'"; exit 1; }
done
total=$(sed -n '/^# phases/,$p' "$dir/out.log" | awk '/%$/ { sub("%", "", $NF); sum += $NF } END { print sum }')
awk -v t="$total" 'BEGIN { exit !(t >= 80 && t <= 101) }' ||
  { cat "$dir/out.log"; echo "phase shares add up to $total %"; exit 1; }
echo "bench phases: OK ($total % of the step)"
