#!/usr/bin/env bash
# slurm/scaling-study.sh --to-quality --local at 1 and 2 CPU ranks, 2 seeds each (weak scaling,
# sqrt LR rule): every training runs to its stop, and quality.csv has a row per rank count with
# the runs that reached each target, the time to the best epoch and its speed-up; a study whose
# trainings fail says which and exits 1.
# Usage: scaling_quality_test.sh PIX2PIX_BIN
set -uo pipefail
bin="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
export PIX2PIX_BIN="$bin"
fail() { echo "FAIL $*"; exit 1; }

"$bin" prepare --images "idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz" \
  --derive edges --size 32 --limit 100 --progress none --out "$dir/d.h5" >/dev/null || fail "prepare"
# A config's global batch must not override the study's (weak: 4 a rank).
printf 'global-batch = 12\n' >"$dir/study.cfg"
tiny=(--config "$dir/study.cfg" --device cpu --data "$dir/d.h5" --ngf 4 --ndf 4 --n-layers-d 2 --max-epochs 3 --es-window 1 --es-patience 1
      --sample-count 1 --threads 1)
"$root/slurm/scaling-study.sh" --local --to-quality --max-gpus 2 --seeds 2 --mode weak --batch 4 --lr-scaling sqrt \
  --quality-targets -1000,1000 --out "$dir/study" -- "${tiny[@]}" >"$dir/study.log" 2>&1 ||
  { cat "$dir/study.log"; cat "$dir"/study/run-*.out; fail "the study exited $?"; }
cat "$dir/study/quality.csv"
header="$(head -1 "$dir/study/quality.csv")"
[[ "$header" == gpus,runs,global_batch,stop_epoch_median,*,to_-1000_reached,to_-1000_train_s_median,to_-1000_speedup,to_1000_reached,* ]] ||
  fail "quality.csv header: $header"
# Per rank count: 2 runs, global batch 4 x ranks, -1000 dB reached by both, 1000 by none, a time to best.
awk -F, 'NR > 1 {
  if ($2 != 2 || $3 != 4 * $1 || $14 != "2/2" || $17 != "0/2" || $9 == "" || $15 == "") { print "row: " $0; bad = 1 }
  n++ } END { exit bad || n != 2 }' "$dir/study/quality.csv" || fail "quality.csv rows"
[ "$(tail -n +2 "$dir/study/quality-runs.csv" | wc -l)" = 4 ] || fail "quality-runs.csv: $(cat "$dir/study/quality-runs.csv")"
grep -q '"lr_scaling": "sqrt"' "$dir/study/run-n2-s2/summary.json" || fail "the LR rule did not reach the training"
if command -v gnuplot >/dev/null; then head -c 8 "$dir/study/quality.png" | grep -q PNG || fail "no quality.png"; fi
echo "ok   a time-to-quality study of 1 and 2 ranks x 2 seeds: $(sed -n 3p "$dir/study/quality.csv")"

# Trainings that fail: named, exit 1.
if "$root/slurm/scaling-study.sh" --local --to-quality --max-gpus 1 --seeds 1 --out "$dir/bad" -- --device cpu \
  --data "$dir/missing.h5" >"$dir/bad.log" 2>&1; then
  fail "a study of failed trainings exited 0"
fi
grep -q "run-n1-s1 has no summary.json" "$dir/bad.log" || { cat "$dir/bad.log"; fail "the failed run is not named"; }
bash "$root/slurm/scaling-study.sh" --to-quality --seeds 0 --max-gpus 1 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--seeds 0 accepted"
echo "ok   failed trainings are named; bad options exit 2"
