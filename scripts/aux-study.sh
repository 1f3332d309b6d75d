#!/usr/bin/env bash
# The auxiliary-recognition-loss study of docs/results.md (issue 13): on the quickstart data
# (Fashion-MNIST edges -> image, 32x32, 10 labelled classes) a recognition network is trained
# (train-classifier), then the quickstart model is trained with the same seed and the same budget
# (--max-epochs, no early stop; the best epoch is still the best smoothed val PSNR) without and
# with --aux-classifier for each weight W, and every best model is evaluated on the val and test
# splits with that classifier. Writes OUT/aux-study.csv, one row per variant, and leaves the
# runs, evaluations (samples.png: rows A | G(A) | B) and logs in OUT.
# Usage: scripts/aux-study.sh OUT [W ...]      (default W: 1 10)
# Environment: RANKS (2), EPOCHS (20), CLASSIFIER_EPOCHS (30), DATA (data/fashion-edges.h5, made
# by configs/prepare-fashion-edges.ini when missing), PIX2PIX_BIN (build/bin/pix2pix).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 OUT [W ...]" >&2; exit 2; }
out="$1"
shift
weights=("$@")
[ ${#weights[@]} -gt 0 ] || weights=(1 10)
ranks="${RANKS:-2}" epochs="${EPOCHS:-20}" classifier_epochs="${CLASSIFIER_EPOCHS:-30}"
bin="${PIX2PIX_BIN:-build/bin/pix2pix}"
data="${DATA:-data/fashion-edges.h5}"
mkdir -p "$out" "$(dirname "$data")"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
mpirun=(mpirun -np "$ranks" --bind-to core -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
[ -f "$data" ] || "$bin" prepare --config configs/prepare-fashion-edges.ini --out "$data" --progress none

classifier="$out/classifier.pt"
if [ ! -f "$classifier" ]; then
  "${mpirun[@]}" "$bin" train-classifier --data "$data" --out "$classifier" --batch-size 32 --seed 0 \
    --max-epochs "$classifier_epochs" --progress lines >"$out/classifier.log" 2>&1 || { tail -n 30 "$out/classifier.log"; exit 1; }
fi

csv="$out/aux-study.csv"
echo "variant,lambda_aux,best_epoch,last_epoch,best_val_psnr_smoothed,val_psnr,val_recognition,test_psnr,test_recognition,real_val_recognition,real_test_recognition,train_seconds" >"$csv"
for w in none "${weights[@]}"; do
  run="$out/$([ "$w" = none ] && echo none || echo "aux-$w")"
  aux=()
  [ "$w" = none ] || aux=(--aux-classifier "$classifier" --lambda-aux "$w")
  start=$SECONDS
  "${mpirun[@]}" "$bin" train --config configs/quickstart.cfg --data "$data" --run-dir "$run" --overwrite \
    --max-epochs "$epochs" --no-early-stop --seed 0 --progress lines "${aux[@]}" >"$run.log" 2>&1 ||
    { tail -n 30 "$run.log"; exit 1; }
  train_seconds=$((SECONDS - start))
  for split in val test; do
    "${mpirun[@]}" "$bin" evaluate --checkpoint "$run" --data "$data" --split "$split" \
      --aux-classifier "$classifier" --out "$run/evaluation-$split" --overwrite --progress none >>"$run.log" 2>&1 ||
      { tail -n 30 "$run.log"; exit 1; }
  done
  python3 - "$run" "$w" "$train_seconds" >>"$csv" <<'PY'
import json, sys
run, w, seconds = sys.argv[1:]
s = json.load(open(f"{run}/summary.json"))
val = json.load(open(f"{run}/evaluation-val/evaluation.json"))
test = json.load(open(f"{run}/evaluation-test/evaluation.json"))
print(",".join(str(v) for v in [
    "none" if w == "none" else "aux", "" if w == "none" else w, s["best_epoch"], s["last_epoch"],
    s["best_psnr_smoothed"], val["psnr"]["mean"], val["recognition"]["accuracy"], test["psnr"]["mean"],
    test["recognition"]["accuracy"], val["recognition"]["real_accuracy"], test["recognition"]["real_accuracy"],
    seconds]))
PY
done
cat "$csv"
