#!/usr/bin/env bash
# launch/mpirun-local.sh and launch/mpirun-hosts.sh start real 2-rank training jobs (smoke config)
# and the run directory shows 2 ranks; bad arguments are refused with usage and status 2.
set -euo pipefail
bin="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
export PIX2PIX_BIN="$bin"

"$bin" prepare --images idx:/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 120 --out "$dir/d.h5" >/dev/null 2>&1

"$root/launch/mpirun-local.sh" 2 --config "$root/configs/smoke.cfg" --data "$dir/d.h5" --run-dir "$dir/local" \
  >"$dir/local.log" 2>&1 || { cat "$dir/local.log"; exit 1; }
grep -q '"world": 2' "$dir/local/summary.json" || { cat "$dir/local/summary.json"; echo "local run was not 2 ranks"; exit 1; }
# One rank per core where there are enough cores, counted whatever OMP_NUM_THREADS says (nproc
# alone honours it: with OMP_NUM_THREADS=1 every 2-rank run was oversubscribed and unbound).
if [ "$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)" -ge 2 ]; then want="--bind-to core"; else want="--oversubscribe --bind-to none"; fi
grep -q -- "mpirun-local: mpirun -np 2 .*$want" "$dir/local.log" ||
  { grep 'mpirun-local:' "$dir/local.log"; echo "launcher did not use $want"; exit 1; }

# The 2-rank run continues on one process: replicated state, the log says the global batch changed.
"$bin" train --config "$root/configs/smoke.cfg" --data "$dir/d.h5" --run-dir "$dir/local" --resume auto \
  --max-epochs 3 >"$dir/resume.log" 2>&1 || { cat "$dir/resume.log"; exit 1; }
grep -q 'global batch changed from 16 (2 ranks) to 8 (1 ranks)' "$dir/resume.log" || { cat "$dir/resume.log"; exit 1; }
grep -q '"world": 1' "$dir/local/summary.json" && [ "$(tail -n +2 "$dir/local/metrics.csv" | wc -l)" = 3 ] \
  || { cat "$dir/local/metrics.csv"; echo "resumed run did not add epoch 2"; exit 1; }

echo "localhost slots=2" >"$dir/hosts"
"$root/launch/mpirun-hosts.sh" "$dir/hosts" --config "$root/configs/smoke.cfg" --data "$dir/d.h5" \
  --run-dir "$dir/hosts-run" --global-batch 16 >"$dir/hosts.log" 2>&1 || { cat "$dir/hosts.log"; exit 1; }
grep -q '"global_batch": 16' "$dir/hosts-run/summary.json" || { echo "hosts run: wrong global batch"; exit 1; }
grep -q 'rank 1  host' "$dir/hosts.log" || { cat "$dir/hosts.log"; echo "no per-rank start-up table"; exit 1; }

set +e
"$root/launch/mpirun-local.sh" two >/dev/null 2>&1; s1=$?
"$root/launch/mpirun-hosts.sh" "$dir/nowhere" >/dev/null 2>&1; s2=$?
set -e
[ "$s1" = 2 ] && [ "$s2" = 2 ] || { echo "bad arguments gave $s1 / $s2, expected 2"; exit 1; }
echo "launchers: OK"
