#!/usr/bin/env bash
# The README's main job: install what is missing, build, prepare the default dataset
# (Fashion-MNIST from Debian's dataset-fashion-mnist: edges → image, 32x32, with a validation
# split) as data/fashion-edges.h5, then train with 2 ranks on CPU with PSNR early stopping
# (configs/quickstart.cfg). RANKS overrides the rank count.
# Usage: launch/quickstart.sh [--force] [extra pix2pix train options]
#   --force   rebuild the dataset file and start a fresh run directory
set -euo pipefail
cd "$(dirname "$0")/.."

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi

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

run=runs/quickstart
[ "$force" = 1 ] && rm -rf "$run"
# --resume auto continues an interrupted quickstart; a finished one starts again only with --force.
if [ -f "$run/summary.json" ] && [ "$force" = 0 ]; then
  echo "quickstart: $run already finished (pass --force to train again):"
  cat "$run/summary.json"
  exit 0
fi
launch/mpirun-local.sh "${RANKS:-2}" --config configs/quickstart.cfg --run-dir "$run" --resume auto "$@"

echo
echo "quickstart: done. Look at:"
echo "  $run/samples/            validation rows A | G(A) | B per epoch"
echo "  $run/metrics.csv         losses, PSNR (raw and smoothed), SSIM per epoch"
echo "  $run/checkpoints/best_generator.pt   the best model (weights only)"
echo "  $run/summary.json        stop reason, best epoch and PSNR, baseline PSNR"
