#!/bin/bash
# The table of a time-to-quality scaling study (slurm/scaling-study.sh --to-quality): from each
# run's summary.json (runs named run-n<N>-s<SEED>), one row per run and one per rank count N with
# min/median/max over the seeds of the time to the best epoch, the best smoothed value, the stop
# epoch, images/s, and the time to each --quality-targets value; speed-up and efficiency of the
# median time against the smallest N (See Note [time to quality] in the sources).
#
#   slurm/collect-quality.sh STUDY_DIR
#
# Writes STUDY_DIR/quality-runs.csv (gpus, seed, global_batch, lr, stop_epoch, best_epoch,
# best_smoothed, to_best_train_s, to_best_wall_s, train_s, wall_s, images_per_s, stop_reason),
# STUDY_DIR/quality-targets.csv (gpus, seed, target, epoch, train_s, wall_s; empty where never
# reached) and STUDY_DIR/quality.csv (gpus, runs, global_batch, stop_epoch_median,
# best_smoothed_min/median/max, to_best_train_s_min/median/max, to_best_speedup, to_best_efficiency,
# images_per_s_median, then for each target T: to_T_reached (runs that reached it), to_T_train_s_median,
# to_T_speedup). A run without summary.json (failed, still going) is named on stderr and left out;
# exit 1 then, 0 when every run has one.
set -euo pipefail
if [ $# -ne 1 ] || [ ! -d "$1" ]; then echo "usage: $0 STUDY_DIR" >&2; exit 2; fi
dir="$(cd "$1" && pwd)"

# shellcheck source=slurm/summary-fields.sh
. "$(dirname "$0")/summary-fields.sh"

runs="$dir/quality-runs.csv" targets="$dir/quality-targets.csv" missing=0
echo "gpus,seed,global_batch,lr,stop_epoch,best_epoch,best_smoothed,to_best_train_s,to_best_wall_s,train_s,wall_s,images_per_s,stop_reason" >"$runs"
echo "gpus,seed,target,epoch,train_s,wall_s" >"$targets"
shopt -s nullglob
for run in "$dir"/run-n*-s*/; do
  run="${run%/}"
  name="$(basename "$run")" n="${name#run-n}"
  seed="${n#*-s}" n="${n%%-s*}"
  summary="$run/summary.json"
  if [ ! -f "$summary" ]; then
    echo "collect-quality.sh: $name has no summary.json (failed or still running): left out" >&2
    missing=$((missing + 1))
    continue
  fi
  line="$(grep '"time_to_quality": ' "$summary" || true)"
  [ -n "$line" ] || { echo "collect-quality.sh: $summary has no time_to_quality (a pix2pix of before it)" >&2; missing=$((missing + 1)); continue; }
  best_smoothed="$(sed -n 's/^ *"best_[a-z_]*_smoothed": *\([^,]*\),\{0,1\}$/\1/p' "$summary" | head -1)"
  reason="$(summary_stopped_by "$summary")"
  # The line's numbers by key: the run's clocks, the best epoch's, then one group per target.
  awk -v n="$n" -v seed="$seed" -v batch="$(summary_value global_batch "$summary")" -v lr="$(summary_value lr "$summary")" \
      -v stop="$(summary_value last_epoch "$summary")" -v best_epoch="$(summary_value best_epoch "$summary")" \
      -v best="$best_smoothed" -v ips="$(summary_value images_per_second "$summary")" -v reason="$reason" \
      -v runs="$runs" -v targets="$targets" '
    function num(text, key,   at) {  # the value after "key": in text ("" for null)
      at = index(text, "\"" key "\": "); if (!at) return ""
      text = substr(text, at + length(key) + 4); sub(/[,}].*/, "", text)
      return text == "null" ? "" : text
    }
    {
      best_part = substr($0, index($0, "\"best\": {")); best_part = substr(best_part, 1, index(best_part, "}"))
      printf "%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", n, seed, batch, lr, stop, best_epoch, best,
        num(best_part, "train_s"), num(best_part, "wall_s"), num($0, "train_s"), num($0, "wall_s"), ips, reason >> runs
      rest = $0
      while ((at = index(rest, "{\"target\": ")) > 0) {
        rest = substr(rest, at); group = substr(rest, 1, index(rest, "}")); rest = substr(rest, 2)
        printf "%s,%s,%s,%s,%s,%s\n", n, seed, num(group, "target"), num(group, "epoch"), num(group, "train_s"),
          num(group, "wall_s") >> targets
      }
    }' <<<"$line"
done

# Per rank count: min/median/max over the seeds; speed-up of the median time against the smallest N.
awk -F, -v targets_file="$targets" '
  function sorted(list, out,   n, i, j, t) {  # list "a b c" -> out[1..n] ascending; returns n
    n = split(list, out, " ")
    for (i = 2; i <= n; i++) { t = out[i] + 0; for (j = i - 1; j >= 1 && out[j] + 0 > t; j--) out[j + 1] = out[j]; out[j + 1] = t }
    return n
  }
  function stat(list, which,   v, n) {  # which: min, med, max; "" for no values
    n = sorted(list, v); if (n == 0) return ""
    return which == "min" ? v[1] : which == "max" ? v[n] : (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2)
  }
  function add(key, value) { if (value != "") values[key] = values[key] " " value }
  FNR == 1 { next }
  FILENAME == targets_file {
    if (!($3 in seen_target)) { seen_target[$3] = 1; target_list[++n_targets] = $3 }
    if ($4 != "") { reached[$1 "|" $3]++; add("t|" $1 "|" $3, $5) }
    next
  }
  {
    if (!($1 in seen)) { seen[$1] = 1; gpus[++n_gpus] = $1 }
    count[$1]++; batch[$1] = $3
    add("stop|" $1, $5); add("best|" $1, $7); add("tb|" $1, $8); add("ips|" $1, $12)
  }
  END {
    for (i = 2; i <= n_gpus; i++) { t = gpus[i]; for (j = i - 1; j >= 1 && gpus[j] + 0 > t + 0; j--) gpus[j + 1] = gpus[j]; gpus[j + 1] = t }
    printf "gpus,runs,global_batch,stop_epoch_median,best_smoothed_min,best_smoothed_median,best_smoothed_max,"
    printf "to_best_train_s_min,to_best_train_s_median,to_best_train_s_max,to_best_speedup,to_best_efficiency,images_per_s_median"
    for (k = 1; k <= n_targets; k++) printf ",to_%s_reached,to_%s_train_s_median,to_%s_speedup", target_list[k], target_list[k], target_list[k]
    printf "\n"
    for (i = 1; i <= n_gpus; i++) {
      g = gpus[i]; tb = stat(values["tb|" g], "med")
      if (i == 1) { base_g = g; base_tb = tb }
      speed = (tb > 0 && base_tb != "") ? base_tb / tb : ""
      printf "%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,", g, count[g], batch[g], stat(values["stop|" g], "med"),
        stat(values["best|" g], "min"), stat(values["best|" g], "med"), stat(values["best|" g], "max"),
        stat(values["tb|" g], "min"), tb, stat(values["tb|" g], "max")
      printf "%s,%s,%s", speed == "" ? "" : sprintf("%.3f", speed), speed == "" ? "" : sprintf("%.3f", speed * base_g / g),
        stat(values["ips|" g], "med")
      for (k = 1; k <= n_targets; k++) {
        key = g "|" target_list[k]; tt = stat(values["t|" key], "med")
        if (i == 1) base_t[k] = tt
        printf ",%d/%d,%s,%s", reached[key], count[g], tt, (tt > 0 && base_t[k] != "") ? sprintf("%.3f", base_t[k] / tt) : ""
      }
      printf "\n"
    }
  }' "$targets" "$runs" >"$dir/quality.csv"
echo "collect-quality.sh: $(($(wc -l <"$runs") - 1)) run(s) in $runs; per rank count in $dir/quality.csv"
column -s, -t "$dir/quality.csv" 2>/dev/null || cat "$dir/quality.csv"
[ "$missing" -eq 0 ]
