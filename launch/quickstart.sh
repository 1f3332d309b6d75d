#!/usr/bin/env bash
# The README's main job: install what is missing, build, prepare the default dataset
# (Fashion-MNIST from Debian's dataset-fashion-mnist: edges → image, 32x32, with a validation
# split and t10k as the test split) as data/fashion-edges.h5, then train with 2 ranks on CPU with
# PSNR early stopping (configs/quickstart.cfg), evaluate the best model on the test split and
# translate a few test images with it, and export it as ONNX. RANKS overrides the rank count.
# Usage: launch/quickstart.sh [--force] [extra pix2pix train options]
#   --force   rebuild the dataset file and start a fresh run directory
set -euo pipefail
cd "$(dirname "$0")/.."

force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi

# Only what the main job needs (scripts/test.sh installs the rest), and no test targets.
bash scripts/install-deps.sh --runtime
echo "quickstart: packages ready after $SECONDS s"
# nproc honours OMP_NUM_THREADS: count the cores before the one-thread-per-rank setting below.
cores="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPIX2PIX_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$cores" --target pix2pix
echo "quickstart: pix2pix built after $SECONDS s"

data=data/fashion-edges.h5
mkdir -p data
if [ ! -f "$data" ] || [ "$force" = 1 ]; then
  build/bin/pix2pix prepare --config configs/prepare-fashion-edges.ini \
    --threads "$cores" --overwrite --out "$data"
else
  echo "quickstart: $data exists (pass --force to rebuild it)"
fi
build/bin/pix2pix inspect "$data" --check
echo "quickstart: data ready after $SECONDS s"

run=runs/quickstart
[ "$force" = 1 ] && rm -rf "$run"
# --resume auto continues an interrupted quickstart; a finished one trains again only with --force.
if [ -f "$run/summary.json" ] && [ "$force" = 0 ]; then
  echo "quickstart: $run already finished (pass --force to train again):"
  cat "$run/summary.json"
else
  launch/mpirun-local.sh "${RANKS:-2}" --config configs/quickstart.cfg --run-dir "$run" --resume auto "$@"
fi

echo "quickstart: trained after $SECONDS s"
# The best model on the test split (t10k; a dataset made before it had one gives val), a few of
# those images translated, and the model exported as ONNX for other runtimes (docs/deploy.md).
build/bin/pix2pix evaluate --checkpoint "$run" --data "$data" --out "$run/evaluation" --overwrite --progress lines
build/bin/pix2pix translate --checkpoint "$run" --data "$data" --limit 16 --output "$run/translated" --overwrite \
  --progress none
build/bin/pix2pix export --checkpoint "$run" --format onnx --out "$run/model.onnx" --overwrite

echo
echo "quickstart: done in $SECONDS s. Look at:"
echo "  $run/samples/            validation rows A | G(A) | B per epoch"
echo "  $run/metrics.csv         losses, PSNR (raw and smoothed), SSIM per epoch; $run/curves.png"
echo "  $run/checkpoints/best_generator.pt   the best model (weights only)"
echo "  $run/summary.json        stop reason, best epoch and PSNR, baseline PSNR"
echo "  $run/evaluation/         the best model on the test split: evaluation.csv (per image), evaluation.json, samples.png"
echo "  $run/translated/         16 test images translated by it (pix2pix translate)"
echo "  $run/model.onnx          the best model as ONNX (pix2pix export; docs/deploy.md runs it)"
