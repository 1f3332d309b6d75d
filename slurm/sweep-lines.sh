#!/bin/bash
# The number of runs in a sweep file (its lines that are neither blank nor # comments), for
# sbatch --array=1-N.
set -euo pipefail
[ $# -eq 1 ] && [ -f "$1" ] || { echo "usage: $0 SWEEP_FILE" >&2; exit 2; }
grep -v '^[[:space:]]*#' "$1" | grep -vc '^[[:space:]]*$'
