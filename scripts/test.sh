#!/usr/bin/env bash
# The README's test command: install what is missing, configure, build, run every test
# (unit tests and the real `mpirun -np 2` cases) through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
# One BLAS/OpenMP thread per process: on CPU, parallelism comes from ranks (docs/performance.md).
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
jobs="$(nproc)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"
