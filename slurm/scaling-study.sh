#!/bin/bash
# A scaling study: the same training at 1, 2, 4, ... N GPUs (ranks), each a Slurm job that times
# a fixed number of steps with `pix2pix bench --what train`, then one CSV and one plot. Without
# Slurm (no sbatch), or with --local, every point runs here under mpirun, one after the other.
#
#   slurm/scaling-study.sh --max-gpus 16 --gpus-per-node 4 --mode strong --batch 256 -- --config configs/facades-256.cfg
#   slurm/scaling-study.sh --max-gpus 2 --gpus-per-node 2 --cpu --batch 8 -- --device cpu --data d.h5 --ngf 8 --ndf 8
#
#   --max-gpus N        largest point (points: powers of two up to N, and N)
#   --gpus-per-node G   ranks per node (default 4); a point of n ranks uses ceil(n / G) nodes
#   --mode strong|weak  strong: fixed global batch (--batch); weak: fixed per-rank batch (--batch)
#   --batch B           the global (strong) or per-rank (weak) batch (default 64 / 16)
#   --steps S --warmup W  timed and untimed steps per point (default 50, 5)
#   --time T            sbatch --time per point (default 00:20:00)
#   --cpu               CPU ranks: no --gpus-per-task (pass --device cpu among the train options)
#   --sequential        one point at a time (cleaner timings on a shared network)
#   --local             no Slurm: each point is `mpirun -np n` on this machine, in turn (ranks bound
#                       to cores while they fit, else oversubscribed); the default without sbatch
#   --out DIR           results (default scaling-<mode>-<date>): point-<n>.csv/.out, scaling.csv, scaling.png
#   --to-quality        time to quality instead of images/s: at each point, --seeds full trainings
#                       (`pix2pix train` to its early stop, run dirs run-n<n>-s<seed>), then
#                       slurm/collect-quality.sh: quality-runs.csv, quality-targets.csv, quality.csv
#                       (time to the best epoch and to each target, best smoothed value, stop epoch,
#                       images/s; min/median/max over the seeds) and quality.png
#   --seeds R           trainings per point with --to-quality, seeds 1..R (default 3)
#   --lr-scaling RULE   none | sqrt | linear, given to every point's training or bench
#   --quality-targets V,...  given to every training (values of the smoothed --es-metric)
# Everything after -- goes to `pix2pix bench --what train` or, with --to-quality, `pix2pix train`.
# Environment: PIX2PIX_BIN, LAUNCHER=srun|mpirun, SRUN_MPI (as train.sbatch); SBATCH_PARTITION,
# SBATCH_ACCOUNT and other SBATCH_* variables reach every sbatch call.
set -euo pipefail

usage() { sed -n '2,33p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
max=0 per_node=4 mode=strong batch="" steps=50 warmup=5 time_limit=00:20:00 cpu=0 sequential=0 out="" local=0
quality=0 seeds=3 lr_scaling="" targets=""
while [ $# -gt 0 ]; do
  case "$1" in
    --max-gpus) max="$2"; shift 2 ;;
    --gpus-per-node) per_node="$2"; shift 2 ;;
    --mode) mode="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --time) time_limit="$2"; shift 2 ;;
    --cpu) cpu=1; shift ;;
    --sequential) sequential=1; shift ;;
    --local) local=1; shift ;;
    --out) out="$2"; shift 2 ;;
    --to-quality) quality=1; shift ;;
    --seeds) seeds="$2"; shift 2 ;;
    --lr-scaling) lr_scaling="$2"; shift 2 ;;
    --quality-targets) targets="$2"; shift 2 ;;
    --) shift; break ;;
    -h | --help) usage ;;
    *) echo "scaling-study.sh: unknown option '$1'" >&2; usage ;;
  esac
done
train_options=("$@")
[[ "$max" =~ ^[1-9][0-9]*$ ]] || { echo "scaling-study.sh: --max-gpus N (N >= 1) is required" >&2; exit 2; }
[[ "$per_node" =~ ^[1-9][0-9]*$ ]] || { echo "scaling-study.sh: --gpus-per-node must be >= 1" >&2; exit 2; }
[[ "$seeds" =~ ^[1-9][0-9]*$ ]] || { echo "scaling-study.sh: --seeds must be >= 1" >&2; exit 2; }
case "$lr_scaling" in "" | none | sqrt | linear) ;; *) echo "scaling-study.sh: --lr-scaling none|sqrt|linear" >&2; exit 2 ;; esac
[ "$quality" -eq 1 ] || [ -z "$targets" ] || { echo "scaling-study.sh: --quality-targets goes with --to-quality" >&2; exit 2; }
case "$mode" in strong) batch="${batch:-64}" ;; weak) batch="${batch:-16}" ;; *) echo "scaling-study.sh: --mode strong|weak" >&2; exit 2 ;; esac
out="${out:-scaling-$mode-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

if [ "$local" -eq 0 ] && ! command -v sbatch >/dev/null; then
  echo "scaling-study.sh: no sbatch here: every point runs on this machine under mpirun (--local)" >&2
  local=1
fi
bin="${PIX2PIX_BIN:-$(command -v pix2pix || echo "$PWD/build/bin/pix2pix")}"
[ -x "$bin" ] || { echo "scaling-study.sh: pix2pix binary '$bin' not found; set PIX2PIX_BIN" >&2; exit 1; }

points=()
for ((n = 1; n < max; n *= 2)); do points+=("$n"); done
points+=("$max")

# The command of one job (as an array in BENCH, its log's name in LOG): a point's bench and CSV, or
# with --to-quality one seed's training and run directory; the batch option for the mode.
bench_of_point() {
  local n="$1" seed="${2:-}" batch_option rule=()
  if [ "$mode" = strong ]; then
    if [ $((batch % n)) -ne 0 ]; then echo "scaling-study.sh: --batch $batch does not divide by $n ranks" >&2; return 1; fi
    batch_option=(--global-batch "$batch")
  else
    # Weak: the per-rank batch fixed, given as the global batch so that a --config's global-batch
    # cannot override it.
    batch_option=(--global-batch "$((batch * n))")
  fi
  [ -z "$lr_scaling" ] || rule=(--lr-scaling "$lr_scaling")
  if [ "$quality" -eq 1 ]; then
    LOG="$out/run-n$n-s$seed.out"
    BENCH=("$bin" train --run-dir "$out/run-n$n-s$seed" --overwrite --seed "$seed" --progress none
           "--quality-targets=$targets" "${rule[@]}" "${batch_option[@]}" "${train_options[@]}")
  else
    LOG="$out/point-$n.out"
    BENCH=("$bin" bench --what train --steps "$steps" --warmup "$warmup" --csv "$out/point-$n.csv" "${rule[@]}"
           "${batch_option[@]}" "${train_options[@]}")
  fi
}

launch_line() {  # the job step of BENCH (bench_of_point's) at $1 ranks, quoted for sbatch --wrap
  local n="$1"
  case "${LAUNCHER:-srun}" in
    srun) printf '%q ' srun --mpi="${SRUN_MPI:-pmix}" --kill-on-bad-exit=1 "${BENCH[@]}" ;;
    mpirun)  # in a folder of the job's own, removed after (See Note [an mpirun's session directory of its own])
      # shellcheck disable=SC2016 # expanded by the job's shell, not here
      printf '%s' 'top="$(mktemp -d "${TMPDIR:-/tmp}/pix2pix-mpirun.XXXXXX")" || exit 1; '
      printf '%q ' mpirun -np "$n" --mca orte_top_session_dir  # the point's ranks, not every slot
      # shellcheck disable=SC2016
      printf '%s' '"$top" '
      printf '%q ' "${BENCH[@]}"
      # shellcheck disable=SC2016
      printf '%s' '; status=$?; rm -rf "$top"; exit $status' ;;
    *) echo "scaling-study.sh: LAUNCHER must be srun or mpirun" >&2; return 1 ;;
  esac
}

# --local: one job here, its output in LOG as under Slurm.
run_here() {
  local n="$1" cores placement root_flags=()
  bench_of_point "$n" "${2:-}" || return 1
  cores="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
  if [ "$n" -le "$cores" ]; then placement=(--bind-to core); else placement=(--oversubscribe --bind-to none); fi
  [ "$(id -u)" -ne 0 ] || root_flags=(--allow-run-as-root)
  echo "scaling-study.sh: point $n${2:+, seed $2}: mpirun -np $n ${placement[*]} on this machine"
  "${MPIRUN:-mpirun}" "${root_flags[@]}" -np "$n" "${placement[@]}" "${BENCH[@]}" >"$LOG" 2>&1
}

jobs_seeds=("")  # the bench's one job a point; --to-quality: a training per seed
[ "$quality" -eq 0 ] || mapfile -t jobs_seeds < <(seq 1 "$seeds")
pids=()
for n in "${points[@]}"; do
  for seed in "${jobs_seeds[@]}"; do
    rm -f "$out/point-$n.csv"
    [ -z "$seed" ] || rm -f "$out/run-n$n-s$seed/summary.json"
    if [ "$local" -eq 1 ]; then
      run_here "$n" "$seed" || echo "scaling-study.sh: point $n${seed:+ seed $seed} failed (see $LOG)" >&2
      continue
    fi
    nodes=$(((n + per_node - 1) / per_node))
    tasks_per_node=$((n < per_node ? n : per_node))
    bench_of_point "$n" "$seed"  # BENCH and LOG, in this shell
    line="$(launch_line "$n")"
    args=(--wait --job-name="scaling-$n${seed:+-s$seed}" --nodes="$nodes" --ntasks="$n"
          --ntasks-per-node="$tasks_per_node" --time="$time_limit" --output="$LOG")
    [ "$cpu" -eq 1 ] || args+=(--gpus-per-task=1)
    echo "scaling-study.sh: point $n${seed:+, seed $seed}: $nodes node(s) x $tasks_per_node: $line"
    if [ "$sequential" -eq 1 ]; then
      sbatch "${args[@]}" --wrap="$line" >/dev/null || echo "scaling-study.sh: point $n${seed:+ seed $seed} failed (see $LOG)" >&2
    else
      sbatch "${args[@]}" --wrap="$line" >/dev/null &
      pids+=("$!")
    fi
  done
done
for pid in "${pids[@]}"; do wait "$pid" || true; done

if [ "$quality" -eq 1 ]; then
  status=0
  for n in "${points[@]}"; do
    for seed in "${jobs_seeds[@]}"; do
      [ -f "$out/run-n$n-s$seed/summary.json" ] && continue
      echo "scaling-study.sh: run-n$n-s$seed has no summary.json: the training failed (see $out/run-n$n-s$seed.out)" >&2
      status=1
    done
  done
  "$(dirname "$0")/collect-quality.sh" "$out" || status=1
  if command -v gnuplot >/dev/null && [ "$(wc -l <"$out/quality.csv")" -gt 1 ]; then
    gnuplot <<PLOT
set terminal png size 900,600
set output "$out/quality.png"
set datafile separator ","
set logscale x 2
set xlabel "GPUs (ranks)"
set ylabel "seconds of training to the best epoch"
set title "pix2pix-mpi $mode scaling to quality (batch $batch${lr_scaling:+, LR $lr_scaling}; median, min-max of $seeds seeds)"
set grid
base_n = real(system("sed -n 2p '$out/quality.csv' | cut -d, -f1"))
base = real(system("sed -n 2p '$out/quality.csv' | cut -d, -f9"))
plot "$out/quality.csv" using 1:9:8:10 with yerrorlines lw 2 pt 7 title "measured", \
     "$out/quality.csv" using 1:(base * base_n / \$1) with lines dt 2 title "ideal"
PLOT
    echo "scaling-study.sh: plot in $out/quality.png"
  else
    echo "scaling-study.sh: no plot (no finished run, or gnuplot missing: apt-get install gnuplot-nox)" >&2
  fi
  [ "$status" -eq 0 ] || { echo "scaling-study.sh: some trainings failed; see $out/run-n*.out" >&2; exit 1; }
  exit 0
fi

# One CSV: every point, with speed-up and efficiency against the smallest point that finished.
{
  echo "gpus,nodes,global_batch,batch_per_rank,images_per_s,speedup,efficiency,ms_per_step,sync_share,threads_per_rank"
  for n in "${points[@]}"; do [ -f "$out/point-$n.csv" ] && tail -n +2 "$out/point-$n.csv"; done |
    sort -t, -k1,1n |
    awk -F, 'NR == 1 { base_n = $1; base = $7 }
             { s = $7 / base; printf "%s,%s,%s,%s,%.2f,%.3f,%.3f,%s,%s,%s\n", $1, $2, $3, $4, $7, s, s * base_n / $1, $8, $9, $13 }'
} >"$out/scaling.csv"
done_points=$(($(wc -l <"$out/scaling.csv") - 1))
echo "scaling-study.sh: $done_points of ${#points[@]} points in $out/scaling.csv"
column -s, -t "$out/scaling.csv" 2>/dev/null || cat "$out/scaling.csv"

if command -v gnuplot >/dev/null && [ "$done_points" -gt 0 ]; then
  gnuplot <<PLOT
set terminal png size 900,600
set output "$out/scaling.png"
set datafile separator ","
set key autotitle columnhead left top
set logscale x 2
set xlabel "GPUs (ranks)"
set ylabel "images/s"
set title "pix2pix-mpi $mode scaling (batch $batch)"
set grid
base_n = real(system("sed -n 2p '$out/scaling.csv' | cut -d, -f1"))
base = real(system("sed -n 2p '$out/scaling.csv' | cut -d, -f5"))
plot "$out/scaling.csv" using 1:5 with linespoints lw 2 pt 7 title "measured", \
     "$out/scaling.csv" using 1:(base * \$1 / base_n) with lines dt 2 title "ideal"
PLOT
  echo "scaling-study.sh: plot in $out/scaling.png"
else
  echo "scaling-study.sh: no plot (gnuplot missing: apt-get install gnuplot-nox)" >&2
fi
[ "$done_points" -eq "${#points[@]}" ] || { echo "scaling-study.sh: some points failed; see $out/point-*.out" >&2; exit 1; }
