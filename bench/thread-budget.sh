#!/bin/bash
# The thread budget (issue 30, See Note [one thread budget per rank]): one process on all the cores
# of this machine with only OMP_NUM_THREADS set, against the same with OPENBLAS_NUM_THREADS=1 added
# (what a user had to know before), and the default with nothing set; optionally the same
# configurations of an older binary (--old BIN: the build before the budget) beside them, and
# 2 ranks with OMP_NUM_THREADS=1. Configurations interleaved per round (A B C ... A B C ...),
# images/s min/median/max over --rounds, and each one's ratio to "OMP + OPENBLAS=1" per round.
# Not part of CI: it takes minutes.
#
#   bench/thread-budget.sh [--old BIN] [--rounds N] [--steps N] [--size S] [--batch B] [--ngf N]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=$root/build/bin/pix2pix old="" rounds=3 steps=10 warmup=2 size=128 batch=4 ngf=16
while [[ $# -gt 0 ]]; do
  case $1 in
    --old) old=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --ngf) ngf=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "thread-budget.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS SLURM_CPUS_PER_TASK
cores=$(nproc)
mpirun=(mpirun -np 2 --bind-to core)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
echo "# $(uptime); $cores cores; $(lscpu | sed -n 's/^Model name: *//p')"
"$bin" prepare --images idx:/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz --derive edges \
  --size "$size" --limit 1200 --out "$work/d.h5" >/dev/null 2>&1
# name | binary | environment | launcher
configs=("after: OMP=$cores|$bin|OMP_NUM_THREADS=$cores|"
         "after: OMP=$cores OPENBLAS=1|$bin|OMP_NUM_THREADS=$cores OPENBLAS_NUM_THREADS=1|"
         "after: nothing set|$bin||"
         "after: 2 ranks, OMP=1|$bin|OMP_NUM_THREADS=1|mpi")
if [ -n "$old" ]; then
  configs+=("before: OMP=$cores|$old|OMP_NUM_THREADS=$cores|"
            "before: OMP=$cores OPENBLAS=1|$old|OMP_NUM_THREADS=$cores OPENBLAS_NUM_THREADS=1|"
            "before: nothing set|$old||"
            "before: 2 ranks, OMP=1|$old|OMP_NUM_THREADS=1|mpi")
fi
measure() {  # binary environment launcher
  local launch=()
  [ "$3" = mpi ] && launch=("${mpirun[@]}" -x OMP_NUM_THREADS)
  env $2 "${launch[@]}" "$1" bench --what train --data "$work/d.h5" --batch-size "$batch" --ngf "$ngf" \
    --ndf "$ngf" --steps "$steps" --warmup "$warmup" >"$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
  sed -n 's/^images\/s \([0-9.]*\).*/\1/p' "$work/out"
}
for ((r = 1; r <= rounds; ++r)); do
  for i in "${!configs[@]}"; do
    IFS='|' read -r name binary environment launcher <<<"${configs[$i]}"
    echo "$r|$i|$(measure "$binary" "$environment" "$launcher")" >>"$work/results"
  done
done
echo "# ${size}x${size}; batch $batch per process, ngf = ndf = $ngf, $steps timed steps after $warmup, $rounds rounds"
printf '%-34s %-26s %s\n' configuration "images/s min/median/max" "/ (after: OMP + OPENBLAS=1) median"
for i in "${!configs[@]}"; do
  IFS='|' read -r name _ <<<"${configs[$i]}"
  values=$(awk -F'|' -v i="$i" '$2 == i { print $3 }' "$work/results" | sort -g | tr '\n' ' ')
  ratios=$(awk -F'|' -v i="$i" '$2 == 1 { ref[$1] = $3 } $2 == i { v[$1] = $3 }
                                END { for (r in v) print v[r] / ref[r] }' "$work/results" | sort -g | tr '\n' ' ')
  stats=$(echo "$values" | awk '{ printf "%.2f / %.2f / %.2f", $1, $(int((NF + 1) / 2)), $NF }')
  ratio=$(echo "$ratios" | awk '{ printf "%.2f (%.2f-%.2f)", $(int((NF + 1) / 2)), $1, $NF }')
  printf '%-34s %-26s %s\n' "$name" "$stats" "$ratio"
done
