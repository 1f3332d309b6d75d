#!/usr/bin/env bash
# `pix2pix inspect --h5-driver mpio --check` under mpirun -np 2: the ranks open the file together,
# split the check, rank 0 reports once; a damaged file fails the job on every rank.
set -euo pipefail
bin="$1"; shift
mpirun=("$@")
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz \
  --derive noise --limit 700 --compression 5 --out "$dir/f.h5" >/dev/null 2>&1
out="$("${mpirun[@]}" -np 2 "$bin" inspect "$dir/f.h5" --h5-driver mpio --check 2>&1)"
echo "$out"
[ "$(grep -c 'format:   pix2pix-h5' <<<"$out")" = 1 ] || { echo "expected one report from rank 0"; exit 1; }
grep -q 'check: OK.*(2 readers)' <<<"$out" || { echo "check did not run on 2 readers"; exit 1; }

# Damage the last third of the file (chunks of the later pairs): the check must fail.
size=$(stat -c %s "$dir/f.h5")
# Deterministic damage (the file is deterministic too), so the outcome never depends on luck.
head -c 20000 /dev/zero | tr '\0' Z | dd of="$dir/f.h5" bs=1 seek=$((size * 2 / 3)) conv=notrunc status=none
if "${mpirun[@]}" -np 2 "$bin" inspect "$dir/f.h5" --h5-driver mpio --check --sample 1 >"$dir/log" 2>&1; then
  cat "$dir/log"; echo "a damaged file passed the check"; exit 1
fi
grep -q 'unreadable' "$dir/log" || { cat "$dir/log"; echo "no unreadable-chunk report"; exit 1; }
echo "mpio inspect: OK on 2 ranks, damaged file rejected"
