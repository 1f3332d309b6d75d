#!/usr/bin/env bash
# Checkpoints of an earlier version (tests/fixtures/checkpoints-68e1d97, its README says how they
# were made, with LibTorch 1.13) resume in this one: each continues for one epoch, and that
# epoch's losses and validation figures match the row an uninterrupted run of that version wrote:
# to 1e-5 relative on LibTorch 1.13, to 1e-3 on another LibTorch, whose kernels round otherwise
# (2.6: 7.5e-5 at most; before FusedAdam read 1.13's optimizer state, 2.6 crashed here).
# Usage: old_checkpoints_test.sh PIX2PIX_BIN
set -uo pipefail
bin="$1"
fixtures="$(cd "$(dirname "$0")/../fixtures/checkpoints-68e1d97" && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

args=(--ngf 4 --ndf 4 --n-layers-d 2 --batch-size 4 --lr-policy constant --no-early-stop --sample-count 1
      --progress none --seed 7 --max-epochs 3)
cp "$fixtures/data.h5" "$dir/data.h5"
libtorch="$("$bin" --version | awk '$1 == "LibTorch" { sub(/,$/, "", $2); print $2 }')"
case "$libtorch" in
  1.13.*) tolerance=1e-5 ;;
  [0-9]*) tolerance=1e-3 ;;
  *) echo "FAIL: $bin --version names no LibTorch"; exit 1 ;;
esac
echo "LibTorch $libtorch: figures compared to $tolerance relative"
for model in pix2pix cyclegan; do
  cp "$fixtures/$model-epoch1.pt" "$dir/$model.pt"
  if ! "$bin" train --data "$dir/data.h5" --model "$model" --run-dir "$dir/$model" --resume "$dir/$model.pt" \
       "${args[@]}" >"$dir/$model.log" 2>&1; then
    fail "$model: the old checkpoint did not resume"; tail -n 5 "$dir/$model.log"; continue
  fi
  grep -q "resumed from .*: epoch 1 done, global step 4" "$dir/$model.log" ||
    fail "$model: not resumed after epoch 1, step 4: $(grep -m1 resumed "$dir/$model.log")"
  # Every column that is neither a time nor a rate, by name, in the expected file's order.
  verdict="$(awk -F, -v tol="$tolerance" '
    FNR == 1 { for (i = 1; i <= NF; i++) col[FILENAME, $i] = i; if (FILENAME == ARGV[1]) { n = NF; for (i = 1; i <= NF; i++) name[i] = $i }; next }
    $1 == 2 { for (i = 1; i <= NF; i++) row[FILENAME, i] = $i }
    END {
      bad = 0; seen = 0
      for (i = 1; i <= n; i++) {
        c = name[i]; if (c ~ /_s$|images_per_s/) continue
        if (!((ARGV[2], c) in col)) { print "column " c " missing"; bad++; continue }
        e = row[ARGV[1], i]; a = row[ARGV[2], col[ARGV[2], c]]
        if (e == "" && a == "") continue
        seen++
        d = e - a; if (d < 0) d = -d; m = e < 0 ? -e : e
        if (e == "" || a == "" || d > tol * (m > 1 ? m : 1)) { print c ": expected " e ", got " a; bad++ }
      }
      if (seen < 5) { print "only " seen " columns compared"; bad++ }
      if (!bad) print "ok " seen
    }' "$fixtures/$model-epoch2.csv" "$dir/$model/metrics.csv")"
  case "$verdict" in
    ok*) echo "$model: epoch 2 after the old checkpoint matches the old run (${verdict#ok } columns)" ;;
    *) fail "$model: epoch 2 differs from the old run:"; echo "$verdict" ;;
  esac
done
[ "$failures" -eq 0 ] && echo "old checkpoints: all resumed" || echo "old checkpoints: $failures failure(s)"
exit $((failures > 0))
