#!/usr/bin/env bash
# See Note [one thread budget per rank], end to end: the start-up line of one process and of 2 ranks
# says where the count came from; OMP_NUM_THREADS alone leaves OpenBLAS at one thread (the header
# reports what openblas_get_num_threads says after the trainer set it); 2 unbound ranks share the
# cores; ranks x threads beyond the node's cores are warned about, and so are ranks beyond them
# whose waits spin; --threads wins and a bad value is a usage error naming it.
set -euo pipefail
bin="$1"
shift
mpirun=("$@")
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS SLURM_CPUS_PER_TASK
cores="$(nproc)"  # the affinity mask ctest gave us
unit=cores
[ "$cores" = 1 ] && unit=core  # the warnings say "1 core"

"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 60 --out "$dir/d.h5" >/dev/null 2>&1
bench=(bench --what train --config "$root/configs/smoke.cfg" --data "$dir/d.h5" --steps 1 --warmup 0)
expect() {  # expect LOG TEXT
  grep -qF -- "$2" "$1" || { cat "$1"; echo "expected: $2"; exit 1; }
}
min() { echo $(($1 < $2 ? $1 : $2)); }
# OpenBLAS is held to one thread; with another BLAS (pip's LibTorch has MKL) the header says so.
# Debian's libblas.so.3 may be OpenBLAS through the alternatives' links: the files are what count.
blas="BLAS 1"
loaded="$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | xargs readlink -f)"
grep -qi openblas <<<"$loaded" || blas="BLAS (not OpenBLAS: its own setting)"

"$bin" "${bench[@]}" >"$dir/alone.log" 2>&1 || { cat "$dir/alone.log"; exit 1; }
expect "$dir/alone.log" "# threads $cores per rank: intra-op $cores, $blas (auto: $cores core"
OMP_NUM_THREADS=2 "$bin" "${bench[@]}" >"$dir/omp.log" 2>&1 || { cat "$dir/omp.log"; exit 1; }
two=$(min 2 "$cores")
expect "$dir/omp.log" "# threads $two per rank: intra-op $two, $blas (from OMP_NUM_THREADS=2)"
OMP_NUM_THREADS=2 "$bin" "${bench[@]}" --threads 1 >"$dir/option.log" 2>&1 || { cat "$dir/option.log"; exit 1; }
expect "$dir/option.log" "# threads 1 per rank: intra-op 1, $blas (from --threads 1)"
echo "one process: OK (auto $cores, OMP_NUM_THREADS=2 -> $two + $blas, --threads wins)"

# 2 ranks, not bound: each sees every core and takes its half.
"${mpirun[@]}" -np 2 --bind-to none "$bin" "${bench[@]}" >"$dir/two.log" 2>&1 || { cat "$dir/two.log"; exit 1; }
half=$((cores / 2 > 0 ? cores / 2 : 1))
expect "$dir/two.log" "# threads $half per rank: intra-op $half, $blas (auto: $cores core"
[ "$cores" -eq 1 ] || expect "$dir/two.log" "shared by 2 ranks of this node)"
if grep -q "intra-op threads on" "$dir/two.log"; then cat "$dir/two.log"; echo "warned with auto threads"; exit 1; fi
# On one core the threads are capped at it, so 2 ranks cannot run more threads than ranks (the
# ranks beyond the cores are the spinning case below).
if [ "$cores" -gt 1 ]; then
  OMP_NUM_THREADS="$cores" "${mpirun[@]}" -np 2 --bind-to none -x OMP_NUM_THREADS "$bin" "${bench[@]}" >"$dir/over.log" 2>&1 ||
    { cat "$dir/over.log"; exit 1; }
  expect "$dir/over.log" "warning: the 2 ranks on"
  expect "$dir/over.log" "run $((2 * cores)) intra-op threads on $cores $unit: the node is oversubscribed"
  [ "$(grep -c "intra-op threads on" "$dir/over.log")" -eq 1 ] || { cat "$dir/over.log"; echo "warned more than once"; exit 1; }
fi
echo "two ranks: OK ($half each by default; 2 x $cores warned about once)"

# See Note [waiting ranks that spin]: more ranks than cores, where a hostfile's slots hide it from
# Open MPI, are warned about once; not where Open MPI was told (OMPI_MCA_mpi_yield_when_idle=1) or
# knows (more ranks than slots: mpirun --oversubscribe).
# A batch of one image a rank: the 54 training pairs serve a node of up to 53 cores.
over=$((cores + 1))
echo "localhost slots=$over" >"$dir/hostfile"
spin=(--bind-to none -np "$over" "$bin" "${bench[@]}" --threads 1 --batch-size 1)
spins="waits spin (Open MPI's mpi_yield_when_idle is off"
env -u OMPI_MCA_mpi_yield_when_idle "${mpirun[@]}" --hostfile "$dir/hostfile" "${spin[@]}" >"$dir/spin.log" 2>&1 ||
  { cat "$dir/spin.log"; exit 1; }
expect "$dir/spin.log" "warning: the $over ranks on"
expect "$dir/spin.log" "share $cores $unit, and their $spins"
[ "$(grep -c "waits spin" "$dir/spin.log")" -eq 1 ] || { cat "$dir/spin.log"; echo "warned more than once"; exit 1; }
if grep -q "intra-op threads on" "$dir/spin.log"; then # one thread each: fewer threads cannot help
  cat "$dir/spin.log"
  echo "advised fewer threads to ranks of one thread"
  exit 1
fi
OMPI_MCA_mpi_yield_when_idle=1 "${mpirun[@]}" --hostfile "$dir/hostfile" "${spin[@]}" >"$dir/told.log" 2>&1 ||
  { cat "$dir/told.log"; exit 1; }
env -u OMPI_MCA_mpi_yield_when_idle "${mpirun[@]}" "${spin[@]}" >"$dir/knows.log" 2>&1 || { cat "$dir/knows.log"; exit 1; }
for log in told knows; do
  if grep -q "waits spin" "$dir/$log.log"; then cat "$dir/$log.log"; echo "$log: warned of spinning"; exit 1; fi
done
echo "$over ranks on $cores cores: OK (spinning warned about once; not where Open MPI yields)"

status=0
"$bin" "${bench[@]}" --threads -1 >"$dir/bad.log" 2>&1 || status=$?
[ "$status" -eq 2 ] || { cat "$dir/bad.log"; echo "--threads -1: status $status"; exit 1; }
expect "$dir/bad.log" "--threads"
echo "--threads -1: usage error (2)"
