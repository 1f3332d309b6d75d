#!/usr/bin/env bash
# The one command to run on a GPU node after building (docs/platforms.md, "Building on a GPU cluster"); CI has
# no GPU. Every check runs even when an earlier one failed, and a one-page report says what
# passed, what failed and the figures measured. The sections, in the order they run by default (GPU
# time is short: the budget cuts the tail, so what matters most comes first; GPU_SMOKE_ONLY="bench
# ranks ..." runs only those named, in the order named):
#   nccl     the NCCL communicator at worlds 1, 2 and 4 (every collective training uses, of every
#            type, element by element: tests/dist/communicator_collectives_test.cpp); 2 ranks of
#            batch B = 1 process of batch 2B step by step, and 2 and 4 ranks with batch norm over
#            ranks in fp32 and bf16, through PyTorch's kernels and through the fused ones
#            (tests/train/distributed_equivalence_test.cpp); training over NCCL with replica checks. With fewer GPUs than ranks the ranks share them
#            (PIX2PIX_SHARE_GPUS=1).
#   ranks    the multi-rank command tests CI runs on CPUs, on GPU ranks over NCCL: batch norm over 2
#            and 4 ranks after an epoch (tests/dist/sync_bn_epoch_test.sh); with --deterministic,
#            evaluate and translate on 2 ranks = 1 (tests/cli/infer_ranks_test.sh), the generator's
#            average with FID/KID on 2 ranks (tests/infer/ema_fid_ranks_test.sh),
#            a stop resuming exactly on 1 and on 4 ranks and 4 -> 1 -> 4
#            (tests/dist/resume_worlds_test.sh), a stop at any moment on 2
#            (tests/cli/stop_anywhere_test.sh), uneven shards, elastic resumes and a SIGKILLed rank
#            (tests/dist/many_ranks_test.sh); GPU_SMOKE_RANKS names which run and in what order
#            (default "syncbn infer emafid resume stop many", the order above)
#   compare  ours against PyTorch on one GPU (bench/pytorch_pix2pix.py: the same reference networks,
#            the same pairs, the same precision), 256x256 at the GPU_SMOKE_COMPARE points
#            (batch:precision), PyTorch with cudnn.benchmark and channels-last in bf16/fp16, the
#            sides interleaved in each of GPU_SMOKE_ROUNDS rounds: images/s min/median/max, the
#            peak GPU memory (nvidia-smi, sampled every 100 ms, above the idle GPU), the ratio to
#            PyTorch eager and the model FLOP utilisation; ours also with --channels-last off at the
#            GPU_SMOKE_NCHW_AT points (default 64:bf16), with the host deciding updates at
#            GPU_SMOKE_HOST_UPDATE_AT (1:fp32) and with the step as one CUDA graph at
#            GPU_SMOKE_GRAPH_AT (1:fp32 1:bf16 64:bf16), after CapturedStep.* checked the graph
#            against eager steps, and with the fused kernels (--fused-kernels on, alone and with the
#            graph) at GPU_SMOKE_FUSED_AT (64:bf16 16:bf16), after FusedActivation.* checked them
#            against ATen's operations; before the rounds, a Chrome trace of 2 of our steps at each
#            GPU_SMOKE_TRACE_AT point (default 64:bf16 1:fp32, none where set empty; ours with
#            GPU_SMOKE_TRACE_OURS_ARGS added; `bench --trace`: kernels, copies,
#            the gaps between them and the allocator's memory) beside the report,
#            trace-ours-BATCH-PRECISION.json.xz (.gz where the node has no xz), PyTorch eager's the
#            same (trace-pytorch-...json.xz) and both per step (time, kernels, memory at the peak),
#            the peak of each phase, what is live at the peak by what allocated it, per operator and
#            per kernel (bench/trace_summary.py:
#            trace-summary-BATCH-PRECISION.md, the tables before the per-operator one among the
#            figures)
#   compile  torch.compile (default and reduce-overhead) at the GPU_SMOKE_COMPILE_AT points
#   train    one GPU in fp32, bf16 and fp16 (two epochs of the smoke config, a finite PSNR),
#            train-classifier, evaluate and translate on the GPU next to the CPU, FusedAdam's
#            _foreach path
#   bench    `bench --what train` on 2 ranks over NCCL with the all-reduce blocking and overlapped
#            (how many buckets started during backward), with the step as one CUDA graph holding
#            NCCL's all-reduce (replicas checked identical) and with batch norm per rank (what
#            --sync-bn costs); then images/s per precision on 1 GPU
# PYTHON names the Python with a CUDA PyTorch (default python3).
# Usage: scripts/gpu-smoke.sh [BUILD_DIR] [REPORT]   (defaults: build, gpu-smoke-report.txt)
# A node is held for minutes: GPU_SMOKE_BUDGET_S=N stops every command at N seconds from the start
# (checks not begun by then are SKIPped, one cut short is CUT: neither passed nor failed, its log
# in the report) so that the report is always written;
# GPU_SMOKE_ROUNDS (default 3) sets the rounds of the compare, compile and bench figures.
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
# The shell tests' Python (numpy, h5py): this one, where a node keeps its packages (a venv), not
# /usr/bin/python3 (their default).
PIX2PIX_TEST_PYTHON="${PIX2PIX_TEST_PYTHON:-$(command -v "$python" || echo "$python")}"
export PIX2PIX_TEST_PYTHON
tests_bin="$build/bin/pix2pix_mpi_tests"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

budget="${GPU_SMOKE_BUDGET_S:-0}" rounds="${GPU_SMOKE_ROUNDS:-3}"
case "$budget$rounds" in *[!0-9]*) echo "gpu-smoke: GPU_SMOKE_BUDGET_S and GPU_SMOKE_ROUNDS are whole numbers" >&2; exit 2 ;; esac
sections="nccl ranks compare compile train bench"
only=""
for section in ${GPU_SMOKE_ONLY:-$sections}; do
  case " $sections " in *" $section "*) ;; *) echo "gpu-smoke: GPU_SMOKE_ONLY: '$section' is none of: $sections" >&2; exit 2 ;; esac
  case " $only " in *" $section "*) ;; *) only+="${only:+ }$section" ;; esac
done
ranks_all="syncbn infer emafid resume stop many"
ranks_tests=""
for test in ${GPU_SMOKE_RANKS:-$ranks_all}; do
  case " $ranks_all " in *" $test "*) ;; *) echo "gpu-smoke: GPU_SMOKE_RANKS: '$test' is none of: $ranks_all" >&2; exit 2 ;; esac
  case " $ranks_tests " in *" $test "*) ;; *) ranks_tests+="${ranks_tests:+ }$test" ;; esac
done
wanted() { case " $only " in *" $1 "*) return 0 ;; esac; return 1; }
checks=()   # "PASS|FAIL|CUT|SKIP  seconds  name: detail"
figures=()  # lines for the report's figures section
failed_logs=()  # "failed|NAME|LOG" or "cut|NAME|LOG": the logs the report ends with
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
  if cut_by_budget "$status"; then
    record CUT "$((SECONDS - start)) s" "$name" "stopped at GPU_SMOKE_BUDGET_S=$budget (log below)"
    failed_logs+=("cut|$name|$log")
  else
    record FAIL "$((SECONDS - start)) s" "$name" "exit $status (log below)"
    failed_logs+=("failed|$name|$log")
  fi
  return 1
}
# cut_by_budget STATUS: a command's exit STATUS is limited's stop at the budget's end, not its own
# failure (a test whose ranks all passed but whose mpirun had not returned yet, say).
cut_by_budget() { [ "$1" -eq 124 ] && [ "$budget" -gt 0 ] && [ "$SECONDS" -ge "$budget" ]; }
skip() { record SKIP "" "$1" "$2"; }
figure() { figures+=("$1"); }

write_report() {
  local passed=0 failures=0 skipped=0 cut=0 line entry rest
  for line in "${checks[@]}"; do
    case "$line" in
      PASS*) passed=$((passed + 1)) ;; FAIL*) failures=$((failures + 1)) ;; CUT*) cut=$((cut + 1)) ;;
      *) skipped=$((skipped + 1)) ;;
    esac
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
    echo "result   $passed passed, $failures failed, $skipped skipped, $cut cut at the budget's end"
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
      rest="${entry#*|}"
      echo
      echo "== ${entry%%|*}: ${rest%%|*} (last 25 lines)"
      tail -n 25 "${rest#*|}"
    done
  } >"$report"
  echo "gpu-smoke: $passed passed, $failures failed, $skipped skipped, $cut cut; report in $report"
  [ "$failures" -eq 0 ] && [ "$cut" -eq 0 ]
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
export FASHION_MNIST_DIR="$fashion"
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

# --- nccl: the NCCL communicator itself at worlds 1, 2 and 4, then training through it --------------
export PIX2PIX_SHARE_GPUS=1 NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
# Worlds above the GPU count share GPUs: See Note [ranks sharing a GPU] (PIX2PIX_SHARE_GPUS=1: a
# distinct NCCL_HOSTID per rank, NCCL's socket transport over lo). The first world of 2 on one GPU
# is where that is verified; what NCCL says when it refuses is in the failure's log.
share=(-x PIX2PIX_SHARE_GPUS -x NCCL_DEBUG -x FASHION_MNIST_DIR)  # only variables that are set (Open MPI 5)
section_nccl() {
  if [ ! -x "$tests_bin" ]; then
    record FAIL "" "NCCL collectives" "$tests_bin is not built (configure with -DPIX2PIX_BUILD_TESTS=ON)"
  else
    for ranks in 1 2 4; do
      # At 2 ranks NCCL says (NCCL_DEBUG=INFO) which transport joins them: the figure below.
      debug=$NCCL_DEBUG
      [ "$ranks" = 2 ] && debug=INFO
      check "NCCL collectives, $ranks rank(s) on $gpus GPU(s): every type, size and operation" \
        "$work/collectives-$ranks.log" env PIX2PIX_TEST_DEVICE=cuda NCCL_DEBUG="$debug" "${mpi[@]}" -np "$ranks" "${share[@]}" \
        -x PIX2PIX_TEST_DEVICE "$tests_bin" --gtest_filter='Collectives.*'
    done
    transport="$(grep -m1 -o 'via [A-Za-z0-9/_]*' "$work/collectives-2.log" 2>/dev/null)"
    figure "NCCL between 2 ranks on $gpus GPU(s), as its log says: ${transport:-no transport named}"
    check "2 ranks x batch B = 1 process x batch 2B over NCCL (fp32, overlapped, bf16 wire; the generator's average)" \
      "$work/equivalence.log" \
      env PIX2PIX_TEST_DEVICE=cuda "${mpi[@]}" -np 2 "${share[@]}" -x PIX2PIX_TEST_DEVICE "$tests_bin" \
      --gtest_filter='DistributedTraining.TwoRanks*:DistributedTraining.EveryRankKeepsTheAverage*'
    while read -r line; do figure "$line"; done < <(grep -E '^2xB = 1x2B|the generator.s average' "$work/equivalence.log")
    # See Note [synchronised batch norm on a GPU]: the layer's kernels first, in one process
    # (threads as ranks), then the layer over NCCL ranks.
    check "batch norm over ranks on cuda:0 runs PyTorch's SyncBatchNorm kernels and equals one batch norm of the whole batch (SyncBatchNorm.OnAGpu*)" \
      "$work/sync-bn-kernels.log" timeout --kill-after=10 120 "$build/bin/pix2pix_tests" --gtest_filter='SyncBatchNorm.OnAGpu*'
    # See Note [synchronised batch norm]: the sums of backward come from LibTorch's GPU threads.
    for ranks in 2 4; do
      # And through the fused kernels over ranks (See Note [fused batch norm and LeakyReLU]).
      check "$ranks ranks x B = 1 x ${ranks}B with batch norm over NCCL, fp32 and bf16, PyTorch's kernels and the fused ones (--sync-bn on, off must differ)" \
        "$work/sync-bn-$ranks.log" env PIX2PIX_TEST_DEVICE=cuda "${mpi[@]}" -np "$ranks" "${share[@]}" -x PIX2PIX_TEST_DEVICE "$tests_bin" \
        --gtest_filter='DistributedTraining.BatchNormOverRanksEqualsOneProcessOfTheGlobalBatch*'
      while read -r line; do figure "$line"; done < <(grep -E 'with batch norm \(.*\): largest' "$work/sync-bn-$ranks.log")
    done
  fi
  nccl_ranks=$(( gpus >= 2 ? gpus : 2 ))
  name="train over NCCL, $nccl_ranks ranks on $gpus GPU(s), with replica checks"
  if check "$name" "$work/nccl.log" \
    "${mpi[@]}" -np "$nccl_ranks" "${share[@]}" "$bin" train --data "$work/d.h5" --config configs/smoke.cfg --device cuda \
    --comm nccl --es-window 1 --check-replicas 10 --progress none --run-dir "$work/nccl"; then
    if ! trained "$work/nccl" || ! grep -q '(nccl' "$work/nccl.log"; then
      checks[-1]="${checks[-1]/PASS/FAIL}: no finite PSNR, or the NCCL communicator was not used"
      failed_logs+=("failed|$name|$work/nccl.log")
    fi
  fi
}

# --- ranks: the CPU's multi-rank command tests, on GPU ranks over NCCL -----------------------------
# The shell tests CI runs over MPI on CPUs, here with every rank on a GPU (shared when there are
# fewer GPUs than ranks) and deterministic kernels, so that "exactly as an uninterrupted run" is a
# claim about bits on GPUs too (See Note [cuDNN's autotuner and determinism]).
section_ranks() {
  { cat configs/smoke.cfg; echo "deterministic = true"; } >"$work/smoke-deterministic.cfg"
  export PIX2PIX_TEST_CONFIG="$work/smoke-deterministic.cfg"
  launch=("${mpi[@]}" --oversubscribe "${share[@]}" -x PIX2PIX_TEST_CONFIG)
  # ranks_check KEY NAME LOG COMMAND...: check, or SKIP where GPU_SMOKE_RANKS leaves KEY out.
  ranks_check() {
    local key="$1"
    shift
    case " $ranks_tests " in *" $key "*) check "$@" ;; *) skip "$1" "not in GPU_SMOKE_RANKS" ;; esac
  }
  # ranks_test KEY: the checks of KEY (run, or skipped where GPU_SMOKE_RANKS leaves it out).
  ranks_test() {
    case "$1" in
      syncbn)
        # Batch norm over ranks after a whole epoch of `pix2pix train` (the nccl section's checks are
        # of 4 steps, in fp32 and bf16; an epoch in bf16 parts at bf16's rounding whether synchronised
        # or not, docs/distributed.md).
        for case in "2 2" "4 1"; do
          read -r ranks batch <<<"$case"
          ranks_check syncbn "$ranks GPU ranks x $batch = 1 GPU x $((ranks * batch)) after an epoch, --sync-bn on and off" \
            "$work/sync-bn-epoch-$ranks.log" bash tests/dist/sync_bn_epoch_test.sh "$bin" "$ranks" "$batch" "${launch[@]}"
          while read -r line; do figure "$line"; done < <(grep -s 'after an epoch' "$work/sync-bn-epoch-$ranks.log")
        done ;;
      infer)
        ranks_check infer "2 GPU ranks: evaluate and translate write what one GPU process writes" \
          "$work/infer-ranks.log" bash tests/cli/infer_ranks_test.sh "$bin" "${launch[@]}" ;;
      emafid)
        ranks_check emafid "2 GPU ranks: the generator's average validated with FID/KID, and its evaluate = 1 GPU process" \
          "$work/ema-fid.log" bash tests/infer/ema_fid_ranks_test.sh "$bin" "${launch[@]}" ;;
      resume)
        ranks_check resume \
          "1 and 4 GPU ranks: SIGUSR1 and --resume auto exactly as uninterrupted; 4 -> 1 -> 4 at the same global batch" \
          "$work/resume-worlds.log" bash tests/dist/resume_worlds_test.sh "$bin" "${launch[@]}" ;;
      stop)
        ranks_check stop "2 GPU ranks: a stop at any moment (signals in set-up, steps, validation, checkpoints) resumes exactly" \
          "$work/stop-anywhere.log" bash tests/cli/stop_anywhere_test.sh "$bin" 2 "${launch[@]}" ;;
      many)
        ranks_check many \
          "4 GPU ranks: uneven shards, the stop decision, elastic resumes 4->3->2 and 1->4, a SIGKILLed rank, replicas" \
          "$work/many-ranks.log" bash tests/dist/many_ranks_test.sh "$bin" "${launch[@]}" ;;
    esac
  }
  # In the order GPU_SMOKE_RANKS names them (a short budget cuts the last), then the rest as skipped.
  for test in $ranks_tests; do ranks_test "$test"; done
  for test in $ranks_all; do
    case " $ranks_tests " in *" $test "*) ;; *) ranks_test "$test" ;; esac
  done
  for log in infer-ranks resume-worlds stop-anywhere many-ranks; do
    while read -r line; do figure "$log: $line"; done < <(grep -sE '^(ok|FAIL) ' "$work/$log.log" | head -n 12)
  done
  while read -r line; do figure "$line"; done < <(grep -s '^ema + FID/KID' "$work/ema-fid.log")
  unset PIX2PIX_TEST_CONFIG
}

# --- compare: ours against PyTorch on one GPU ---------------------------------------------------
# The pairs come from the Fashion-MNIST IDX file through bench/pytorch_pix2pix.py (PyTorch alone: a
# pip PyTorch has no numpy or h5py, See Note [pairs without numpy]), which writes them as A|B PNGs
# for `pix2pix prepare --aligned`: both sides train on the same 160 256x256 RGB pairs (ours on
# the 128 of its train split). PyTorch as a careful user runs it: cudnn.benchmark on, channels-last
# in bf16 and fp16 (tensor cores take NHWC), and torch.compile where GPU_SMOKE_COMPILE_AT says.
# Ours: `bench --what train` with its defaults (cuDNN autotuned). The sides alternate within each
# of GPU_SMOKE_ROUNDS rounds. GPU memory: the peak of nvidia-smi's memory.used on GPU 0 during the
# run, above the idle GPU's. MFU: the step's FLOPs (PyTorch's flop counter: convolutions, the same
# networks on both sides) x steps/s over the GPU's dense peak for the precision (fp32 convolutions
# run as TF32 on both sides, cuDNN's default; peak_tflops below).
idx=$fashion/train-images-idx3-ubyte.gz
pytorch=(bench/pytorch_pix2pix.py --idx "$idx" --size 256 --channels 3 --pairs 160)
compare_at="${GPU_SMOKE_COMPARE:-16:bf16 64:bf16 16:fp16 64:fp16 16:fp32 64:fp32 1:fp32 1:bf16}"
compile_at="${GPU_SMOKE_COMPILE_AT:-16:bf16 64:bf16 1:fp32}"
# Ours with NCHW parameters too, where --channels-last auto is on (See Note [channels-last parameters]):
# whether it pays on the GPU is measured, not assumed.
nchw_at="${GPU_SMOKE_NCHW_AT-64:bf16}"  # each of these *_AT set and empty: at no point
# Ours with the host's read of the skip decision too (See Note [updates decided on the device]):
# a small batch is where a host read per update group and step shows.
host_update_at="${GPU_SMOKE_HOST_UPDATE_AT-1:fp32}"
# Ours with the step captured as one CUDA graph (See Note [a step as one CUDA graph]): where launches
# bound the step (batch 1) and where kernels do.
graph_at="${GPU_SMOKE_GRAPH_AT-1:fp32 1:bf16 64:bf16}"
# Ours with the fused kernels (the discriminators' first bias and LeakyReLU, batch norm with its
# LeakyReLU, the U-Net's concatenations with their ReLU and the batch norm before them), alone and
# with the graph (See Note [fused bias and LeakyReLU], See Note [fused batch norm and LeakyReLU],
# See Note [fused concatenation and ReLU], See Note [fused concatenation, batch norm and ReLU]):
# --fused-kernels auto is off until this has measured them.
fused_at="${GPU_SMOKE_FUSED_AT-64:bf16 16:bf16}"
# Where our step's time goes on the GPU beside PyTorch's, for the profile the gap needs: untimed
# runs of their own, before the timed rounds. See Note [a trace beside the timing].
trace_at="${GPU_SMOKE_TRACE_AT-64:bf16 1:fp32}"  # set and empty: no traces
# Our options for the traced runs beyond the point's own (--fused-kernels on, say), word by word.
read -r -a trace_ours_args <<<"${GPU_SMOKE_TRACE_OURS_ARGS:-}"
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
# peak_tflops PRECISION: the dense peak of GPU 0 (datasheet figures; "" for a GPU not listed).
peak_tflops() {
  local gpu
  gpu="$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null)"
  case "$gpu:$1" in
    *H100*PCIe*:fp32) echo 378 ;; *H100*PCIe*:*) echo 756 ;;
    *H100*NVL*:fp32) echo 417 ;; *H100*NVL*:*) echo 835 ;;
    *H100*:fp32 | *H200*:fp32) echo 494.7 ;; *H100*:* | *H200*:*) echo 989.4 ;;
    *A100*:fp32) echo 156 ;; *A100*:*) echo 312 ;;
  esac
}
gflop_per_image=""
declare -A ips_sum ips_n mib_max
side() {  # side LABEL BATCH PRECISION ROUND COMMAND...: one timed run; its images/s and peak MiB kept
  local label="$1" batch="$2" precision="$3" round="$4" log mib ips key start=$SECONDS
  shift 4
  log="$work/cmp-$label-$batch-$precision-$round.log"
  key="$label|$batch|$precision"
  if out_of_time; then
    record SKIP "" "$label, 256x256 batch $batch $precision (round $round)" "GPU_SMOKE_BUDGET_S=$budget spent"
    return 1
  fi
  local status
  mib="$(peak_memory "$log" "$@")"
  status=$?
  if [ "$status" -ne 0 ]; then
    if cut_by_budget "$status"; then
      record CUT "$((SECONDS - start)) s" "$label, 256x256 batch $batch $precision (round $round)" \
        "stopped at GPU_SMOKE_BUDGET_S=$budget (log below)"
      failed_logs+=("cut|$label, batch $batch $precision|$log")
    else
      record FAIL "$((SECONDS - start)) s" "$label, 256x256 batch $batch $precision (round $round)" "exit $status (log below)"
      failed_logs+=("failed|$label, batch $batch $precision|$log")
    fi
    return 1
  fi
  ips="$(sed -n 's/^images\/s \([0-9.]*\).*/\1/p' "$log" | head -n 1)"
  [ -n "$ips" ] || ips=0
  # A captured step's memory around its capture (bench's "# CUDA graph:" line), once a point.
  if [ -z "${ips_n[$key]:-}" ] && grep -q '^# CUDA graph: ' "$log"; then
    figure "$label, 256x256 batch $batch $precision: $(sed -n 's/^# CUDA graph: //p' "$log" | head -n 1)"
  fi
  ips_sum[$key]="${ips_sum[$key]:-}${ips_sum[$key]:+ }$ips"
  ips_n[$key]=$(( ${ips_n[$key]:-0} + 1 ))
  [ "${mib_max[$key]:-0}" -ge "${mib%.*}" ] 2>/dev/null || mib_max[$key]="${mib%.*}"
  return 0
}
# A run that hangs (a first CUDA graph, say) must not take the rest of a held node's budget: each
# run is ended after the seconds given to `capped` (exit 124 in the report), several times what
# one takes (10-25 s on an H100, torch.compile's about a minute). An array, not a function: it runs
# under limited's own timeout, which execs it.
capped=(timeout --kill-after=10)
ours() { side "${4:-ours}" "$1" "$2" "$3" "${capped[@]}" 150 "$bin" bench --what train --data "$work/cmp.h5" \
  --device cuda --preprocess none --batch-size "$1" --precision "$2" --steps 30 --warmup 10 --progress none "${@:5}"; }
# tune PRECISION: PyTorch's options as a careful user tunes it, in the array `tuned`: cuDNN's
# autotuner, and channels-last where tensor cores take it (bf16/fp16).
tune() {
  tuned=(--cudnn-benchmark)
  [ "$1" = fp32 ] || tuned+=(--channels-last)
}
eager() {
  tune "$2"
  side "PyTorch eager" "$1" "$2" "$3" "${capped[@]}" 150 "$python" "${pytorch[@]}" --device cuda --batch-size "$1" \
    --precision "$2" --steps 30 --warmup 10 "${tuned[@]}"
}
compiled() {  # compiled MODE BATCH PRECISION ROUND
  tune "$3"
  side "torch.compile $1" "$2" "$3" "$4" "${capped[@]}" 400 "$python" "${pytorch[@]}" --device cuda --batch-size "$2" \
    --precision "$3" --steps 30 --warmup 10 --compile "$1" "${tuned[@]}"
}
# stats KEY: "min median max" of the round figures of KEY
stats() { tr ' ' '\n' <<<"${ips_sum[$1]:-}" | sort -g | awk 'NF { v[n++] = $1 } END {
  if (n == 0) { print "- - -"; exit } printf "%.1f %.1f %.1f", v[0], v[int((n - 1) / 2)], v[n - 1] }'; }
compare_figures() {  # one figure line per batch:precision measured
  local at batch precision peak base label med mib line
  for at in $compare_at; do
    batch="${at%%:*}" precision="${at#*:}"
    peak="$(peak_tflops "$precision")"
    base="$(stats "PyTorch eager|$batch|$precision" | cut -d' ' -f2)"
    line="$(printf '256x256 batch %-2s %-4s' "$batch" "$precision")"
    for label in ours "ours NCHW" "ours host update" "ours CUDA graph" "ours fused kernels" "ours fused, CUDA graph" \
      "PyTorch eager" "torch.compile default" "torch.compile reduce-overhead"; do
      [ -n "${ips_sum[$label|$batch|$precision]:-}" ] || continue
      med="$(stats "$label|$batch|$precision" | cut -d' ' -f2)"
      mib="${mib_max[$label|$batch|$precision]:--}"
      line+="$(printf ' | %s %s images/s (min/med/max %s) %s MiB' "$label" "$med" "$(stats "$label|$batch|$precision" | tr ' ' /)" "$mib")"
      line+="$(awk -v ips="$med" -v base="$base" -v g="$gflop_per_image" -v p="$peak" 'BEGIN {
        if (base + 0 > 0) printf " %.2fx eager", ips / base
        if (g != "" && p != "") printf ", MFU %.1f%%", 100 * ips * g / (p * 1000) }')"
    done
    figure "$line"
  done
  figure "(MFU: ${gflop_per_image:-?} GFLOP an image, counted by PyTorch, over $(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null)'s dense peak: bf16/fp16 $(peak_tflops bf16) TFLOPS, TF32 $(peak_tflops fp32))"
}
section_compare() {  # compare and compile: one set-up, the rounds interleave both
  # shellcheck disable=SC2016 # the pairs' sh -c expands its own arguments
  if ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >"$work/torch.log" 2>&1; then
    record FAIL "" "PyTorch comparison" "$python has no PyTorch that sees the GPU (set PYTHON)"
    failed_logs+=("failed|PyTorch|$work/torch.log")
  elif check "the comparison's pairs (160 A|B PNGs, then prepare --aligned)" "$work/cmp-prepare.log" \
    sh -c '"$1" "$2" --idx "$3" --size 256 --channels 3 --pairs 160 --write-aligned "$4/aligned" &&
           "$5" prepare --aligned "$4/aligned" --size 256 --channels 3 --val-fraction 0.2 --out "$4/cmp.h5" --progress none' \
    sh "$python" bench/pytorch_pix2pix.py "$idx" "$work" "$bin"; then
    if check "the step's FLOPs (PyTorch's flop counter, batch 1)" "$work/flops.log" "$python" "${pytorch[@]}" \
      --device cuda --batch-size 1 --steps 1 --warmup 0 --flops; then
      gflop_per_image="$(sed -n 's/^step GFLOP \([0-9.]*\)/\1/p' "$work/flops.log")"
    fi
    if wanted compare; then
      check "updates decided on cuda:0 take and skip what the host's decision does (DeviceUpdate.*)" \
        "$work/device-update.log" "${capped[@]}" 120 "$build/bin/pix2pix_tests" --gtest_filter='DeviceUpdate.*'
      check "the step as a CUDA graph on cuda:0 gives the eager steps' losses and weights (CapturedStep.*)" \
        "$work/captured-step.log" "${capped[@]}" 120 "$build/bin/pix2pix_tests" --gtest_filter='CapturedStep.*'
      check "the fused kernels on cuda:0 give ATen's operations (FusedActivation.*)" \
        "$work/fused-activation.log" "${capped[@]}" 120 "$build/bin/pix2pix_tests" --gtest_filter='FusedActivation.*'
      # The traces before the timed rounds: a budget that runs short then cuts a round, not the
      # profile the gap needs (separate processes, so the rounds' figures are their own).
      for at in $trace_at; do
        batch="${at%%:*}" precision="${at#*:}"
        trace_file="$(dirname "$report")/trace-ours-$batch-$precision.json"
        check "a Chrome trace of 2 of our steps, 256x256 batch $batch $precision ($trace_file)" \
          "$work/trace-$batch-$precision.log" "$bin" bench --what train --data "$work/cmp.h5" --device cuda \
          --preprocess none --batch-size "$batch" --precision "$precision" --steps 3 --warmup 5 --progress none \
          --trace "$trace_file" --trace-steps 2 "${trace_ours_args[@]}" || continue
        # PyTorch eager's steps, tuned as in the comparison, traced the same way; then both side by
        # side per operator (bench/trace_summary.py), the summary's head among the figures.
        tune "$precision"
        pytorch_trace="$(dirname "$report")/trace-pytorch-$batch-$precision.json"
        summary="$(dirname "$report")/trace-summary-$batch-$precision.md"
        check "a Chrome trace of 2 of PyTorch eager's steps, the same ($pytorch_trace)" \
          "$work/trace-pytorch-$batch-$precision.log" "$python" "${pytorch[@]}" --device cuda --batch-size "$batch" \
          --precision "$precision" --steps 3 --warmup 5 "${tuned[@]}" \
          --trace "$pytorch_trace" --trace-steps 2 || continue
        if check "both traces per operator, 256x256 batch $batch $precision ($summary)" "$summary" \
          "$python" bench/trace_summary.py --top-held 15 ours="$trace_file" "PyTorch eager"="$pytorch_trace"; then
          # The tables before the per-operator one: per step (time, kernels, memory at the peak), the
          # peak of each phase and what is live at the peak, by what allocated it; without separators
          # and blank lines.
          while IFS= read -r line; do figure "trace $batch $precision: $line"; done < <(
            sed -n '/^| operator (per step/q; /^| per step /d; /^|---|/d; /^$/d; p' "$summary")
        fi
        # A GPU trace of 2 steps is some 10 MB of JSON, and a held node's results often travel back
        # through a narrow channel: the traces are kept compressed once the summary has read them.
        for file in "$trace_file" "$pytorch_trace"; do
          if [ -f "$file" ]; then xz -f -3 "$file" 2>/dev/null || gzip -f "$file"; fi
        done
      done
    fi
    for round in $(seq 1 "$rounds"); do
      if wanted compare; then
        for at in $compare_at; do
          ours "${at%%:*}" "${at#*:}" "$round"
          case " $nchw_at " in *" $at "*) ours "${at%%:*}" "${at#*:}" "$round" "ours NCHW" --channels-last off ;; esac
          case " $host_update_at " in *" $at "*)
            ours "${at%%:*}" "${at#*:}" "$round" "ours host update" --device-update off ;;
          esac
          case " $graph_at " in *" $at "*) ours "${at%%:*}" "${at#*:}" "$round" "ours CUDA graph" --cuda-graph on ;; esac
          case " $fused_at " in *" $at "*)
            ours "${at%%:*}" "${at#*:}" "$round" "ours fused kernels" --fused-kernels on
            ours "${at%%:*}" "${at#*:}" "$round" "ours fused, CUDA graph" --fused-kernels on --cuda-graph on ;;
          esac
          eager "${at%%:*}" "${at#*:}" "$round"
        done
      fi
      if wanted compile; then
        for at in $compile_at; do
          wanted compare || eager "${at%%:*}" "${at#*:}" "$round"
          for mode in default reduce-overhead; do compiled "$mode" "${at%%:*}" "${at#*:}" "$round"; done
        done
      fi
    done
    record PASS "" "ours and PyTorch side by side" "$rounds round(s); figures below"
    compare_figures
  fi
}

# --- train: one GPU per precision, the classifier, inference, the optimizer ---------------------
section_train() {
  for precision in fp32 bf16 fp16; do
    name="train $precision on cuda:0 (2 epochs of configs/smoke.cfg)"
    if check "$name" "$work/train-$precision.log" \
      "$bin" train --data "$work/d.h5" --config configs/smoke.cfg --device cuda --precision "$precision" \
      --es-window 1 --progress none --run-dir "$work/$precision"; then
      if trained "$work/$precision"; then
        figure "train $precision, 1 GPU: best smoothed val PSNR $(psnr "$work/$precision") dB"
      else
        checks[-1]="${checks[-1]/PASS/FAIL}: no finite PSNR on a GPU in summary.json"
        failed_logs+=("failed|$name|$work/$precision/summary.json")
      fi
    fi
  done
  # The recognition network (train-classifier) on the GPU: one epoch of the same data's B images and labels.
  if check "train-classifier on cuda:0 (1 epoch)" "$work/classifier.log" \
    "$bin" train-classifier --data "$work/d.h5" --out "$work/classifier.pt" --device cuda --max-epochs 1 \
    --batch-size 64 --progress none; then
    figure "train-classifier, 1 GPU: $(grep '^best epoch' "$work/classifier.log")"
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
      failed_logs+=("failed|FusedAdam|$work/optimizer.log")
    fi
  fi
}

# --- bench: throughput at the reference model size (256x256, 3 channels), batch 8 per GPU ------
benches=0
bench() {  # bench LABEL RANKS OPTIONS...
  local label="$1" ranks="$2" log
  shift 2
  benches=$((benches + 1))
  log="$work/bench-$benches.log"
  # A hung collective ends the job in 60 s with the watchdog's report; a hang elsewhere (a first
  # CUDA graph over NCCL) at the cap (capped, above).
  if check "bench: $label" "$log" "${capped[@]}" 150 "${mpi[@]}" -np "$ranks" "${share[@]}" "$bin" bench --what train \
    --data "$work/d256.h5" --device cuda --preprocess none --batch-size 8 --steps 30 --warmup 5 --progress none \
    --collective-timeout 60 "$@"; then
    figure "bench 256x256 batch 8/GPU, $label: $(grep '^images/s' "$log")$(grep -o 'started during backward[^;]*' "$log" | head -n 1 | sed 's/^/; /')$(grep -o '[0-9]* replays' "$log" | sed 's/^/; /')$(sed -n 's/^# CUDA graph: /; /p' "$log" | head -n 1)"
  fi
}
section_bench() {
  check "prepare the bench data (512 pairs, 256x256 RGB)" "$work/prepare256.log" \
    "$bin" prepare --config configs/prepare-fashion-edges.ini "${fashion_sources[@]}" --limit 512 --size 256 --channels 3 \
    --out "$work/d256.h5" --progress none || return
  for round in $(seq 1 "$rounds"); do
    # What no GPU has run yet first (a short budget cuts the tail): the overlapped all-reduce (how many
    # buckets start during backward), and the step as one CUDA graph with NCCL's all-reduce inside it
    # (bench checks the replicas identical); then one GPU per precision.
    for overlap in off on; do
      bench "2 ranks on $gpus GPU(s) over NCCL, overlap $overlap (round $round)" 2 --comm nccl --overlap-grad-sync "$overlap"
    done
    bench "2 ranks on $gpus GPU(s) over NCCL, CUDA graph on (round $round)" 2 --comm nccl --cuda-graph on
    # What batch norm over the ranks costs beside the runs above (--sync-bn auto: on): its layer is
    # composed of ATen's elementwise operators, not fused (See Note [synchronised batch norm]).
    bench "2 ranks on $gpus GPU(s) over NCCL, batch norm per rank (round $round)" 2 --comm nccl --sync-bn off
    for precision in fp32 bf16 fp16; do bench "1 GPU, $precision (round $round)" 1 --precision "$precision"; done
  done
}

# The sections in the order GPU_SMOKE_ONLY names them (the default: as listed above), each once;
# compare and compile share one set-up and run together where the first of them is named.
compare_ran=false
for section in $only; do
  case "$section" in
    nccl) section_nccl ;;
    ranks) section_ranks ;;
    compare | compile) $compare_ran || section_compare; compare_ran=true ;;
    train) section_train ;;
    bench) section_bench ;;
  esac
done

write_report
