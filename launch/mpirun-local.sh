#!/usr/bin/env bash
# N ranks of `pix2pix train` on this node.
# Usage: launch/mpirun-local.sh N [pix2pix train options]
# CPU: one BLAS/OpenMP thread per rank, each rank bound to a core (oversubscribed, unbound, when
# N exceeds the cores). GPU: one rank per GPU (rank i takes local GPU i; --device cuda).
# Standard output not a terminal (a log): --progress lines unless the options choose.
# PIX2PIX_BIN overrides the binary; PIX2PIX_BIND overrides --bind-to (core | socket | none);
# PIX2PIX_CPU_SET=LIST (e.g. 2,3) keeps the ranks on those cores (mpirun --cpu-set), so that jobs
# started side by side (launch/sweep-local.sh) do not all bind to core 0.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -lt 1 ] || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 N [pix2pix train options]" >&2
  exit 2
fi
n="$1"; shift
bin="${PIX2PIX_BIN:-$here/../build/bin/pix2pix}"
[ -x "$bin" ] || { echo "$0: $bin is not built (cmake --build build, or set PIX2PIX_BIN)" >&2; exit 1; }

# nproc honours OMP_NUM_THREADS: count the cores before the one-thread-per-rank setting.
cores="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
args=(-np "$n")
[ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)
bind="${PIX2PIX_BIND:-core}"
cpu_set="${PIX2PIX_CPU_SET:-}"
if [ -n "$cpu_set" ]; then
  [[ "$cpu_set" =~ ^[0-9]+(,[0-9]+)*$ ]] ||
    { echo "$0: PIX2PIX_CPU_SET must be a comma-separated list of core numbers (got '$cpu_set')" >&2; exit 2; }
  cores="$(tr , '\n' <<<"$cpu_set" | sort -u | wc -l)"
  args+=(--cpu-set "$cpu_set")
fi
if [ "$n" -gt "$cores" ]; then
  args+=(--oversubscribe)
  bind=none
fi
args+=(--bind-to "$bind" -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS)
# A log, not a terminal: mpirun gives rank 0 a pseudo-terminal, so --progress auto would draw its
# bar, carriage returns and all, into the file. One line every 10 s instead, unless the options say.
if [ ! -t 1 ] && ! printf '%s\n' "$@" | grep -qE '^--progress(=|$)'; then set -- "$@" --progress lines; fi
# See Note [an mpirun's session directory of its own]
# shellcheck source=launch/mpirun-session.sh
source "$here/mpirun-session.sh"
args+=("${mpirun_session_args[@]}")
echo "mpirun-local: mpirun ${args[*]} $bin train $*" >&2
exec mpirun "${args[@]}" "$bin" train "$@"
