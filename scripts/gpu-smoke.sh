#!/usr/bin/env bash
# The one command to run on a GPU node after building (README "Building on a GPU cluster"); CI has
# no GPU. Every check runs even when an earlier one failed, and a one-page report says what
# passed, what failed and the figures measured:
#   - the binary: a CUDA build whose --version names the libraries it loaded and every visible GPU
#   - training on one GPU in fp32, bf16 and fp16 (two epochs of the smoke config, a finite PSNR),
#     and one epoch of train-classifier
#   - the NCCL communicator at worlds 1, 2 and 4: every collective training uses, of
#     every type, checked element by element (tests/dist/communicator_collectives_test.cpp; a
#     world of one runs real NCCL collectives too)
#   - 2 ranks of batch B = 1 process of batch 2B, step by step, over NCCL, and 2 and 4 ranks with
#     batch norm over ranks (tests/train/distributed_equivalence_test.cpp, as CI runs them on CPUs
#     over MPI); with fewer GPUs than ranks the ranks share them (PIX2PIX_SHARE_GPUS=1)
#   - training over NCCL on all visible GPUs with replica checks
#   - evaluate and translate on the GPU next to the CPU; FusedAdam's _foreach path on the GPU
#   - figures: `bench --what train` images/s on one GPU per precision and, with 2 GPUs or more, on
#     all of them with the all-reduce blocking, overlapped and in bf16 (interleaved, 2 rounds)
#   - against PyTorch on one GPU (bench/pytorch_pix2pix.py: the same reference networks, the same
#     pairs, the same precision): 256x256 at batch 1, 16 and 64 in fp32, bf16 and fp16, ours and
#     PyTorch's step interleaved, images/s, the GPU memory each used at its peak (nvidia-smi,
#     sampled every 100 ms, above the idle GPU) and the ratio; ours with --comm nccl at a world of
#     one, overlap off and on. PYTHON names the Python with a CUDA PyTorch (default python3).
# Usage: scripts/gpu-smoke.sh [BUILD_DIR] [REPORT]   (defaults: build, gpu-smoke-report.txt)
# A node is held for minutes: GPU_SMOKE_BUDGET_S=N stops every command at N seconds from the start
# (checks not begun by then are SKIPped, one cut short FAILs) so that the report is always written;
# GPU_SMOKE_ROUNDS (default 2) sets the rounds of the `bench` throughput figures.
# Exit status: 0 when every check passed, 1 otherwise (the report names the failures).
# Needs the build's test binary (PIX2PIX_BUILD_TESTS=ON, the default) and Fashion-MNIST's files in
# $FASHION_MNIST_DIR (default /usr/share/datasets/fashion-mnist, Debian's dataset-fashion-mnist;
# a GPU node's build from the bundle writes its folder into the env.sh it leaves).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
build="${1:-build}"
report="${2:-gpu-smoke-report.txt}"
bin="$build/bin/pix2pix"
python="${PYTHON:-python3}"
tests_bin="$build/bin/pix2pix_mpi_tests"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

budget="${GPU_SMOKE_BUDGET_S:-0}" rounds="${GPU_SMOKE_ROUNDS:-2}"
case "$budget$rounds" in *[!0-9]*) echo "gpu-smoke: GPU_SMOKE_BUDGET_S and GPU_SMOKE_ROUNDS are whole numbers" >&2; exit 2 ;; esac
checks=()   # "PASS|FAIL|SKIP  seconds  name: detail"
figures=()  # lines for the report's figures section
failed_logs=()
mpi=(mpirun --bind-to none)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)

record() {  # record STATUS SECONDS NAME DETAIL
  checks+=("$(printf '%-4s %7s  %s%s' "$1" "$2" "$3" "${4:+: $4}")")
  echo "gpu-smoke: $1 $3${4:+: $4}"
}
# out_of_time: the budget is (nearly) spent, so nothing new starts.
out_of_time() { [ "$budget" -gt 0 ] && [ $((budget - SECONDS)) -le 2 ]; }
# limited COMMAND...: runs it, stopped (exit 124) when GPU_SMOKE_BUDGET_S is reached; not started
# once it is (`timeout 0` would mean no limit at all).
limited() {
  [ "$budget" -eq 0 ] && { "$@"; return; }
  local left=$((budget - SECONDS))
  [ "$left" -gt 0 ] || return 124
  timeout --kill-after=5 "$left" "$@"
}
# check NAME LOG COMMAND...: runs it with its output in LOG; PASS when it exits 0.
check() {
  local name="$1" log="$2" start=$SECONDS status
  shift 2
  if out_of_time; then
    record SKIP "" "$name" "GPU_SMOKE_BUDGET_S=$budget spent"
    return 1
  fi
  limited "$@" >"$log" 2>&1
  status=$?
  if [ "$status" -eq 0 ]; then
    record PASS "$((SECONDS - start)) s" "$name" ""
    return 0
  fi
  if [ "$status" -eq 124 ] && [ "$budget" -gt 0 ] && [ "$SECONDS" -ge "$budget" ]; then
    record FAIL "$((SECONDS - start)) s" "$name" "stopped at GPU_SMOKE_BUDGET_S=$budget (log below)"
  else
    record FAIL "$((SECONDS - start)) s" "$name" "exit $status (log below)"
  fi
  failed_logs+=("$name|$log")
  return 1
}
skip() { record SKIP "" "$1" "$2"; }
figure() { figures+=("$1"); }

write_report() {
  local passed=0 failures=0 skipped=0 line entry
  for line in "${checks[@]}"; do
    case "$line" in PASS*) passed=$((passed + 1)) ;; FAIL*) failures=$((failures + 1)) ;; *) skipped=$((skipped + 1)) ;; esac
  done
  {
    echo "pix2pix-mpi GPU smoke report"
    echo "date     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "host     $(hostname)"
    if [ -f .bundle-commit ]; then  # a bundle's source (scripts/gpu-bundle.sh), which has no .git
      echo "commit   $(cut -c1-7 .bundle-commit) (from the bundle)"
    else
      echo "commit   $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
    fi
    echo "build    $build"
    echo "result   $passed passed, $failures failed, $skipped skipped"
    echo
    echo "== pix2pix --version"
    "$bin" --version 2>&1 || true
    echo
    echo "== nvidia-smi"
    nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv 2>&1 || true
    echo
    echo "== PyTorch ($python)"
    "$python" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "NCCL",
      ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "-",
      "GPU", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' 2>&1 || true
    echo
    echo "== checks"
    printf '%s\n' "${checks[@]}"
    echo
    echo "== figures"
    if [ ${#figures[@]} -eq 0 ]; then echo "(none)"; else printf '%s\n' "${figures[@]}"; fi
    for entry in "${failed_logs[@]}"; do
      echo
      echo "== failed: ${entry%%|*} (last 25 lines)"
      tail -n 25 "${entry#*|}"
    done
  } >"$report"
  echo "gpu-smoke: $passed passed, $failures failed, $skipped skipped; report in $report"
  [ "$failures" -eq 0 ]
}

# The binary and the GPUs: without them nothing else can run.
gpus=0
if command -v nvidia-smi >/dev/null; then gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')"; fi
if [ ! -x "$bin" ]; then
  record FAIL "" "binary" "$bin is not built (cmake --build $build)"
  write_report
  exit 1
fi
"$bin" --version >"$work/version.txt" 2>&1
if ! grep -q 'compiled for CUDA runtime' "$work/version.txt"; then
  record FAIL "" "binary" "$bin is not a CUDA build (configure with -DPIX2PIX_WITH_CUDA=ON)"
elif [ "$gpus" -eq 0 ]; then
  record FAIL "" "GPUs" "no GPU visible (nvidia-smi -L lists none)"
elif ! grep -q "GPUs      $gpus visible" "$work/version.txt"; then
  record FAIL "" "GPUs" "nvidia-smi lists $gpus, pix2pix --version: $(grep 'GPUs ' "$work/version.txt")"
else
  record PASS "" "binary and GPUs" "a CUDA build; $gpus GPU(s) visible to nvidia-smi and to the CUDA runtime"
fi
if [ "$gpus" -eq 0 ] || grep -q '^FAIL' <(printf '%s\n' "${checks[@]}"); then
  write_report
  exit 1
fi

# The config names Debian's dataset folder; a node's (env.sh) is elsewhere.
fashion=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
fashion_sources=(--images "idx:$fashion/train-images-idx3-ubyte.gz" --test "idx:$fashion/t10k-images-idx3-ubyte.gz")
check "prepare the smoke data (2,000 Fashion-MNIST edges pairs)" "$work/prepare.log" \
  "$bin" prepare --config configs/prepare-fashion-edges.ini "${fashion_sources[@]}" --limit 2000 --out "$work/d.h5" \
  --progress none || {
  write_report
  exit 1
}

# psnr RUN_DIR: the run's best smoothed val PSNR, or "" when it has none.
psnr() { sed -n 's/.*"best_psnr_smoothed": *\([0-9.][0-9.]*\).*/\1/p' "$1/summary.json" 2>/dev/null | head -n 1; }
trained() {  # trained RUN_DIR: ran on a GPU and reached a finite PSNR
  grep -q '"device": "cuda' "$1/summary.json" && [ -n "$(psnr "$1")" ]
}
for precision in fp32 bf16 fp16; do
  name="train $precision on cuda:0 (2 epochs of configs/smoke.cfg)"
  if check "$name" "$work/train-$precision.log" \
    "$bin" train --data "$work/d.h5" --config configs/smoke.cfg --device cuda --precision "$precision" \
    --es-window 1 --progress none --run-dir "$work/$precision"; then
    if trained "$work/$precision"; then
      figure "train $precision, 1 GPU: best smoothed val PSNR $(psnr "$work/$precision") dB"
    else
      checks[-1]="${checks[-1]/PASS/FAIL}: no finite PSNR on a GPU in summary.json"
      failed_logs+=("$name|$work/$precision/summary.json")
    fi
  fi
done

# The recognition network (train-classifier) on the GPU: one epoch of the same data's B images and labels.
if check "train-classifier on cuda:0 (1 epoch)" "$work/classifier.log" \
  "$bin" train-classifier --data "$work/d.h5" --out "$work/classifier.pt" --device cuda --max-epochs 1 \
  --batch-size 64 --progress none; then
  figure "train-classifier, 1 GPU: $(grep '^best epoch' "$work/classifier.log")"
fi

# The NCCL communicator itself: one GPU (real NCCL calls in a world of one), then worlds of 2 and 4.
export PIX2PIX_SHARE_GPUS=1 NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
if [ ! -x "$tests_bin" ]; then
  record FAIL "" "NCCL collectives" "$tests_bin is not built (configure with -DPIX2PIX_BUILD_TESTS=ON)"
else
  # Worlds above the GPU count share GPUs: See Note [ranks sharing a GPU] (PIX2PIX_SHARE_GPUS=1:
  # a distinct NCCL_HOSTID per rank, NCCL's socket transport over lo). The first world of 2 on one
  # GPU is where that is verified; what NCCL says when it refuses is in the failure's log.
  share=(-x PIX2PIX_TEST_DEVICE -x PIX2PIX_SHARE_GPUS -x NCCL_DEBUG)
  for ranks in 1 2 4; do
    check "NCCL collectives, $ranks rank(s) on $gpus GPU(s): every type, size and operation" \
      "$work/collectives-$ranks.log" env PIX2PIX_TEST_DEVICE=cuda "${mpi[@]}" -np "$ranks" "${share[@]}" "$tests_bin" \
      --gtest_filter='Collectives.*'
  done
  check "2 ranks x batch B = 1 process x batch 2B over NCCL (fp32, overlapped, bf16 wire)" "$work/equivalence.log" \
    env PIX2PIX_TEST_DEVICE=cuda "${mpi[@]}" -np 2 "${share[@]}" "$tests_bin" \
    --gtest_filter='DistributedTraining.TwoRanks*'
  while read -r line; do figure "$line"; done < <(grep '^2xB = 1x2B' "$work/equivalence.log")
  # See Note [synchronised batch norm]: the sums of backward come from LibTorch's GPU threads.
  for ranks in 2 4; do
    check "$ranks ranks x B = 1 x ${ranks}B with batch norm over NCCL (--sync-bn on, off must differ)" \
      "$work/sync-bn-$ranks.log" env PIX2PIX_TEST_DEVICE=cuda "${mpi[@]}" -np "$ranks" "${share[@]}" "$tests_bin" \
      --gtest_filter='DistributedTraining.BatchNormOverRanksEqualsOneProcessOfTheGlobalBatch'
    while read -r line; do figure "$ranks ranks: $line"; done < <(grep 'with batch norm: largest' "$work/sync-bn-$ranks.log")
  done
fi

nccl_ranks=$(( gpus >= 2 ? gpus : 2 ))
name="train over NCCL, $nccl_ranks ranks on $gpus GPU(s), with replica checks"
if check "$name" "$work/nccl.log" \
  "${mpi[@]}" -np "$nccl_ranks" -x PIX2PIX_SHARE_GPUS -x NCCL_DEBUG "$bin" train --data "$work/d.h5" --config configs/smoke.cfg --device cuda \
  --comm nccl --es-window 1 --check-replicas 10 --progress none --run-dir "$work/nccl"; then
  if ! trained "$work/nccl" || ! grep -q '(nccl' "$work/nccl.log"; then
    checks[-1]="${checks[-1]/PASS/FAIL}: no finite PSNR, or the NCCL communicator was not used"
    failed_logs+=("$name|$work/nccl.log")
  fi
fi

# The trained model on the GPU next to the CPU.
if [ -f "$work/fp32/summary.json" ]; then
  for device in cuda cpu; do
    # shellcheck disable=SC2016 # expanded by the inner bash, from its arguments
    check "evaluate and translate on $device" "$work/infer-$device.log" bash -c '
      "$1" evaluate --checkpoint "$2/fp32" --data "$2/d.h5" --device "$3" --out "$2/eval-$3" --progress none &&
      "$1" translate --checkpoint "$2/fp32" --data "$2/d.h5" --limit 64 --device "$3" \
        --output "$2/translated-$3" --progress none' _ "$bin" "$work" "$device" &&
      figure "evaluate on $device: mean PSNR $(sed -n 's/^ *"psnr": {"mean": *\([-0-9.e]*\).*/\1/p' "$work/eval-$device/evaluation.json") dB, mean SSIM $(sed -n 's/^ *"ssim": {"mean": *\([-0-9.e]*\).*/\1/p' "$work/eval-$device/evaluation.json")"
  done
  if [ -d "$work/translated-cuda" ] && [ -d "$work/translated-cpu" ]; then
    if diff -rq "$work/translated-cuda" "$work/translated-cpu" >/dev/null; then
      figure "translate: cuda and cpu images identical"
    else
      figure "translate: cuda and cpu images differ (kernels round differently; compare the PSNRs above)"
    fi
  fi
else
  skip "evaluate and translate" "no fp32 model was trained"
fi

if check "FusedAdam's _foreach ops on cuda:0" "$work/optimizer.log" "$build/bin/optimizer_bench" 7 cuda; then
  if grep -q "FusedAdam ran _foreach ops" "$work/optimizer.log"; then
    while read -r line; do figure "Adam step, reference generator, cuda:0: $line"; done < <(grep 'ms/step' "$work/optimizer.log")
  else
    checks[-1]="${checks[-1]/PASS/FAIL}: FusedAdam did not run the foreach ops"
    failed_logs+=("FusedAdam|$work/optimizer.log")
  fi
fi

# Against PyTorch on one GPU (issue 31): the pairs come from the Fashion-MNIST IDX file through
# bench/pytorch_pix2pix.py (PyTorch alone: a pip PyTorch has no numpy or h5py,
# See Note [pairs without numpy]), which writes them as A|B PNGs for `pix2pix prepare --aligned`: both sides train
# on the same 160 256x256 RGB pairs (ours on the 128 of its train split). GPU memory: the peak of nvidia-smi's memory.used on GPU 0 during
# the run, above the idle GPU's, for both (PyTorch also reports its allocator's own peaks).
idx=$fashion/train-images-idx3-ubyte.gz
pytorch=(bench/pytorch_pix2pix.py --idx "$idx" --size 256 --channels 3 --pairs 160)
peak_memory() {  # peak_memory LOG COMMAND...: runs it; echoes the peak MiB above idle on GPU 0
  local log="$1" sampler idle status
  shift
  idle="$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | head -1)"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 100 >"$log.memory" 2>/dev/null &
  sampler=$!
  limited "$@" >"$log" 2>&1
  status=$?
  kill "$sampler" 2>/dev/null
  wait "$sampler" 2>/dev/null
  sort -n "$log.memory" | tail -1 | awk -v idle="$idle" '{ print $1 - idle }'
  return "$status"
}
compare() {  # compare BATCH PRECISION: ours, then PyTorch's, the same step
  local batch="$1" precision="$2" ours_log="$work/cmp-ours-$1-$2.log" theirs_log="$work/cmp-torch-$1-$2.log"
  local start=$SECONDS ours_mib theirs_mib ours_ips theirs_ips allocator
  if out_of_time; then
    record SKIP "" "ours and PyTorch, 256x256 batch $batch $precision" "GPU_SMOKE_BUDGET_S=$budget spent"
    return
  fi
  if ! ours_mib="$(peak_memory "$ours_log" "$bin" bench --what train --data "$work/cmp.h5" --device cuda \
    --preprocess none --batch-size "$batch" --precision "$precision" --steps 20 --warmup 5 --progress none)"; then
    record FAIL "$((SECONDS - start)) s" "ours, 256x256 batch $batch $precision" "(log below)"
    failed_logs+=("ours, batch $batch $precision|$ours_log")
    return
  fi
  if ! theirs_mib="$(peak_memory "$theirs_log" "$python" "${pytorch[@]}" --device cuda --batch-size "$batch" \
    --precision "$precision" --steps 20 --warmup 5)"; then
    record FAIL "$((SECONDS - start)) s" "PyTorch, 256x256 batch $batch $precision" "(log below)"
    failed_logs+=("PyTorch, batch $batch $precision|$theirs_log")
    return
  fi
  allocator="$(sed -n 's/^peak memory MiB \([0-9]*\) \([0-9]*\)/\1 allocated, \2 reserved/p' "$theirs_log")"
  ours_ips="$(sed -n 's/^images\/s \([0-9.]*\).*/\1/p' "$ours_log")"
  theirs_ips="$(sed -n 's/^images\/s \([0-9.]*\).*/\1/p' "$theirs_log")"
  record PASS "$((SECONDS - start)) s" "ours and PyTorch, 256x256 batch $batch $precision" ""
  figure "$(printf '256x256 batch %-2s %s: ours %8.2f images/s %6s MiB | PyTorch %8.2f images/s %6s MiB (allocator peak %s) | ours/PyTorch %s' \
    "$batch" "$precision" "$ours_ips" "$ours_mib" "$theirs_ips" "$theirs_mib" \
    "${allocator:--}" \
    "$(awk -v a="$ours_ips" -v b="$theirs_ips" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')")"
}
if ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >"$work/torch.log" 2>&1; then
  record FAIL "" "PyTorch comparison" "$python has no PyTorch that sees the GPU (set PYTHON)"
  failed_logs+=("PyTorch|$work/torch.log")
elif check "the comparison's pairs (160 A|B PNGs, then prepare --aligned)" "$work/cmp-prepare.log" \
  sh -c '"$1" "$2" --idx "$3" --size 256 --channels 3 --pairs 160 --write-aligned "$4/aligned" &&
         "$5" prepare --aligned "$4/aligned" --size 256 --channels 3 --val-fraction 0.2 --out "$4/cmp.h5" --progress none' \
  sh "$python" bench/pytorch_pix2pix.py "$idx" "$work" "$bin"; then
  for batch in 1 16 64; do
    for precision in fp32 bf16 fp16; do compare "$batch" "$precision"; done
  done
  for overlap in off on; do
    log="$work/nccl-world1-$overlap.log"
    if check "ours over NCCL at a world of 1, overlap $overlap" "$log" "$bin" bench --what train --data "$work/cmp.h5" \
      --device cuda --comm nccl --overlap-grad-sync "$overlap" --preprocess none --batch-size 16 --steps 20 \
      --warmup 5 --progress none; then
      # The "# wire G" line says whether the buckets really started during backward.
      figure "256x256 batch 16 fp32, --comm nccl at a world of 1, overlap $overlap: $(grep '^images/s' "$log"); $(grep -o 'per step, [a-z ]*' "$log" | head -n 1 | sed 's/per step, //')"
    fi
  done
fi


# Throughput: the reference model size (256x256, 3 channels), batch 8 per GPU.
benches=0
bench() {  # bench LABEL RANKS OPTIONS...
  local label="$1" ranks="$2" log
  shift 2
  benches=$((benches + 1))
  log="$work/bench-$benches.log"
  if check "bench: $label" "$log" "${mpi[@]}" -np "$ranks" "$bin" bench --what train --data "$work/d256.h5" \
    --device cuda --preprocess none --batch-size 8 --steps 30 --warmup 5 --progress none "$@"; then
    figure "bench 256x256 batch 8/GPU, $label: $(grep '^images/s' "$log")"
  fi
}
if check "prepare the bench data (512 pairs, 256x256 RGB)" "$work/prepare256.log" \
  "$bin" prepare --config configs/prepare-fashion-edges.ini "${fashion_sources[@]}" --limit 512 --size 256 --channels 3 \
  --out "$work/d256.h5" --progress none; then
  for round in $(seq 1 "$rounds"); do
    for precision in fp32 bf16 fp16; do bench "1 GPU, $precision (round $round)" 1 --precision "$precision"; done
    if [ "$gpus" -ge 2 ]; then
      bench "$gpus GPUs, all-reduce blocking (round $round)" "$gpus" --overlap-grad-sync off
      bench "$gpus GPUs, all-reduce overlapped (round $round)" "$gpus" --overlap-grad-sync on
      bench "$gpus GPUs, overlapped, bf16 wire (round $round)" "$gpus" --overlap-grad-sync on --grad-dtype bf16
    fi
  done
fi

write_report
