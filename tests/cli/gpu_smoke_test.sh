#!/usr/bin/env bash
# scripts/gpu-smoke.sh where it cannot run (this machine has no GPU): it fails, never passes, and
# still writes its one-page report naming why. nvidia-smi is replaced by stand-ins so that the
# test is the same on any machine: one that lists no GPU, one that lists a GPU the CUDA runtime
# cannot see (no GPU here; on a GPU node, more than it has).
set -euo pipefail
build="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/none" "$dir/phantom"
printf '#!/bin/sh\nexit 0\n' >"$dir/none/nvidia-smi"
# shellcheck disable=SC2016 # the stand-in's own shell expands it
printf '#!/bin/sh\nfor i in $(seq 0 63); do echo "GPU $i: Phantom (UUID: GPU-$i)"; done\n' >"$dir/phantom/nvidia-smi"
chmod +x "$dir/none/nvidia-smi" "$dir/phantom/nvidia-smi"

expect_failure() {  # expect_failure STANDIN TEXT: the script exits 1 and its report says TEXT
  local status=0
  PATH="$dir/$1:$PATH" bash "$root/scripts/gpu-smoke.sh" "$build" "$dir/$1.txt" >"$dir/$1.log" 2>&1 || status=$?
  [ "$status" = 1 ] || { cat "$dir/$1.log"; echo "gpu-smoke with '$1' exited $status, not 1"; exit 1; }
  for want in "pix2pix-mpi GPU smoke report" "result   0 passed, 1 failed, 0 skipped" "== pix2pix --version" \
    "LibTorch" "== checks" "$2"; do
    grep -qF -- "$want" "$dir/$1.txt" || { cat "$dir/$1.txt"; echo "report with '$1' lacks: $want"; exit 1; }
  done
}
if "$build/bin/pix2pix" --version | grep -q 'compiled for CUDA runtime'; then
  expect_failure none "FAIL          GPUs: no GPU visible (nvidia-smi -L lists none)"
  expect_failure phantom "FAIL          GPUs: nvidia-smi lists 64, pix2pix --version:"
else
  expect_failure none "is not a CUDA build (configure with -DPIX2PIX_WITH_CUDA=ON)"
fi

# GPU_SMOKE_BUDGET_S: a stand-in build whose pix2pix claims one GPU and then hangs in its first
# check. The smoke must stop it at the budget, skip what had not begun, and still write its report.
mkdir -p "$dir/hang/bin" "$dir/one"
# shellcheck disable=SC2016 # the stand-in's own shell expands it
printf '#!/bin/sh
if [ "$1" = --version ]; then
  echo "pix2pix-mpi (stand-in)"; echo "  LibTorch  stand-in"
  echo "  CUDA/NCCL compiled for CUDA runtime 13.0"; echo "  GPUs      1 visible"
else
  exec sleep 60
fi
' >"$dir/hang/bin/pix2pix"
printf '#!/bin/sh
echo "GPU 0: Stand-in (UUID: GPU-0)"
' >"$dir/one/nvidia-smi"
chmod +x "$dir/hang/bin/pix2pix" "$dir/one/nvidia-smi"
start=$SECONDS status=0
PATH="$dir/one:$PATH" GPU_SMOKE_BUDGET_S=4 bash "$root/scripts/gpu-smoke.sh" "$dir/hang" "$dir/hang.txt" >"$dir/hang.log" 2>&1 ||
  status=$?
[ "$status" = 1 ] || { cat "$dir/hang.log"; echo "gpu-smoke over its budget exited $status, not 1"; exit 1; }
[ $((SECONDS - start)) -lt 30 ] || { echo "gpu-smoke took $((SECONDS - start)) s with GPU_SMOKE_BUDGET_S=4"; exit 1; }
# The check the budget's end stopped is CUT, neither passed nor failed, with its log; the exit is 1.
for want in "PASS          binary and GPUs" "prepare the smoke data (2,000 Fashion-MNIST edges pairs): stopped at GPU_SMOKE_BUDGET_S=4" \
  "result   1 passed, 0 failed, 0 skipped, 1 cut at the budget's end" \
  "== cut: prepare the smoke data (2,000 Fashion-MNIST edges pairs) (last 25 lines)"; do
  grep -qF -- "$want" "$dir/hang.txt" || { cat "$dir/hang.txt"; echo "report over budget lacks: $want"; exit 1; }
done
# A section or a ranks test it does not have is refused before anything runs.
status=0
GPU_SMOKE_ONLY="nccl fast" bash "$root/scripts/gpu-smoke.sh" "$dir/hang" "$dir/only.txt" >"$dir/only.log" 2>&1 || status=$?
[ "$status" = 2 ] && grep -qF "GPU_SMOKE_ONLY: 'fast' is none of: nccl ranks compare compile train bench" "$dir/only.log" ||
  { cat "$dir/only.log"; echo "GPU_SMOKE_ONLY=fast: exit $status"; exit 1; }
status=0
GPU_SMOKE_RANKS="infer restart" bash "$root/scripts/gpu-smoke.sh" "$dir/hang" "$dir/ranks.txt" >"$dir/ranks.log" 2>&1 || status=$?
[ "$status" = 2 ] && grep -qF "GPU_SMOKE_RANKS: 'restart' is none of: syncbn infer emafid resume stop many" "$dir/ranks.log" ||
  { cat "$dir/ranks.log"; echo "GPU_SMOKE_RANKS=restart: exit $status"; exit 1; }
# GPU_SMOKE_ONLY and GPU_SMOKE_RANKS set the order (a held node's short budget cuts the tail), and
# the compare section's plumbing (traces, their summary, the rounds' figures) works: a stand-in
# build, tests binary and Python that succeed at once (writing what --trace names, saying images/s
# and GFLOP), and stand-in mpirun and nvidia-smi, so that the report lists each check as it was
# called; a section named twice runs once.
mkdir -p "$dir/quick/bin" "$dir/quickpath"
# shellcheck disable=SC2016 # the stand-in's own shell expands it
printf '#!/bin/sh
if [ "$1" = --version ]; then
  echo "pix2pix-mpi (stand-in)"; echo "  LibTorch  stand-in"
  echo "  CUDA/NCCL compiled for CUDA runtime 13.0"; echo "  GPUs      1 visible"
  exit 0
fi
previous=""
for arg in "$@"; do
  [ "$previous" = --trace ] && echo "{\"traceEvents\": []}" >"$arg"
  [ "$previous" = --cuda-graph ] && echo "# CUDA graph: MiB reserved after the eager steps 9 (allocated 8)"
  previous="$arg"
  case "$arg" in
    --flops) echo "step GFLOP 86.9" ;;
    *trace_summary.py) printf "| per step | ours | PyTorch eager |\\n|---|---|---|\\n| time ms | 35 | 30 |\\n\\n| operator (per step) | ours |\\n" ;;
  esac
done
echo "images/s 100.0"
' >"$dir/quick/bin/pix2pix"
chmod +x "$dir/quick/bin/pix2pix"
cp "$dir/quick/bin/pix2pix" "$dir/quick/bin/pix2pix_tests"
cp "$dir/quick/bin/pix2pix" "$dir/quick/bin/python"
cp "$dir/one/nvidia-smi" "$dir/quickpath/"
cp "$dir/quick/bin/pix2pix" "$dir/quick/bin/pix2pix_mpi_tests"
# The stand-in mpirun says what the batch-norm test says, for the figure taken from its log.
# shellcheck disable=SC2016 # the stand-in's own shell expands it
printf '#!/bin/sh
case "$*" in *BatchNormOverRanks*)
  echo "2 ranks x 2 = 1 x 4 with batch norm (bf16, fused kernels): largest relative difference 3.00e-02 synchronised" ;;
esac
' >"$dir/quickpath/mpirun"
chmod +x "$dir/quickpath/mpirun"
PATH="$dir/quickpath:$PATH" PYTHON="$dir/quick/bin/python" GPU_SMOKE_ONLY="bench ranks bench compare nccl" \
  GPU_SMOKE_RANKS="resume infer" GPU_SMOKE_COMPARE="64:bf16" GPU_SMOKE_TRACE_AT="64:bf16" GPU_SMOKE_ROUNDS=1 \
  GPU_SMOKE_BUDGET_S=60 bash "$root/scripts/gpu-smoke.sh" "$dir/quick" "$dir/order.txt" >"$dir/order.log" 2>&1 || true
called="$(sed -n '/^== checks/,/^$/p' "$dir/order.txt" | sed -n 's/^[A-Z]\{4\} *[0-9]* *s\{0,1\}  \([^:(]*\).*/\1/p')"
expected="binary and GPUs
prepare the smoke data 
prepare the bench data 
bench
bench
bench
bench
bench
bench
bench
1 and 4 GPU ranks
2 GPU ranks
2 GPU ranks x 2 = 1 GPU x 4 after an epoch, --sync-bn on and off
4 GPU ranks x 1 = 1 GPU x 4 after an epoch, --sync-bn on and off
2 GPU ranks
2 GPU ranks
4 GPU ranks
the comparison's pairs 
the step's FLOPs 
updates decided on cuda
the step as a CUDA graph on cuda
the fused kernels on cuda
a Chrome trace of 2 of our steps, 256x256 batch 64 bf16 
a Chrome trace of 2 of PyTorch eager's steps, the same 
both traces per operator, 256x256 batch 64 bf16 
ours and PyTorch side by side
NCCL collectives, 1 rank
NCCL collectives, 2 rank
NCCL collectives, 4 rank
2 ranks x batch B = 1 process x batch 2B over NCCL 
batch norm over ranks on cuda
2 ranks x B = 1 x 2B with batch norm over NCCL, fp32 and bf16, PyTorch's kernels and the fused ones 
4 ranks x B = 1 x 4B with batch norm over NCCL, fp32 and bf16, PyTorch's kernels and the fused ones 
train over NCCL, 2 ranks on 1 GPU"
[ "$called" = "$expected" ] || { cat "$dir/order.txt"; diff <(echo "$expected") <(echo "$called"); echo "gpu-smoke: not in the order named"; exit 1; }
for want in "bench: 2 ranks on 1 GPU(s) over NCCL, overlap off (round 1)" "SIGUSR1 and --resume auto" \
  "evaluate and translate write what one GPU process writes: exit" "FID/KID, and its evaluate = 1 GPU process: not in GPU_SMOKE_RANKS" \
  "trace 64 bf16: | time ms | 35 | 30 |" \
  "256x256 batch 64 bf16 | ours 100.0 images/s (min/med/max 100.0/100.0/100.0) - MiB 1.00x eager" \
  "| ours NCHW 100.0 images/s" "| ours CUDA graph 100.0 images/s" "| PyTorch eager 100.0 images/s" \
  "| ours fused kernels 100.0 images/s" "| ours fused, CUDA graph 100.0 images/s" \
  "ours CUDA graph, 256x256 batch 64 bf16: MiB reserved after the eager steps 9 (allocated 8)" \
  "2 ranks x 2 = 1 x 4 with batch norm (bf16, fused kernels): largest relative difference 3.00e-02"; do
  grep -qF -- "$want" "$dir/order.txt" || { cat "$dir/order.txt"; echo "the ordered report lacks: $want"; exit 1; }
done
[ "$(grep -c '^PASS .*bench: ' "$dir/order.txt")" = 7 ] || { cat "$dir/order.txt"; echo "bench: not its 7 runs, each passed once"; exit 1; }
for side in ours pytorch; do
  ls "$dir/trace-$side-64-bf16.json."* >/dev/null 2>&1 && [ ! -e "$dir/trace-$side-64-bf16.json" ] ||
    { ls "$dir"; echo "the $side trace was not kept compressed"; exit 1; }
done
echo "gpu-smoke refuses to pass without its GPUs, stops at its budget, says why in its report, and runs in the order named"
