#!/usr/bin/env bash
# A sweep file on this node, without Slurm: line i of `pix2pix train` options (blank lines and #
# comments skipped, as slurm/sweep.sbatch reads them) trains into OUT/task-<iii> through
# launch/mpirun-local.sh, with --resume auto and --progress lines unless the options name their
# own; then `slurm/collect-sweep.sh OUT` prints the table, as for a Slurm sweep.
#
#   launch/sweep-local.sh SWEEP_FILE OUT [common train options]
#   e.g. JOBS=2 launch/sweep-local.sh configs/fashion-batch-study.sweep runs/batch-study \
#          --config configs/quickstart.cfg --max-epochs 100
#
# Environment: RANKS (1) ranks per line; JOBS (1) lines at once. Each running line has RANKS cores
# of its own (PIX2PIX_CPU_SET), so JOBS x RANKS must not exceed the cores. PIX2PIX_BIN as in
# launch/mpirun-local.sh.
# A line whose OUT/task-<iii>/summary.json exists is finished and skipped: run the same command
# again to finish a sweep that was cut short (an interrupted line resumes from its checkpoint).
# A line that fails is reported with the tail of its log (OUT/task-<iii>.log) and the others go on.
# SIGTERM/SIGINT stop the running lines gracefully (each checkpoints) and the sweep with status 75.
# Exit status: 0 every line finished, 1 a line failed, 2 usage, 75 stopped.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
usage() { echo "usage: [RANKS=R] [JOBS=J] $0 SWEEP_FILE OUT [common train options]" >&2; exit 2; }
[ $# -ge 2 ] || usage
sweep="$1" out="$2"
shift 2
[ -f "$sweep" ] || { echo "$0: no sweep file '$sweep'" >&2; exit 2; }
ranks="${RANKS:-1}" jobs="${JOBS:-1}"
[[ "$ranks" =~ ^[1-9][0-9]*$ ]] || { echo "$0: RANKS must be a positive integer (got '$ranks')" >&2; exit 2; }
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { echo "$0: JOBS must be a positive integer (got '$jobs')" >&2; exit 2; }
cores="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
if [ $((ranks * jobs)) -gt "$cores" ]; then
  echo "$0: JOBS=$jobs lines of RANKS=$ranks ranks need $((ranks * jobs)) cores; this node has $cores" >&2
  exit 2
fi
mapfile -t lines < <(grep -v '^[[:space:]]*#' "$sweep" | grep -v '^[[:space:]]*$')
[ ${#lines[@]} -gt 0 ] || { echo "$0: $sweep has no lines" >&2; exit 2; }
has_option() { # $1: an option; the rest: a command line
  local want="$1" option
  shift
  for option in "$@"; do [ "$option" = "$want" ] && return 0; done
  return 1
}
mkdir -p "$out" || exit 1

# Slot s runs one line at a time on cores s*RANKS .. s*RANKS+RANKS-1.
declare -A slot_pid=() pid_task=()
failed=0
# SIGTERM/SIGINT: the running lines stop gracefully (mpirun passes the signal to the ranks, which
# checkpoint and exit 75) and so does the sweep; the same command continues it.
stop_sweep() {
  local pid
  for pid in "${!pid_task[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${!pid_task[@]}"; do wait "$pid"; done
  echo "sweep-local: stopped by a signal; unfinished lines kept their checkpoints, run the same command again to continue" >&2
  exit 75
}
trap stop_sweep TERM INT
finish() { # $1: a finished pid
  local pid="$1" task="${pid_task[$1]}" status=0
  wait "$pid" || status=$?
  if [ "$status" -eq 0 ]; then
    echo "sweep-local: task $task finished ($(date +%T))"
  else
    echo "sweep-local: task $task failed with status $status; the end of $out/task-$task.log:" >&2
    tail -n 15 "$out/task-$task.log" >&2
    failed=1
  fi
  unset "pid_task[$pid]"
}
for i in "${!lines[@]}"; do
  task="$(printf %03d $((i + 1)))"
  if [ -f "$out/task-$task/summary.json" ]; then
    echo "sweep-local: task $task already finished, skipped"
    continue
  fi
  # Wait for a free slot.
  while :; do
    free=""
    for ((s = 0; s < jobs; s++)); do
      pid="${slot_pid[$s]:-}"
      if [ -z "$pid" ]; then free=$s; break; fi
      if ! kill -0 "$pid" 2>/dev/null; then finish "$pid"; slot_pid[$s]=""; free=$s; break; fi
    done
    [ -n "$free" ] && break
    # Polled, not `wait -n`: a job that wait -n reaps is gone for the `wait PID` that reads its status.
    sleep 1
  done
  read -r -a options <<<"${lines[$i]}"
  options+=("$@")
  has_option --resume "${options[@]}" || options+=(--resume auto)
  has_option --progress "${options[@]}" || options+=(--progress lines)
  first=$((free * ranks))
  echo "sweep-local: task $task on cores $first-$((first + ranks - 1)): ${lines[$i]}"
  # The lines start together; mpirun-local.sh gives each mpirun a session directory of its own:
  # See Note [an mpirun's session directory of its own]
  PIX2PIX_CPU_SET="$(seq -s, "$first" $((first + ranks - 1)))" \
    "$here/mpirun-local.sh" "$ranks" --run-dir "$out/task-$task" "${options[@]}" >>"$out/task-$task.log" 2>&1 &
  slot_pid[$free]=$!
  pid_task[$!]="$task"
done
for pid in "${!pid_task[@]}"; do finish "$pid"; done
exit "$failed"
