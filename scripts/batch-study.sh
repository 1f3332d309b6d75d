#!/usr/bin/env bash
# The batch-size study of docs/results.md (issue 13): Table 1 of Lupión et al. (2022) at the scale
# of this 2-core CPU. Every line of configs/fashion-batch-study.sweep (global batch 1 ... 256 with
# the paper's lr 2e-4 and no LR scaling; then sqrt and linear scaling at batch 4, their Fig. 7)
# trains the quickstart model (ngf = ndf = 16, 32x32) with seed 0 and the paper's early-stopping
# rule scaled down to a window of 10 and a patience of 10 evaluations (the paper: 50 and 50), on
# the first 2,000 Fashion-MNIST edges -> image pairs (1,800 train / 200 val; batch 1 on all 5,400
# would be 5,400 steps an epoch). launch/sweep-local.sh runs the lines, JOBS at once, each on a
# core of its own; slurm/collect-sweep.sh writes OUT/batch-study.csv; gnuplot draws
# OUT/batch-study.png (smoothed val PSNR against epoch, one curve per line).
# Run again to finish a study that was cut short: finished lines are skipped.
# Usage: scripts/batch-study.sh OUT
# Environment: JOBS (2, or 1 on a 1-core machine), RANKS (1), EPOCHS (100: the --max-epochs
# bound), DATA (data/fashion-edges-2k.h5, made when missing), PIX2PIX_BIN (build/bin/pix2pix).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
out="$1"
bin="${PIX2PIX_BIN:-build/bin/pix2pix}"
data="${DATA:-data/fashion-edges-2k.h5}"
cores="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
export JOBS="${JOBS:-$([ "$cores" -ge 2 ] && echo 2 || echo 1)}" RANKS="${RANKS:-1}" PIX2PIX_BIN="$bin"
mkdir -p "$out" "$(dirname "$data")"
[ -f "$data" ] || "$bin" prepare --config configs/prepare-fashion-edges.ini --limit 2000 --out "$data" --progress none

echo "batch-study: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), load:$(uptime | sed 's/.*load average://')"
status=0
launch/sweep-local.sh configs/fashion-batch-study.sweep "$out" --config configs/quickstart.cfg --data "$data" \
  --lr 0.0002 --lr-policy constant --es-window 10 --es-patience 10 --max-epochs "${EPOCHS:-100}" --seed 0 ||
  status=$?
slurm/collect-sweep.sh "$out" --csv "$out/batch-study.csv"

# The curves behind the table: smoothed val PSNR per epoch of every finished line, batch sizes
# (rule none) on the left, the LR rules at batch 4 on the right (the paper's Fig. 7).
left=() right=()
if command -v gnuplot >/dev/null; then
  while IFS=, read -r task batch rule _; do
    [ -f "$out/$task/metrics.csv" ] && [ -n "$batch" ] || continue
    if [ "$rule" = none ]; then left+=("'$out/$task/metrics.csv' using 1:8 with lines title 'batch $batch'"); fi
    if [ "$batch" = 4 ]; then right+=("'$out/$task/metrics.csv' using 1:8 with lines title 'batch 4, $rule'"); fi
  done < <(tail -n +2 "$out/batch-study.csv")
fi
if [ ${#left[@]} -gt 0 ] && [ ${#right[@]} -gt 0 ]; then
  join() { local IFS=,; echo "$*"; }
  gnuplot <<GP || echo "batch-study: gnuplot failed; the CSV is complete" >&2
set terminal pngcairo size 1400,560 font ',10'
set output '$out/batch-study.png'
set datafile separator ','
set key autotitle columnhead bottom right
set xlabel 'epoch'
set ylabel 'val PSNR, smoothed over 10 evaluations (dB)'
set grid
# Nine distinct colours: gnuplot's default cycle has eight, and batch 256 would take batch 1's.
colours = "#9400d3 #009e73 #56b4e9 #e69f00 #f0e442 #0072b2 #e51e10 #000000 #a0a0a0"
do for [i = 1:9] { set linetype i linecolor rgb word(colours, i) linewidth 1.5 }
set multiplot layout 1,2
set title 'global batch 1 ... 256, lr 2e-4, no LR scaling'
plot $(join "${left[@]}")
set title 'global batch 4: LR scaling none / sqrt / linear'
plot $(join "${right[@]}")
unset multiplot
GP
else
  echo "batch-study: no plot (no gnuplot, or no finished line at batch 4 yet)" >&2
fi
exit "$status"
