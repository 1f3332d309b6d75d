#!/usr/bin/env bash
# GPU smoke test, for a machine with NVIDIA GPUs and a CUDA build (LibTorch with CUDA, the CUDA
# toolkit and NCCL; see README "Building on a GPU cluster"). Not part of CI, which has no GPU.
# Trains the quickstart data for two epochs on 1 GPU in fp32, bf16 and fp16, then on every
# visible GPU with the NCCL communicator (all-reduces overlapped with backward: the GPU default),
# and checks each run finished with a finite PSNR. Then prints `bench --what train` figures
# with --overlap-grad-sync off and on and --grad-dtype bf16, interleaved, and the optimizer step
# on one GPU (torch::optim::Adam against FusedAdam's _foreach ops), for docs/performance.md; and
# evaluate/translate of the fp32 model on the GPU next to the CPU.
# Usage: scripts/gpu-smoke.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
bin="$build/bin/pix2pix"
"$bin" --version | grep -q 'CUDA/NCCL CUDA runtime' || { echo "gpu-smoke: $bin is not a CUDA build"; exit 1; }
gpus="$(nvidia-smi -L | wc -l)"
[ "$gpus" -ge 1 ] || { echo "gpu-smoke: no GPU visible"; exit 1; }
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$bin" prepare --config configs/prepare-fashion-edges.ini --limit 2000 --out "$out/d.h5" >/dev/null

check() {  # RUN_DIR
  grep -q '"device": "cuda' "$1/summary.json" && ! grep -q '"best_psnr_smoothed": null' "$1/summary.json" \
    || { cat "$1/summary.json"; echo "gpu-smoke: $1 failed"; exit 1; }
  echo "gpu-smoke: $(basename "$1") OK"
}
for precision in fp32 bf16 fp16; do
  "$bin" train --data "$out/d.h5" --config configs/smoke.cfg --device cuda --precision "$precision" \
    --es-window 1 --run-dir "$out/$precision" >"$out/$precision.log" 2>&1 || { tail -20 "$out/$precision.log"; exit 1; }
  check "$out/$precision"
done
# The trained model on the GPU: evaluate on the test split and translate it; the same files as on the CPU.
for device in cuda cpu; do
  "$bin" evaluate --checkpoint "$out/fp32" --data "$out/d.h5" --device "$device" --out "$out/eval-$device" \
    --progress none >/dev/null
  "$bin" translate --checkpoint "$out/fp32" --data "$out/d.h5" --limit 64 --device "$device" \
    --output "$out/translated-$device" --progress none >/dev/null
done
echo "gpu-smoke: evaluate on cuda: $(grep -A1 '"psnr"' "$out/eval-cuda/evaluation.json" | head -1)"
echo "gpu-smoke: evaluate on cpu:  $(grep -A1 '"psnr"' "$out/eval-cpu/evaluation.json" | head -1)"
diff -rq "$out/translated-cuda" "$out/translated-cpu" >/dev/null \
  && echo "gpu-smoke: translate: cuda and cpu images identical" \
  || echo "gpu-smoke: translate: cuda and cpu images differ (kernels round differently; compare the PSNR above)"
echo "gpu-smoke: one Adam step of the reference generator on cuda:0"
"$build/bin/optimizer_bench" 7 cuda | tee "$out/optimizer.txt"
grep -q "FusedAdam ran _foreach ops" "$out/optimizer.txt" || { echo "gpu-smoke: FusedAdam did not run the foreach ops"; exit 1; }
if [ "$gpus" -ge 2 ]; then
  launch/mpirun-local.sh "$gpus" --data "$out/d.h5" --config configs/smoke.cfg --device cuda --comm nccl \
    --es-window 1 --check-replicas 10 --run-dir "$out/nccl" >"$out/nccl.log" 2>&1 || { tail -20 "$out/nccl.log"; exit 1; }
  check "$out/nccl"
  grep -q "(nccl" "$out/nccl.log" || { echo "gpu-smoke: the NCCL communicator was not used"; exit 1; }
  "$bin" prepare --config configs/prepare-fashion-edges.ini --limit 512 --size 256 --channels 3 \
    --out "$out/d256.h5" >/dev/null
  mpi=(mpirun -np "$gpus" --bind-to none)
  [ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
  for round in 1 2; do
    for sync in "--overlap-grad-sync off" "--overlap-grad-sync on" "--overlap-grad-sync on --grad-dtype bf16"; do
      echo "gpu-smoke: bench 256x256, batch 8 per GPU, $gpus GPUs, $sync (round $round)"
      # shellcheck disable=SC2086  # $sync is two or four words
      "${mpi[@]}" "$bin" bench --what train --data "$out/d256.h5" --device cuda \
        --preprocess none --batch-size 8 --steps 30 --warmup 5 $sync --phases 2>&1 |
        grep -A 9 '^images/s' || { echo "gpu-smoke: bench failed"; exit 1; }
    done
  done
fi
echo "gpu-smoke: all OK on $gpus GPU(s)"
