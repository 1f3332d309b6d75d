#!/usr/bin/env bash
# scripts/gpu-smoke.sh's `ranks` section as a GPU node runs it, here on CPU ranks: a stand-in
# pix2pix that says it is a CUDA build seeing one GPU (and runs the real binary for everything
# else) and an nvidia-smi that lists one. So the section's wiring (its mpirun and what it passes
# to the ranks, GPU_SMOKE_RANKS, the checks and the figures they leave in the report) is tried
# here before a GPU's few minutes go to it. Two of its tests run, the cheapest; each test is also
# CI's own on CPUs.
# Usage: gpu_smoke_ranks_test.sh BUILD_DIR
set -euo pipefail
build="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/bin" "$dir/smi"
cat >"$dir/bin/pix2pix" <<EOF
#!/bin/sh
if [ "\$1" = --version ]; then
  "$build/bin/pix2pix" --version | grep -v -e '^  GPUs ' -e 'compiled for CUDA runtime'
  echo "  CUDA/NCCL compiled for CUDA runtime (a stand-in's claim)"
  echo "  GPUs      1 visible"
  exit 0
fi
exec "$build/bin/pix2pix" "\$@"
EOF
printf '#!/bin/sh\necho "GPU 0: Stand-in (UUID: GPU-0)"\n' >"$dir/smi/nvidia-smi"
chmod +x "$dir/bin/pix2pix" "$dir/smi/nvidia-smi"

status=0
PATH="$dir/smi:$PATH" GPU_SMOKE_ONLY=ranks GPU_SMOKE_RANKS="syncbn emafid" \
  bash "$root/scripts/gpu-smoke.sh" "$dir" "$dir/report.txt" >"$dir/smoke.log" 2>&1 || status=$?
[ "$status" = 0 ] || { cat "$dir/smoke.log" "$dir/report.txt"; echo "gpu-smoke's ranks section exited $status"; exit 1; }
for want in "result   5 passed, 0 failed, 4 skipped" \
  "2 GPU ranks x 2 = 1 GPU x 4 after an epoch, --sync-bn on and off" \
  "4 GPU ranks x 1 = 1 GPU x 4 after an epoch, --sync-bn on and off" \
  "SKIP          2 GPU ranks: evaluate and translate write what one GPU process writes: not in GPU_SMOKE_RANKS" \
  "4 ranks x 1 = 1 x 4 after an epoch: losses and val PSNR differ by" \
  "ema + FID/KID on 2 ranks: validated the average every epoch; evaluate on 2 ranks = 1 process, FID"; do
  grep -qF -- "$want" "$dir/report.txt" || { cat "$dir/report.txt"; echo "the report lacks: $want"; exit 1; }
done
echo "gpu-smoke's ranks section runs its tests through its own launcher and reports their figures"
