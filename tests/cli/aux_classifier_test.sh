#!/usr/bin/env bash
# `train --aux-classifier` end to end, on one process and two ranks: a classifier trained by
# train-classifier joins G's objective, the run reports recognition accuracy (epoch line, start-up
# table, summary.json); data the classifier cannot judge stops both ranks before training with
# exit 2 and a message naming the option; --lambda-aux alone is a usage error.
set -euo pipefail
bin="$1"
shift
mpirun=("$@")
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
fashion=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz

"$bin" prepare --images "idx:$fashion" --labels --derive edges --size 32 --limit 300 --out "$dir/l.h5" \
  --progress none >/dev/null
"$bin" prepare --images "idx:$fashion" --derive edges --size 32 --limit 40 --out "$dir/u.h5" --progress none >/dev/null
"$bin" train-classifier --data "$dir/l.h5" --out "$dir/c.pt" --filters 8 --batch-size 32 --max-epochs 1 \
  --progress none >"$dir/classifier.log" 2>&1 || { cat "$dir/classifier.log"; exit 1; }

common=(--ngf 4 --ndf 4 --batch-size 8 --max-epochs 1 --progress none)
# shellcheck source=tests/support/expect.sh
. "$(dirname "$0")/../support/expect.sh"

expect 0 "recognition" "$dir/one.log" "$bin" train --data "$dir/l.h5" --aux-classifier "$dir/c.pt" \
  --lambda-aux 0.5 --run-dir "$dir/one" "${common[@]}"
grep -qF "aux classifier" "$dir/one.log" || { cat "$dir/one.log"; echo "no aux classifier line"; exit 1; }
grep -qF "loss_G_aux" "$dir/one.log" || { cat "$dir/one.log"; echo "no loss_G_aux in the epoch line"; exit 1; }
grep -qE '"best_recognition": [0-9.]+' "$dir/one/summary.json" || { cat "$dir/one/summary.json"; exit 1; }

expect 0 "recognition" "$dir/two.log" "${mpirun[@]}" -np 2 "$bin" train --data "$dir/l.h5" \
  --aux-classifier "$dir/c.pt" --run-dir "$dir/two" "${common[@]}"
grep -qE "ranks +2 " "$dir/two.log" || { cat "$dir/two.log"; echo "not 2 ranks"; exit 1; }

expect 2 "--aux-classifier needs labels" "$dir/unlabelled.log" "${mpirun[@]}" -np 2 "$bin" train \
  --data "$dir/u.h5" --aux-classifier "$dir/c.pt" --run-dir "$dir/u" "${common[@]}"
[ ! -e "$dir/u/checkpoints/last.pt" ] || { echo "a refused run wrote a checkpoint"; exit 1; }
expect 2 "give --aux-classifier FILE too" "$dir/lambda.log" "$bin" train --data "$dir/l.h5" --lambda-aux 2 \
  --run-dir "$dir/lambda" "${common[@]}"
expect 1 "missing.pt" "$dir/missing.log" "${mpirun[@]}" -np 2 "$bin" train --data "$dir/l.h5" \
  --aux-classifier "$dir/missing.pt" --run-dir "$dir/missing" "${common[@]}"

# evaluate --aux-classifier on the val split reproduces the recognition the run logged for its
# model (best_generator.pt is the final one: fewer evaluations than --es-window), on 2 ranks too.
expect 0 "recognition of G(A)" "$dir/eval.log" "${mpirun[@]}" -np 2 "$bin" evaluate --checkpoint "$dir/one" \
  --data "$dir/l.h5" --split val --aux-classifier "$dir/c.pt" --out "$dir/eval" --progress none
logged="$(sed -n 's/.*"best_recognition": \([0-9.e-]*\).*/\1/p' "$dir/one/summary.json")"
evaluated="$(sed -n 's/.*"recognition": {[^}]*"accuracy": \([0-9.e-]*\),.*/\1/p' "$dir/eval/evaluation.json")"
if [ -z "$logged" ] || [ "$logged" != "$evaluated" ]; then
  cat "$dir/one/summary.json" "$dir/eval/evaluation.json"
  echo "evaluate's recognition ($evaluated) is not the one training logged ($logged)"
  exit 1
fi
head -n 1 "$dir/eval/evaluation.csv" | grep -qF ",recognised,real_recognised" || { head -n 2 "$dir/eval/evaluation.csv"; exit 1; }
expect 2 "--aux-classifier needs labels" "$dir/eval-u.log" "${mpirun[@]}" -np 2 "$bin" evaluate \
  --checkpoint "$dir/one" --data "$dir/u.h5" --aux-classifier "$dir/c.pt" --out "$dir/eval-u" --progress none

# train-classifier on 2 ranks, SIGUSR1 to rank 1 alone once epoch 0 is done: both ranks stop at the
# same step (status 75), and rank 0, which got no signal, names rank 1's.
cat >"$dir/rank1-pid" <<'SH'
#!/bin/sh
[ "${OMPI_COMM_WORLD_RANK:-}" = 1 ] && echo $$ >"$PID_FILE"
exec "$@"
SH
chmod +x "$dir/rank1-pid"
PID_FILE="$dir/rank1.pid" "${mpirun[@]}" -np 2 -x PID_FILE "$dir/rank1-pid" "$bin" train-classifier --data "$dir/l.h5" \
  --out "$dir/c-signal.pt" --filters 8 --batch-size 8 --max-epochs 200 --patience 200 --progress none \
  >"$dir/signal.log" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q "^epoch 0:" "$dir/signal.log" && break; sleep 0.1; done
kill -USR1 "$(cat "$dir/rank1.pid")"
status=0
wait "$job" || status=$?
if [ "$status" != 75 ] || ! grep -q "stopped: stopped by signal 10 in epoch" "$dir/signal.log" ||
  grep -q "signal 0" "$dir/signal.log"; then
  cat "$dir/signal.log"
  echo "FAILED: train-classifier on 2 ranks with SIGUSR1 to rank 1: status $status"
  exit 1
fi
echo "train --aux-classifier: one process and two ranks, bad requests refused on every rank;" \
  "train-classifier stopped on both ranks by a signal to one"
