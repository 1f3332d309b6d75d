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
# Everything after -- goes to `pix2pix bench --what train` (i.e. the `pix2pix train` options).
# Environment: PIX2PIX_BIN, LAUNCHER=srun|mpirun, SRUN_MPI (as train.sbatch); SBATCH_PARTITION,
# SBATCH_ACCOUNT and other SBATCH_* variables reach every sbatch call.
set -euo pipefail

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
max=0 per_node=4 mode=strong batch="" steps=50 warmup=5 time_limit=00:20:00 cpu=0 sequential=0 out="" local=0
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
    --) shift; break ;;
    -h | --help) usage ;;
    *) echo "scaling-study.sh: unknown option '$1'" >&2; usage ;;
  esac
done
train_options=("$@")
[[ "$max" =~ ^[1-9][0-9]*$ ]] || { echo "scaling-study.sh: --max-gpus N (N >= 1) is required" >&2; exit 2; }
[[ "$per_node" =~ ^[1-9][0-9]*$ ]] || { echo "scaling-study.sh: --gpus-per-node must be >= 1" >&2; exit 2; }
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

# The bench of one point (as an array in BENCH): its batch option for the mode, its CSV.
bench_of_point() {
  local n="$1" batch_option
  if [ "$mode" = strong ]; then
    if [ $((batch % n)) -ne 0 ]; then echo "scaling-study.sh: --batch $batch does not divide by $n ranks" >&2; return 1; fi
    batch_option=(--global-batch "$batch")
  else
    batch_option=(--batch-size "$batch")
  fi
  BENCH=("$bin" bench --what train --steps "$steps" --warmup "$warmup" --csv "$out/point-$n.csv" "${batch_option[@]}" "${train_options[@]}")
}

launch_line() {  # the job step of one point, quoted for sbatch --wrap
  bench_of_point "$1" || return 1
  case "${LAUNCHER:-srun}" in
    srun) printf '%q ' srun --mpi="${SRUN_MPI:-pmix}" --kill-on-bad-exit=1 "${BENCH[@]}" ;;
    mpirun) printf '%q ' mpirun "${BENCH[@]}" ;;
    *) echo "scaling-study.sh: LAUNCHER must be srun or mpirun" >&2; return 1 ;;
  esac
}

# --local: one point here, its output in point-N.out as under Slurm.
run_here() {
  local n="$1" cores placement root_flags=()
  bench_of_point "$n" || return 1
  cores="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
  if [ "$n" -le "$cores" ]; then placement=(--bind-to core); else placement=(--oversubscribe --bind-to none); fi
  [ "$(id -u)" -ne 0 ] || root_flags=(--allow-run-as-root)
  echo "scaling-study.sh: point $n: mpirun -np $n ${placement[*]} on this machine"
  "${MPIRUN:-mpirun}" "${root_flags[@]}" -np "$n" "${placement[@]}" "${BENCH[@]}" >"$out/point-$n.out" 2>&1
}

pids=()
for n in "${points[@]}"; do
  if [ "$local" -eq 1 ]; then
    rm -f "$out/point-$n.csv"
    run_here "$n" || echo "scaling-study.sh: point $n failed (see $out/point-$n.out)" >&2
    continue
  fi
  nodes=$(((n + per_node - 1) / per_node))
  tasks_per_node=$((n < per_node ? n : per_node))
  rm -f "$out/point-$n.csv"
  args=(--wait --job-name="scaling-$n" --nodes="$nodes" --ntasks="$n" --ntasks-per-node="$tasks_per_node"
        --time="$time_limit" --output="$out/point-$n.out")
  [ "$cpu" -eq 1 ] || args+=(--gpus-per-task=1)
  line="$(launch_line "$n")"
  echo "scaling-study.sh: point $n: $nodes node(s) x $tasks_per_node: $line"
  if [ "$sequential" -eq 1 ]; then
    sbatch "${args[@]}" --wrap="$line" >/dev/null || echo "scaling-study.sh: point $n failed (see $out/point-$n.out)" >&2
  else
    sbatch "${args[@]}" --wrap="$line" >/dev/null &
    pids+=("$!")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || true; done

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
