#!/usr/bin/env bash
# `bench --what train --phases` on 2 ranks: every phase of the step is reported (mean over ranks,
# slowest rank, share), and the phases account for the timed steps: their shares add up to
# between 80 and 101 % (nothing else runs in the timed loop). The same for the unpaired models
# (--model cyclegan, onesided), whose --csv rows name their model and threads per rank; a --csv
# file of other columns is refused before anything runs; a bench whose replicas or losses fail
# its own check exits 1.
set -euo pipefail
bin="$1"
shift
mpirun=("$@")
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 120 --out "$dir/d.h5" >/dev/null 2>&1
"${mpirun[@]}" -np 2 "$bin" bench --what train --config "$root/configs/smoke.cfg" --data "$dir/d.h5" \
  --steps 6 --warmup 1 --phases >"$dir/out.log" 2>&1 || { cat "$dir/out.log"; exit 1; }
for phase in "forward G" "D step" "D gradient averaging" "D check + Adam" "G step" "G gradient averaging" \
  "G check + Adam" "batch-norm sync" "data (next batch)"; do
  grep -q "^$phase" "$dir/out.log" || { cat "$dir/out.log"; echo "no line for phase '$phase'"; exit 1; }
done
total=$(sed -n '/^# phases/,$p' "$dir/out.log" | awk '/%$/ { sub("%", "", $NF); sum += $NF } END { print sum }')
awk -v t="$total" 'BEGIN { exit !(t >= 80 && t <= 101) }' ||
  { cat "$dir/out.log"; echo "phase shares add up to $total %"; exit 1; }
echo "bench phases: OK ($total % of the step)"
# MPI's collectives block, so the host's time in them is theirs: the line's share stands alone
# (over NCCL, which queues them on the device, it says it is the host's wait).
grep -q "gradient averaging [0-9.]*% of the time$" "$dir/out.log" ||
  { cat "$dir/out.log"; echo "the gradient averaging share over MPI is not the plain share"; exit 1; }
# Batch norm over 2 ranks (--sync-bn auto: on, smoke's Pix2Pix has batch norm) has a cost of its own;
# with --sync-bn off it has none.
bn_share() { sed -n 's/^batch-norm sync.* \([0-9.]*\)%$/\1/p' "$1"; }
awk -v s="$(bn_share "$dir/out.log")" 'BEGIN { exit !(s > 0) }' ||
  { cat "$dir/out.log"; echo "no batch-norm sync time with --sync-bn auto on 2 ranks"; exit 1; }
"${mpirun[@]}" -np 2 "$bin" bench --what train --config "$root/configs/smoke.cfg" --data "$dir/d.h5" \
  --steps 3 --warmup 1 --phases --sync-bn off --overlap-grad-sync on >"$dir/off.log" 2>&1 || { cat "$dir/off.log"; exit 1; }
[ "$(bn_share "$dir/off.log")" = "0.0" ] || { cat "$dir/off.log"; echo "batch-norm sync time with --sync-bn off"; exit 1; }
# The "# wire" lines say when the buckets start: after backward by default on CPUs, during it on request.
grep -q "^# wire G: .* MB per step, after backward (" "$dir/out.log" || { cat "$dir/out.log"; echo "no '# wire G: ..., after backward'"; exit 1; }
# Overlapped: every bucket of D was started by the gradient hooks, during backward.
wire_d="$(grep "^# wire D: " "$dir/off.log")"
buckets="$(sed -n 's/^# wire D: \([0-9]*\) buckets, .* MB per step, overlapped, \([0-9]*\) of them started during the last backward (.*/\1 \2/p' <<<"$wire_d")"
[ -n "$buckets" ] && [ "${buckets% *}" = "${buckets#* }" ] && [ "${buckets% *}" -ge 1 ] ||
  { cat "$dir/off.log"; echo "not every bucket of D started during backward: $wire_d"; exit 1; }
echo "bench phases: batch-norm sync $(bn_share "$dir/out.log") % of the step with --sync-bn auto, 0 % off"

for model in cyclegan onesided; do
  "${mpirun[@]}" -np 2 "$bin" bench --what train --config "$root/configs/smoke.cfg" --data "$dir/d.h5" \
    --model "$model" --steps 4 --warmup 1 --phases --csv "$dir/rows.csv" >"$dir/$model.log" 2>&1 ||
    { cat "$dir/$model.log"; exit 1; }
  grep -q "^# bench train: --model $model, 2 rank(s)" "$dir/$model.log" || { cat "$dir/$model.log"; exit 1; }
  total=$(sed -n '/^# phases/,$p' "$dir/$model.log" | awk '/%$/ { sub("%", "", $NF); sum += $NF } END { print sum }')
  awk -v t="$total" 'BEGIN { exit !(t >= 80 && t <= 101) }' ||
    { cat "$dir/$model.log"; echo "$model: phase shares add up to $total %"; exit 1; }
  echo "bench $model: OK ($total % of the step)"
done
header="$(head -1 "$dir/rows.csv")"
models="$(tail -n +2 "$dir/rows.csv" | awk -F, '{ print $1 ":" $12 ":" $13 }' | tr '\n' ' ')"
[ "$header" = "gpus,nodes,global_batch,batch_per_rank,steps,seconds,images_per_s,ms_per_step,sync_share,device,precision,model,threads_per_rank" ] &&
  [ "$models" = "2:cyclegan:1 2:onesided:1 " ] || { cat "$dir/rows.csv"; echo "bench --csv rows: '$models'"; exit 1; }
printf 'gpus,nodes,images_per_s\n1,1,5.0\n' >"$dir/old.csv"
if "${mpirun[@]}" -np 2 "$bin" bench --what train --config "$root/configs/smoke.cfg" --data "$dir/d.h5" --steps 1 \
  --warmup 0 --csv "$dir/old.csv" >"$dir/old.log" 2>&1; then
  echo "bench appended to a CSV of other columns"; exit 1
fi
grep -q -- "--csv $dir/old.csv: its header is not this bench's columns" "$dir/old.log" &&
  [ "$(wc -l <"$dir/old.csv")" -eq 2 ] || { cat "$dir/old.log"; echo "old.csv: $(cat "$dir/old.csv")"; exit 1; }
echo "bench --csv: OK (rows name their model; a file of other columns refused, untouched)"

# See Note [a bench that checks itself]: a replica changed after the timed steps, or a loss that is
# not finite, ends the bench with status 1, a message naming it and no row.
if "${mpirun[@]}" -np 2 "$bin" bench --what train --config "$root/configs/smoke.cfg" --data "$dir/d.h5" --steps 2 \
  --warmup 0 --test-perturb-replica --csv "$dir/bad.csv" >"$dir/perturbed.log" 2>&1; then
  cat "$dir/perturbed.log"; echo "bench passed with replicas that differ"; exit 1
fi
grep -q "bench: replicas diverged at step 2: 1 parameters differ between ranks; first G[.]" "$dir/perturbed.log" ||
  { cat "$dir/perturbed.log"; exit 1; }
if "${mpirun[@]}" -np 2 "$bin" bench --what train --config "$root/configs/smoke.cfg" --data "$dir/d.h5" --steps 4 \
  --warmup 0 --lr 1e30 --csv "$dir/bad.csv" >"$dir/nan.log" 2>&1; then
  cat "$dir/nan.log"; echo "bench passed with losses that are not finite"; exit 1
fi
grep -q "bench: a loss of the timed steps was not finite" "$dir/nan.log" || { cat "$dir/nan.log"; exit 1; }
[ ! -s "$dir/bad.csv" ] || { cat "$dir/bad.csv"; echo "a failed bench wrote a row"; exit 1; }
grep -q "^verified: every loss of the 6 timed steps finite on every rank; the 2 replicas identical" "$dir/out.log" ||
  { cat "$dir/out.log"; echo "no verification line"; exit 1; }
echo "bench verification: OK (a perturbed replica and non-finite losses each end it with status 1, no row)"

# See Note [a trace beside the timing]: --trace FILE writes, on each rank, a Chrome trace of
# --trace-steps steps after the timed ones, where LibTorch has Kineto (2.x: Debian 13's, pip's); a
# LibTorch 1.x (Debian 12's, without it) is refused before the bench runs, with status 2 and the
# profiler's reason, and writes nothing.
major="$("$bin" --version | sed -n 's/^  LibTorch  \([0-9]*\)\..*/\1/p')"
[ -n "$major" ] || { "$bin" --version; echo "no LibTorch version in --version"; exit 1; }
trace_bench() { "${mpirun[@]}" -np 2 "$bin" bench --what train --config "$root/configs/smoke.cfg" --data "$dir/d.h5" \
  --steps 1 --warmup 0 "$@"; }
mkdir "$dir/traces"
set +e
trace_bench --trace "$dir/traces/t.json" --trace-steps 2 >"$dir/trace.log" 2>&1
status=$?
set -e
if [ "$major" -ge 2 ]; then
  [ "$status" = 0 ] || { cat "$dir/trace.log"; echo "bench --trace: status $status"; exit 1; }
  for r in 0 1; do
    f="$dir/traces/t.rank$r.json"
    grep -q '"traceEvents"' "$f" && grep -q 'pix2pix step 1"' "$f" && ! grep -q 'pix2pix step 2"' "$f" &&
      grep -q '"aten::convolution' "$f" || { ls -la "$dir/traces"; echo "$f: not a trace of steps 0 and 1"; exit 1; }
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$f" || { echo "$f is not JSON"; exit 1; }
  done
  [ "$(ls -A "$dir/traces" | tr '\n' ' ')" = "t.rank0.json t.rank1.json " ] || { ls -A "$dir/traces"; echo "other files beside the traces"; exit 1; }
  grep -q "^# trace: 2 steps after the timed ones, in $dir/traces/t.rank0.json (and the other ranks' beside it)$" "$dir/trace.log" ||
    { cat "$dir/trace.log"; echo "no '# trace:' line"; exit 1; }
  echo "bench --trace: OK (a Chrome trace of 2 steps on each of 2 ranks)"
else
  [ "$status" = 2 ] && grep -q -- "--trace: this program's LibTorch (1\.[0-9.]*) cannot write a trace: .*Kineto" "$dir/trace.log" &&
    [ -z "$(ls -A "$dir/traces" 2>/dev/null)" ] || { cat "$dir/trace.log"; echo "bench --trace on LibTorch $major: status $status"; exit 1; }
  echo "bench --trace: refused on LibTorch $major, as it has no Kineto"
fi
set +e
trace_bench --trace-steps 2 >"$dir/steps-alone.log" 2>&1
s1=$?
trace_bench --trace "$dir/nowhere/t.json" >"$dir/nowhere.log" 2>&1
s2=$?
set -e
[ "$s1" = 2 ] && grep -q -- "--trace-steps needs --trace FILE" "$dir/steps-alone.log" ||
  { cat "$dir/steps-alone.log"; echo "--trace-steps without --trace: status $s1"; exit 1; }
[ "$s2" = 2 ] && grep -q -- "--trace $dir/nowhere/t.json: no folder $dir/nowhere" "$dir/nowhere.log" ||
  { cat "$dir/nowhere.log"; echo "--trace into a missing folder: status $s2"; exit 1; }
echo "bench --trace: OK (--trace-steps alone, and a missing folder, refused with status 2)"
