#!/usr/bin/env bash
# evaluate and translate under mpirun -np 2 write byte for byte what one process writes, in eval
# mode and in train mode (batch statistics and dropout: a 64x64 U-Net has a dropout block), with
# uneven last batches, whole and tiled (--tile), on 8-bit and on 16-bit data; and train mode really
# differs from eval.
set -euo pipefail
bin="$1"
shift
mpirun=("$@")
root="$(cd "$(dirname "$0")/../.." && pwd)"
python="${PIX2PIX_TEST_PYTHON:-/usr/bin/python3}"  # with numpy (and h5py): a GPU node's venv
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 64 --limit 80 --out "$dir/d.h5" --progress none >/dev/null
"$bin" train --config "${PIX2PIX_TEST_CONFIG:-$root/configs/smoke.cfg}" --data "$dir/d.h5" --run-dir "$dir/run" --max-epochs 1 \
  --progress none >"$dir/train.log" 2>&1 || { cat "$dir/train.log"; exit 1; }
# PNG inputs for translate --input: the train split translated (72 files).
"$bin" translate --checkpoint "$dir/run" --data "$dir/d.h5" --split train --output "$dir/images" \
  --progress none >/dev/null

# Runs "$@" on one process into $out-one and on two ranks into $out-two.
one_and_two() {
  local out="$1"
  shift
  "$bin" "$@" "$out-one" >"$dir/one.log" 2>&1 || { cat "$dir/one.log"; exit 1; }
  "${mpirun[@]}" -np 2 "$bin" "$@" "$out-two" >"$dir/two.log" 2>&1 || { cat "$dir/two.log"; exit 1; }
  grep -q "on 2 ranks" "$dir/two.log" || { cat "$dir/two.log"; echo "not 2 ranks"; exit 1; }
  diff -r "$out-one" "$out-two" || { echo "$out: 1 and 2 ranks differ"; exit 1; }
}

for mode in eval train; do
  one_and_two "$dir/eval-$mode" evaluate --checkpoint "$dir/run" --data "$dir/d.h5" --split val --mode "$mode" \
    --batch-size 3 --samples 5 --progress none --out
  [ "$(wc -l <"$dir/eval-$mode-one/evaluation.csv")" = 9 ] || { cat "$dir/eval-$mode-one/evaluation.csv"; exit 1; }
  one_and_two "$dir/split-$mode" translate --checkpoint "$dir/run" --data "$dir/d.h5" --split val --mode "$mode" \
    --batch-size 3 --progress none --output
  one_and_two "$dir/folder-$mode" translate --checkpoint "$dir/run" --input "$dir/images" --resize none \
    --mode "$mode" --batch-size 5 --progress none --output
  # Tiled (the 6-level U-Net's tiles start 64 apart): images shared over ranks as without tiles.
  one_and_two "$dir/tiled-$mode" translate --checkpoint "$dir/run" --input "$dir/images" --tile 128 --overlap 64 \
    --mode "$mode" --batch-size 3 --progress none --output
done
# 16-bit data (format version 4): both domains uint16 on a measured range, blurred -> sharp; the
# outputs are 16-bit PNGs (whole and tiled) and .npy arrays, the same on 2 ranks.
"$python" - "$dir" <<'PY'
import os, sys
import numpy as np
rng = np.random.default_rng(34)
os.makedirs(f"{sys.argv[1]}/deep")
for i in range(40):
    frame = (20000 + 8000 * np.sin(np.add.outer(np.arange(64) * (0.1 + i / 200), np.arange(64) * 0.07))
             + rng.normal(0, 200, (64, 64))).clip(0, 65535).astype(">u2")
    with open(f"{sys.argv[1]}/deep/f{i:02d}.pgm", "wb") as out:
        out.write(b"P5 64 64 65535\n" + frame.tobytes())
PY
"$bin" prepare --images "$dir/deep" --derive blur --range-a auto --range-b auto --val-fraction 0.2 \
  --out "$dir/deep.h5" --progress none >/dev/null
"$bin" train --config "${PIX2PIX_TEST_CONFIG:-$root/configs/smoke.cfg}" --data "$dir/deep.h5" --run-dir "$dir/deep-run" --max-epochs 1 \
  --progress none >"$dir/train.log" 2>&1 || { cat "$dir/train.log"; exit 1; }
one_and_two "$dir/deep-eval" evaluate --checkpoint "$dir/deep-run" --data "$dir/deep.h5" --split val --batch-size 3 \
  --progress none --out
one_and_two "$dir/deep-png" translate --checkpoint "$dir/deep-run" --input "$dir/deep" --batch-size 3 --progress none \
  --output
one_and_two "$dir/deep-npy" translate --checkpoint "$dir/deep-run" --data "$dir/deep.h5" --split val --format npy \
  --batch-size 3 --progress none --output
one_and_two "$dir/deep-tiled" translate --checkpoint "$dir/deep-run" --input "$dir/deep" --tile 128 --overlap 64 \
  --batch-size 3 --progress none --output
# A PNG's bit depth is byte 24 (in IHDR): 16 for uint16 outputs.
[ "$("$python" -c 'import sys; print(open(sys.argv[1], "rb").read()[24])' "$dir/deep-png-one/f00.png")" = 16 ] ||
  { echo "translate wrote $dir/deep-png-one/f00.png with another bit depth than 16"; exit 1; }
if cmp -s "$dir/eval-eval-one/evaluation.csv" "$dir/eval-train-one/evaluation.csv"; then
  echo "--mode train scored exactly as --mode eval"
  exit 1
fi
echo "evaluate and translate: 2 ranks = 1 process in eval and train mode, 8-bit and 16-bit"
