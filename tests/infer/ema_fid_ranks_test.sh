#!/usr/bin/env bash
# The generator's moving average and FID/KID together on 2 ranks (issue 46 asks both of GPU ranks):
# a 2-rank run with --ema-decay and --val-features validates the average with FID and KID at every
# epoch, and `evaluate --features` of that run (the average's weights) on 2 ranks writes what one
# process writes, byte for byte. CI runs it on CPU ranks over MPI, scripts/gpu-smoke.sh on GPU ranks
# over NCCL (the feature network on the GPU). The TorchScript feature network comes from
# tests/infer/fid_reference.py, run by $PIX2PIX_TEST_PYTHON (a Python with torch).
# Usage: ema_fid_ranks_test.sh PIX2PIX_BIN MPIRUN...
set -euo pipefail
bin="$1"
shift
mpirun=("$@")
python="${PIX2PIX_TEST_PYTHON:-/usr/bin/python3}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
# shellcheck source=tests/support/expect.sh
. "$(dirname "$0")/../support/expect.sh"

"$bin" prepare --images idx:${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz --derive edges \
  --size 32 --limit 160 --val-fraction 0.25 --out "$dir/d.h5" --progress none >/dev/null
"$python" "$(dirname "$0")/fid_reference.py" nets "$dir"

expect 0 "moving average         of the generator, decay 0.9" "$dir/train.log" "${mpirun[@]}" -np 2 "$bin" train \
  --data "$dir/d.h5" --run-dir "$dir/run" --ngf 4 --ndf 4 --batch-size 8 --max-epochs 2 --no-early-stop --progress none \
  --ema-decay 0.9 --val-features "$dir/features.pt" --val-features-input signed
grep -qF '"validated_weights": "ema"' "$dir/run/summary.json" || { cat "$dir/run/summary.json"; exit 1; }
# Both epochs' FID and KID: numbers, FID above zero (the generator is far from B after 2 epochs).
"$python" - "$dir/run/metrics.csv" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 2, f"{len(rows)} rows"
for row in rows:
    fid, kid = float(row["val_fid"]), float(row["val_kid"])
    assert math.isfinite(fid) and fid > 0 and math.isfinite(kid), row
PY

evaluate=("$bin" evaluate --checkpoint "$dir/run" --data "$dir/d.h5" --split val --samples 0 --progress none
  --features "$dir/features.pt" --features-input signed --features-cache none --kid-subset-size 20 --kid-subsets 5)
expect 0 "(ema weights, eval mode)" "$dir/one.log" "${evaluate[@]}" --out "$dir/one"
expect 0 "on 2 ranks" "$dir/two.log" "${mpirun[@]}" -np 2 "${evaluate[@]}" --out "$dir/two"
grep -qF '"weights": "ema"' "$dir/one/evaluation.json" || { cat "$dir/one/evaluation.json"; exit 1; }
cmp "$dir/one/evaluation.json" "$dir/two/evaluation.json" || { diff "$dir/one/evaluation.json" "$dir/two/evaluation.json"; exit 1; }
echo "ema + FID/KID on 2 ranks: validated the average every epoch; evaluate on 2 ranks = 1 process," \
  "FID $(sed -n 's/.*"fid": *\([0-9.e+-]*\).*/\1/p' "$dir/one/evaluation.json" | head -n 1)"
