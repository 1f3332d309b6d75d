#!/usr/bin/env bash
# A real one-node Slurm (munge, slurmctld, slurmd on this machine, 2 CPUs):
#  1. `sbatch --wait slurm/train.sbatch` with 2 CPU tasks (srun --mpi=pmix) completes and writes
#     runs/<name>-<jobid>; the same with LAUNCHER=mpirun; docs/slurm.md's CPU line as written;
#     the unpaired models the same way: --model cyclegan on an unpaired file (shirts and pullovers
#     in the reference's trainA/trainB/testA/testB folders) and --model onesided on the same file;
#  2. a job array of 2 sweep lines under LAUNCHER=mpirun completes and the collector prints both
#     rows; its two mpiruns, started together on the node, and 5.'s make their session directories
#     in folders of their own, removed after (the shared one is a file meanwhile, so that one made
#     there fails at once);
#  3. `scancel --batch --signal=USR1` mid-run, under srun and under mpirun: checkpoint, exit 75,
#     requeue, resume, finish, with the validation PSNR of every epoch equal to the uninterrupted
#     run of 1.;
#  4. kill -9 of a rank under srun: the job ends within seconds, not at its time limit, and a
#     resubmission with --resume auto continues from the last checkpoint;
#  5. slurm/scaling-study.sh at 1 and 2 CPU ranks under LAUNCHER=mpirun (strong scaling): one CSV
#     row per point with speed-up and efficiency, and a PNG plot;
#  6. the same with --to-quality: a training per point to its stop, each an sbatch job, and
#     quality.csv with a row per rank count.
# Usage: slurm_one_node_test.sh PIX2PIX_BIN
set -uo pipefail
bin="$(realpath "$1")"
root="$(cd "$(dirname "$0")/../.." && pwd)"
source "$root/tests/cluster/cluster_lib.sh"
# The blocked session top (below) is a file in TMPDIR: never left there by a test that failed.
trap 'cluster_teardown; [ ! -f "${shared_top:-}" ] || rm -f "$shared_top"' EXIT
trap 'exit 130' INT TERM

cluster_start_one_node
work="$CLUSTER_DIR/jobs"
cd "$work" || exit 1
export PIX2PIX_BIN="$bin" PIX2PIX_SLURM_DIR="$root/slurm" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 330 --out "$work/d.h5" >/dev/null 2>&1 || { echo "prepare failed"; exit 1; }
# 2 ranks x 8 = 16 per step, 18 steps per epoch, 4 epochs: ~10 s of training.
model_opts=(--device cpu --config "$root/configs/smoke.cfg" --collective-timeout 30)
common=("${model_opts[@]}" --data "$work/d.h5")
train_opts=("${common[@]}" --max-epochs 4)
sb=(sbatch --wait --nodes=1 --ntasks=2 --ntasks-per-node=2 --gpus-per-task=0 --cpus-per-task=1 --time=5)

# 1. srun and mpirun launchers
for launcher in srun mpirun; do
  start=$(date +%s)
  LAUNCHER=$launcher "${sb[@]}" --job-name="plain-$launcher" -o "$work/plain-$launcher.out" \
    "$root/slurm/train.sbatch" "${train_opts[@]}" >"$work/plain-$launcher.sbatch" 2>&1
  status=$?
  job=$(sed -n 's/^Submitted batch job //p' "$work/plain-$launcher.sbatch")
  run="$work/runs/plain-$launcher-$job"
  if [ "$status" -ne 0 ] || [ ! -f "$run/summary.json" ] || [ "$(tail -n +2 "$run/metrics.csv" | wc -l)" != 4 ]; then
    fail "$launcher: sbatch status $status, run directory $run"; tail -20 "$work/plain-$launcher.out"
  else
    grep -q '"world": 2' "$run/summary.json" || fail "$launcher: not 2 ranks"
    echo "ok   sbatch train.sbatch ($launcher, 2 tasks): $(elapsed_since "$start") s"
  fi
done
reference="$work/runs/plain-srun-$(sed -n 's/^Submitted batch job //p' "$work/plain-srun.sbatch")"

# 1a. docs/slurm.md's CPU line as written (its "# CPU ranks" line), from a submit directory laid
# out as the repository is (slurm/, configs/, data/fashion-edges.h5), with --wait and
# --max-epochs 2 added: the #SBATCH defaults ask for 4 tasks of 8 CPUs, which a 2-CPU node refuses.
documented="$(grep -m1 -- '# CPU ranks$' "$root/docs/slurm.md" | sed 's/[[:space:]]*# CPU ranks$//')"
read -r -a words <<<"$documented"
mkdir -p "$work/docs-cpu/data"
ln -s "$root/slurm" "$work/docs-cpu/slurm" && ln -s "$root/configs" "$work/docs-cpu/configs"
ln -s "$work/d.h5" "$work/docs-cpu/data/fashion-edges.h5"
start=$(date +%s)
if [ "${words[0]:-}" != sbatch ]; then
  fail "docs/slurm.md has no 'sbatch ... # CPU ranks' line: '$documented'"
else
  (cd "$work/docs-cpu" && timeout 300 sbatch --wait "${words[@]:1}" --max-epochs 2 >submit.log 2>&1)
  status=$?
  job=$(sed -n 's/^Submitted batch job //p' "$work/docs-cpu/submit.log")
  run="$work/docs-cpu/runs/pix2pix-$job"
  if [ "$status" -ne 0 ] || ! grep -q '"world": 2' "$run/summary.json" 2>/dev/null; then
    fail "the documented CPU line: sbatch status $status, run directory $run"
    cat "$work/docs-cpu/submit.log"; tail -20 "$work/docs-cpu/pix2pix-$job.out" 2>/dev/null
  else
    echo "ok   docs/slurm.md's CPU line as written (2 tasks on a 2-CPU node): $(elapsed_since "$start") s"
  fi
fi

# 1b. the unpaired models under srun on an unpaired file (Fashion-MNIST shirts as A,
# pullovers as B, written as PGM files in the reference's layout): CycleGAN stops on the cycle PSNR,
# onesided on the deviation PSNR.
/usr/bin/python3 - "$work/shirts-pullovers" <<'PY'
import gzip, os, sys
root = sys.argv[1]
images = gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz").read()[16:]
labels = gzip.open("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz").read()[8:]
wanted = {"trainA": (6, 0, 90), "trainB": (2, 0, 70), "testA": (6, 90, 100), "testB": (2, 70, 80)}
for folder, (label, first, last) in wanted.items():
    os.makedirs(os.path.join(root, folder))
    of_class = [i for i, l in enumerate(labels) if l == label][first:last]
    for i in of_class:
        with open(os.path.join(root, folder, "%05d.pgm" % i), "wb") as f:
            f.write(b"P5 28 28 255\n" + images[i * 784:(i + 1) * 784])
PY
"$bin" prepare --cyclegan-layout "$work/shirts-pullovers" --size 32 --out "$work/u.h5" >"$work/u.log" 2>&1 ||
  { fail "prepare --cyclegan-layout"; cat "$work/u.log"; }
for case in "cyclegan u.h5 val_cycle_psnr" "onesided u.h5 val_deviation_psnr"; do
  read -r model data column <<<"$case"
  start=$(date +%s)
  "${sb[@]}" --job-name="$model" -o "$work/$model.out" "$root/slurm/train.sbatch" "${model_opts[@]}" --data "$work/$data" \
    --model "$model" --netG unet --max-epochs 2 >"$work/$model.sbatch" 2>&1
  status=$?
  run="$work/runs/$model-$(sed -n 's/^Submitted batch job //p' "$work/$model.sbatch")"
  values="$(/usr/bin/python3 -c "import csv, sys; print(' '.join(r['$column'] for r in csv.DictReader(open(sys.argv[1]))))" \
    "$run/metrics.csv" 2>/dev/null)"
  if [ "$status" -ne 0 ] || ! grep -q '"world": 2' "$run/summary.json" 2>/dev/null || [ "$(echo "$values" | wc -w)" != 2 ] ||
    [ ! -f "$run/checkpoints/best_generator.pt" ]; then
    fail "$model under srun: sbatch status $status, $column '$values'"; tail -20 "$work/$model.out"
  else
    echo "ok   sbatch train.sbatch --model $model (srun, 2 tasks, $data): $column $values; $(elapsed_since "$start") s"
  fi
done

# The mpirun cases below run with the shared session top blocked (tests/support/shared_session_top.sh).
# shellcheck source=tests/support/shared_session_top.sh
source "$root/tests/support/shared_session_top.sh"

# 2. a job array over two sweep lines under mpirun (its two tasks start together), then the collector
printf '# two lines of the batch study\n--batch-size 8 --lr-scaling none\n\n--batch-size 4 --lr-scaling sqrt\n' >"$work/two.sweep"
start=$(date +%s)
block_shared_top
LAUNCHER=mpirun "${sb[@]}" --array=1-2 --ntasks=1 --job-name=sweep -o "$work/sweep-%A_%a.out" "$root/slurm/sweep.sbatch" \
  "$work/two.sweep" "${common[@]}" --max-epochs 2 >"$work/sweep.sbatch" 2>&1
status=$?
array=$(sed -n 's/^Submitted batch job //p' "$work/sweep.sbatch")
unblock_shared_top "sweep array" || fail "the sweep array left its session folders"
if [ "$status" -ne 0 ]; then
  fail "sweep array: status $status"; cat "$work"/sweep-*.out | tail -20
else
  "$root/slurm/collect-sweep.sh" "$work/runs/sweep-$array" >"$work/table.txt" 2>&1 || fail "collector failed"
  if grep -q '^| 8 *| none' "$work/table.txt" && grep -q '^| 4 *| sqrt' "$work/table.txt"; then
    echo "ok   job array of 2 sweep lines (mpirun) + collector: $(elapsed_since "$start") s"
  else
    fail "sweep table lacks a row"; cat "$work/table.txt"
  fi
fi

# 3. preemption: USR1 to the batch shell mid-run → checkpoint, 75, requeue, resume, finish
preempt_case() {
  local launcher="$1" name="preempt-$1" start job run waiter status
  start=$(date +%s)
  LAUNCHER=$launcher "${sb[@]}" --job-name="$name" -o "$work/$name.out" --open-mode=append "$root/slurm/train.sbatch" \
    "${train_opts[@]}" >"$work/$name.sbatch" 2>&1 &
  waiter=$!
  job=""
  for _ in $(seq 100); do job=$(squeue -h -n "$name" -o %i 2>/dev/null | head -1); [ -n "$job" ] && break; sleep 0.1; done
  run="$work/runs/$name-$job"
  # Signal once the first epoch is written, i.e. in the middle of the run.
  for _ in $(seq 300); do [ "$(tail -n +2 "$run/metrics.csv" 2>/dev/null | wc -l)" -ge 1 ] && break; sleep 0.1; done
  scancel --batch --signal=USR1 "$job"
  # Slurm makes a requeued job eligible ~2 minutes later; bring that forward once the old step has
  # cleaned up (its PMIx socket gone: a step started before that fails to launch).
  for _ in $(seq 300); do
    scontrol show job "$job" 2>/dev/null | grep -q 'Restarts=1' && scontrol show job "$job" | grep -q 'JobState=PENDING' && break
    sleep 0.1
  done
  for _ in $(seq 100); do compgen -G "$CLUSTER_DIR/spool/*/stepd.slurm.pmix.$job.*" >/dev/null || break; sleep 0.1; done
  # Slurm revokes the old credential at the requeue, in whole seconds: a restart within the same
  # second is "Killing non-startable batch JobId=N: Job credential revoked" (seen under mpirun,
  # which has no PMIx step to wait for above).
  sleep 2
  scontrol update JobId="$job" StartTime=now >/dev/null 2>&1
  wait "$waiter"
  status=$?
  if [ "$status" -ne 0 ] || ! grep -q "exited with status 75" "$work/$name.out" ||
    ! grep -q "requeued job $job" "$work/$name.out" || ! grep -q "resumed from .*last.pt" "$work/$name.out"; then
    fail "preemption ($launcher): sbatch status $status"; grep -v '^    ' "$work/$name.out" | tail -30
  elif ! diff <(cut -d, -f1,7 "$reference/metrics.csv") <(cut -d, -f1,7 "$run/metrics.csv") >/dev/null; then
    fail "preemption ($launcher): the resumed run's validation PSNR differs from the uninterrupted run"
    paste -d' ' <(cut -d, -f1,7 "$reference/metrics.csv") <(cut -d, -f1,7 "$run/metrics.csv")
  else
    echo "ok   USR1 ($launcher) → checkpoint → requeue → resume → same val PSNR per epoch: $(elapsed_since "$start") s"
  fi
}
preempt_case srun
preempt_case mpirun

# 4. a rank killed with SIGKILL under srun: ended within seconds, then resumed
"${sb[@]}" --job-name=killed -o "$work/killed.out" "$root/slurm/train.sbatch" "${train_opts[@]}" --test-kill-at-step 40 \
  >"$work/killed.sbatch" 2>&1
if expect_killed_job "kill -9 of rank 1 under srun at step 40" $? "$work/killed.out"; then
  job=$(sed -n 's/^Submitted batch job //p' "$work/killed.sbatch")
  PIX2PIX_RUN_DIR="runs/killed-$job" "${sb[@]}" --job-name=killed-resume -o "$work/killed-resume.out" \
    "$root/slurm/train.sbatch" "${train_opts[@]}" >/dev/null 2>&1
  status=$?
  if [ "$status" -ne 0 ] || ! grep -q "resumed from .*last.pt: epoch 1 done" "$work/killed-resume.out"; then
    fail "resume after the killed rank: status $status"; tail -20 "$work/killed-resume.out"
  else
    echo "ok   resubmitted with --resume auto: continued from epoch 1 and finished"
  fi
fi

# 5. a strong-scaling study at 1 and 2 ranks
start=$(date +%s)
block_shared_top
LAUNCHER=mpirun "$root/slurm/scaling-study.sh" --max-gpus 2 --gpus-per-node 2 --cpu --mode strong --batch 16 --steps 10 \
  --warmup 2 --time 5 --out "$work/scaling" -- "${common[@]}" >"$work/scaling.log" 2>&1
status=$?
unblock_shared_top "scaling study" || fail "the scaling study left its session folders"
if [ "$status" -ne 0 ] || [ "$(tail -n +2 "$work/scaling/scaling.csv" | cut -d, -f1 | tr '\n' ' ')" != "1 2 " ] ||
  ! head -c 8 "$work/scaling/scaling.png" | grep -q PNG; then
  fail "scaling study: status $status"; cat "$work/scaling.log"; cat "$work"/scaling/point-*.out
else
  echo "ok   scaling study 1-2 ranks (mpirun): $(elapsed_since "$start") s; $(sed -n 3p "$work/scaling/scaling.csv")"
fi

# 6. a time-to-quality study through Slurm at 1 and 2 ranks: each training an sbatch job to its stop
start=$(date +%s)
"$root/slurm/scaling-study.sh" --to-quality --max-gpus 2 --gpus-per-node 2 --cpu --mode strong --batch 8 --seeds 1 \
  --quality-targets -1000,1000 --time 5 --out "$work/quality" -- "${common[@]}" --max-epochs 3 --es-window 1 \
  >"$work/quality.log" 2>&1
status=$?
if [ "$status" -ne 0 ] || [ "$(tail -n +2 "$work/quality/quality.csv" | cut -d, -f1,2,3 | tr '\n' ' ')" != "1,1,8 2,1,8 " ] ||
  ! grep -q '"world": 2' "$work/quality/run-n2-s1/summary.json" ||
  ! grep -q "point 2, seed 1: 1 node(s) x 2: srun" "$work/quality.log"; then
  fail "time-to-quality study through Slurm: status $status"; cat "$work/quality.log" "$work"/quality/*.csv
  tail -n 5 "$work"/quality/run-*.out
else
  echo "ok   time-to-quality study through Slurm, 1-2 ranks: $(elapsed_since "$start") s; $(sed -n 3p "$work/quality/quality.csv")"
fi

[ "$failures" -eq 0 ] && echo "slurm one node: OK"
exit "$failures"
