#!/bin/bash
# Our training step against PyTorch's on the same networks and data (issue 10): the reference
# Pix2Pix (U-Net + 70x70 PatchGAN, batch norm, dropout, ngf = ndf = 64) at 128x128 with batch 4
# and 256x256 with batch 1 per process, one process and two (ours: MPI; PyTorch:
# DistributedDataParallel over gloo), one thread per process, each process bound to its own core.
# Configurations are interleaved (ours, PyTorch, ours, PyTorch, ...) and repeated; the table gives
# the median images/s with min-max, and our ratio to PyTorch. Not part of CI: it takes minutes.
#
# pix2pix keeps freed memory in its heap (See Note [freed memory stays in the heap]); PyTorch, as its
# users run it, does not. --tuned-pytorch adds a column of PyTorch with the same glibc settings
# (MALLOC_MMAP_MAX_=0, no trimming), to tell the allocator's share from the rest.
#
#   bench/compare-pytorch.sh [--rounds N] [--steps N] [--warmup N] [--bin build/bin/pix2pix] [--tuned-pytorch]
# Needs Debian's python3-torch and python3-h5py (PyTorch is run with /usr/bin/python3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
bin=$root/build/bin/pix2pix
rounds=3 steps=8 warmup=2 tuned=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --tuned-pytorch) tuned=1; shift ;;
    *) echo "compare-pytorch.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
python=/usr/bin/python3
[[ -x $bin ]] || { echo "compare-pytorch.sh: $bin is missing: build first (cmake --build build)" >&2; exit 1; }
$python -c 'import torch, h5py' 2>/dev/null ||
  { echo "compare-pytorch.sh: $python cannot import torch and h5py: apt-get install python3-torch python3-h5py" >&2; exit 1; }
command -v mpirun >/dev/null || { echo "compare-pytorch.sh: mpirun is missing" >&2; exit 1; }

work=$(mktemp -d /tmp/compare-pytorch.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
mpi=(mpirun --oversubscribe --bind-to core -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)

# 80 Fashion-MNIST images (edges -> image, RGB) per size; 72 train pairs cycle through the steps.
for side in 128 256; do
  "$bin" prepare --config "$root/configs/prepare-fashion-edges.ini" --limit 80 --size $side --channels 3 \
    --out "$work/fe$side.h5" >/dev/null
done

ours() {  # side batch procs -> images/s
  local out
  out=$("${mpi[@]}" -np "$3" "$bin" bench --what train --data "$work/fe$1.h5" --preprocess none \
    --batch-size "$2" --device cpu --steps "$steps" --warmup "$warmup" 2>&1) || { echo "$out" >&2; return 1; }
  sed -n 's/^images\/s \([0-9.]*\).*/\1/p' <<<"$out"
}
theirs() {  # side batch procs [tuned] -> images/s
  local args=(--data "$work/fe$1.h5" --batch-size "$2" --steps "$steps" --warmup "$warmup")
  local env=()
  [[ ${4:-} == tuned ]] && env=(MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736)
  if [[ $3 -eq 1 ]]; then
    env "${env[@]}" taskset -c 0 $python "$here/pytorch_pix2pix.py" "${args[@]}"
  else
    local port=$((29500 + RANDOM % 1000)) pids=() r
    for ((r = 0; r < $3; r++)); do
      env "${env[@]}" MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r WORLD_SIZE=$3 \
        taskset -c $r $python "$here/pytorch_pix2pix.py" "${args[@]}" --ddp >"$work/ddp$r.out" 2>&1 &
      pids+=($!)
    done
    for r in "${pids[@]}"; do wait "$r" || { cat "$work"/ddp*.out >&2; return 1; }; done
    cat "$work/ddp0.out"
  fi | sed -n 's/^images\/s \([0-9.]*\).*/\1/p'
}

configs=("128 4 1" "128 4 2" "256 1 1" "256 1 2")
echo "# $(date -u +%FT%TZ) $(uname -n), $(nproc --all) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $rounds rounds x ${#configs[@]} configurations, $steps timed steps after $warmup, 1 thread per process"
for ((round = 1; round <= rounds; round++)); do
  for c in "${configs[@]}"; do
    read -r side batch procs <<<"$c"
    o=$(ours $side $batch $procs)
    t=$(theirs $side $batch $procs)
    u=-
    [[ $tuned -eq 1 ]] && u=$(theirs $side $batch $procs tuned)
    echo "$side $batch $procs $o $t $u" | tee -a "$work/results"
  done
done
$python - "$work/results" <<'PY'
import sys, statistics
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def fmt(v): return "%.3f (%.3f-%.3f)" % (statistics.median(v), min(v), max(v))
tuned = all(len(r) > 5 and r[5] != "-" for r in rows)
head = "| configuration | PyTorch | ours | ours / PyTorch |"
if tuned:
    head += " PyTorch, heap kept | ours / that |"
print("\n" + head + "\n" + "|---" * (head.count("|") - 1) + "|")
seen = []
for r in rows:
    if tuple(r[:3]) not in seen: seen.append(tuple(r[:3]))
for key in seen:
    side, batch, procs = key
    mine = [r for r in rows if tuple(r[:3]) == key]
    o = [float(r[3]) for r in mine]
    t = [float(r[4]) for r in mine]
    ratios = [a / b for a, b in zip(o, t)]  # per round: side by side
    name = "%sx%s, batch %s%s, %s process%s" % (side, side, batch, " per process" if procs != "1" else "", procs,
                                             "es" if procs != "1" else "")
    line = "| %s | %s%s | %s | %s |" % (name, fmt(t), " (DDP)" if procs != "1" else "", fmt(o), fmt(ratios))
    if tuned:
        u = [float(r[5]) for r in mine]
        line += " %s | %s |" % (fmt(u), fmt([a / b for a, b in zip(o, u)]))
    print(line)
PY
