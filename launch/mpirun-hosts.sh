#!/usr/bin/env bash
# `pix2pix train` across nodes with Open MPI, one rank per slot of the hostfile.
# Usage: launch/mpirun-hosts.sh HOSTFILE [pix2pix train options]
# HOSTFILE lines: "node1 slots=4" (slots = GPUs, or cores for CPU runs). NP overrides the rank
# count. NCCL_*, OMP_*, OPENBLAS_*, CUDA_VISIBLE_DEVICES, HDF5_* and PIX2PIX_* variables set here
# are passed to every rank. Standard output not a terminal (a log): --progress lines unless the
# options choose. MPIRUN_ARGS adds mpirun options (e.g. "--mca btl_tcp_if_include ib0").
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ $# -lt 1 ] || [ ! -f "$1" ]; then
  echo "usage: $0 HOSTFILE [pix2pix train options]" >&2
  exit 2
fi
hostfile="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; shift
bin="${PIX2PIX_BIN:-$here/../build/bin/pix2pix}"
np="${NP:-$(awk '!/^[[:space:]]*(#|$)/ { s = 1; for (i = 2; i <= NF; ++i) if ($i ~ /^slots=/) { split($i, kv, "="); s = kv[2] } n += s } END { print n + 0 }' "$hostfile")}"
[ "$np" -gt 0 ] || { echo "$0: $hostfile names no slots" >&2; exit 1; }

export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
args=(-np "$np" --hostfile "$hostfile" --map-by slot)
[ "$(id -u)" = 0 ] && args+=(--allow-run-as-root)
while IFS='=' read -r name _; do
  case "$name" in
    NCCL_*|OMP_*|OPENBLAS_*|CUDA_VISIBLE_DEVICES|HDF5_*|PIX2PIX_*) args+=(-x "$name") ;;
  esac
done < <(env)
# shellcheck disable=SC2206
extra=(${MPIRUN_ARGS:-})
# A log, not a terminal: mpirun gives rank 0 a pseudo-terminal, so --progress auto would draw its
# bar, carriage returns and all, into the file. One line every 10 s instead, unless the options say.
if [ ! -t 1 ] && ! printf '%s\n' "$@" | grep -qE '^--progress(=|$)'; then set -- "$@" --progress lines; fi
# See Note [an mpirun's session directory of its own]
# shellcheck source=launch/mpirun-session.sh
source "$here/mpirun-session.sh"
exec mpirun "${args[@]}" "${mpirun_session_args[@]}" "${extra[@]}" "$bin" train "$@"
