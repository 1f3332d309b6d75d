#!/usr/bin/env bash
# The README's main job: install what is missing, build, and prepare the default dataset
# (Fashion-MNIST from Debian's dataset-fashion-mnist: edges → image, 32x32, with a validation
# split) as data/fashion-edges.h5, then describe and check it. Training is added by issue #3.
# Usage: launch/quickstart.sh [--force]   (--force rebuilds the dataset file)
set -euo pipefail
cd "$(dirname "$0")/.."

force=0
[ "${1:-}" = "--force" ] && force=1

bash scripts/install-deps.sh
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target pix2pix

data=data/fashion-edges.h5
mkdir -p data
if [ ! -f "$data" ] || [ "$force" = 1 ]; then
  build/bin/pix2pix prepare --config configs/prepare-fashion-edges.ini \
    --threads "$(nproc)" --overwrite --out "$data"
else
  echo "quickstart: $data exists (pass --force to rebuild it)"
fi
build/bin/pix2pix inspect "$data" --check
