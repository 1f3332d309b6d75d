#!/bin/bash
# The table of a finished sweep, like Table 1 of Lupión et al. (2022): one row per task with the
# global batch, the LR scaling rule, the epoch training stopped at, the best epoch, the best
# (smoothed) validation PSNR, the training's wall time and what stopped it (early stopping, the
# --max-epochs bound, anything else). Reads each task's summary.json; a task without one (still
# running, failed) is listed as such. Works on slurm/sweep.sbatch's and launch/sweep-local.sh's runs.
#
#   slurm/collect-sweep.sh SWEEP_RUN_DIR [--csv FILE]
set -euo pipefail
usage() { echo "usage: $0 SWEEP_RUN_DIR [--csv FILE]" >&2; exit 2; }
[ $# -ge 1 ] && [ -d "$1" ] || usage
dir="$1"
csv=""
if [ $# -eq 3 ] && [ "$2" = --csv ]; then csv="$3"; elif [ $# -ne 1 ]; then usage; fi

# shellcheck source=slurm/summary-fields.sh
. "$(dirname "$0")/summary-fields.sh"

rows=()
for task in "$dir"/task-*/; do
  task="${task%/}"
  name="$(basename "$task")"
  summary="$task/summary.json"
  if [ ! -f "$summary" ]; then
    rows+=("$name,,,,,,,,not finished")
    continue
  fi
  stopped_by="$(summary_stopped_by "$summary")"
  wall="$(summary_value wall_seconds "$summary")"
  rows+=("$name,$(summary_value global_batch "$summary"),$(summary_value lr_scaling "$summary"),$(summary_value lr "$summary"),$(summary_value last_epoch "$summary"),$(summary_value best_epoch "$summary"),$(summary_value best_psnr_smoothed "$summary"),${wall%.*},$stopped_by")
done
[ ${#rows[@]} -gt 0 ] || { echo "$0: no task-* folders in $dir" >&2; exit 1; }

# Sorted by rule, then batch, as the paper lays it out.
sorted="$(printf '%s\n' "${rows[@]}" | sort -t, -k3,3 -k2,2n)"
if [ -n "$csv" ]; then
  { echo "task,global_batch,lr_scaling,lr,stop_epoch,best_epoch,best_psnr_smoothed,wall_seconds,stopped_by"; echo "$sorted"; } >"$csv"
fi
printf '| %-6s | %-5s | %-12s | %-10s | %-10s | %-16s | %-8s | %-10s | %s\n' batch rule lr "stop epoch" "best epoch" "best PSNR (dB)" "wall (s)" "stopped by" task
printf '|--------|-------|--------------|------------|------------|------------------|----------|------------|------\n'
echo "$sorted" | while IFS=, read -r name batch rule lr stop best psnr wall stopped_by; do
  # A run shorter than the early-stopping window has no smoothed PSNR, hence no best epoch.
  [ "$best" = -1 ] && best="-"
  [ "$psnr" = null ] && psnr="- (shorter than --es-window)"
  printf '| %-6s | %-5s | %-12s | %-10s | %-10s | %-16s | %-8s | %-10s | %s\n' "$batch" "$rule" "$lr" "$stop" "$best" "$psnr" "$wall" "$stopped_by" "$name"
done
