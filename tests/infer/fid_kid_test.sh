#!/usr/bin/env bash
# evaluate --features end to end: FID and KID from a TorchScript feature network match NumPy/SciPy
# recomputed from the dumped features (<= 1e-3 relative), the dumped real features match PyTorch
# running the same network on the file's images, a second evaluation reads the real features from
# the cache and writes the same evaluation.json, 2 ranks write it byte-identical to one process,
# 2 ranks train with FID/KID at each validation, and bad feature networks or options stop with an
# error naming them.
set -euo pipefail
bin="$1" python="$2"
shift 2
mpirun=("$@")
dir="$(mktemp -d)"
trap "rm -rf \"$dir\"" EXIT
fashion=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz

"$bin" prepare --images "idx:$fashion" --derive edges --size 32 --limit 400 --val-fraction 0.15 --out "$dir/d.h5" \
  --progress none >/dev/null
"$bin" train --data "$dir/d.h5" --run-dir "$dir/run" --ngf 4 --ndf 4 --batch-size 16 --max-epochs 1 \
  --progress none >"$dir/train.log" 2>&1 || { cat "$dir/train.log"; exit 1; }
"$python" "$(dirname "$0")/fid_reference.py" nets "$dir"

# shellcheck source=tests/support/expect.sh
. "$(dirname "$0")/../support/expect.sh"
evaluate=("$bin" evaluate --checkpoint "$dir/run" --data "$dir/d.h5" --split val --samples 0 --progress none)
features=(--features "$dir/features.pt" --features-input signed --kid-subset-size 100000 --kid-subsets 2)

# FID/KID against NumPy/SciPy; the cache is filled.
expect 0 "computed, and kept in $dir/cache" "$dir/first.log" "${evaluate[@]}" "${features[@]}" \
  --features-cache "$dir/cache" --dump-features "$dir/dump" --out "$dir/first"
grep -qF "FID " "$dir/first.log" || { cat "$dir/first.log"; echo "no FID line"; exit 1; }
"$python" "$(dirname "$0")/fid_reference.py" check "$dir/first/evaluation.json" "$dir/dump" "$dir/d.h5" val \
  "$dir/features.pt"
sha="$(sha256sum "$dir/features.pt" | cut -d' ' -f1)"
grep -qF "\"sha256\": \"$sha\"" "$dir/first/evaluation.json" || { cat "$dir/first/evaluation.json"; exit 1; }

# A second evaluation reads the real features from the cache; the result is the same, byte for byte.
expect 0 "read from the cache" "$dir/second.log" "${evaluate[@]}" "${features[@]}" --features-cache "$dir/cache" \
  --out "$dir/second"
cmp "$dir/first/evaluation.json" "$dir/second/evaluation.json"

# A damaged cache entry (NaN features, another width, a FIFO as its key) is named, ignored and
# recomputed, and the evaluation is the same (issue 45).
entry="$(ls "$dir/cache"/*.npy)"
cp "$entry" "$dir/good.npy"
"$python" -c "import numpy, sys; a = numpy.load(sys.argv[1]); a[1, 2] = numpy.nan; numpy.save(sys.argv[1], a)" "$entry"
expect 0 "holds NaN or infinite values (damaged); recomputing" "$dir/nan-cache.log" "${evaluate[@]}" "${features[@]}" \
  --features-cache "$dir/cache" --out "$dir/nan-cache"
grep -qF "computed, and kept in $dir/cache" "$dir/nan-cache.log" || { cat "$dir/nan-cache.log"; exit 1; }
cmp "$dir/first/evaluation.json" "$dir/nan-cache/evaluation.json"
"$python" -c "import numpy, sys; a = numpy.load(sys.argv[1]); numpy.save(sys.argv[1], a[:, :3].copy())" "$entry"
expect 0 "$entry is not float32 [" "$dir/width-cache.log" "${evaluate[@]}" "${features[@]}" \
  --features-cache "$dir/cache" --out "$dir/width-cache"
cmp "$dir/first/evaluation.json" "$dir/width-cache/evaluation.json"
key="${entry%.npy}.key"
rm "$key" && mkfifo "$key"
expect 0 "$key: is a FIFO" "$dir/fifo-cache.log" "${evaluate[@]}" "${features[@]}" --features-cache "$dir/cache" \
  --out "$dir/fifo-cache"
[ -f "$key" ] || { echo "the FIFO key was not replaced by the recomputed entry's"; exit 1; }
cmp "$entry" "$dir/good.npy"

# Two ranks, no cache: every rank computes its share of both sets; the same file.
expect 0 "computed (no cache)" "$dir/two.log" "${mpirun[@]}" -np 2 "${evaluate[@]}" "${features[@]}" \
  --features-cache none --out "$dir/two"
cmp "$dir/first/evaluation.json" "$dir/two/evaluation.json"

# The clean-fid convention: a forward with return_features is called with it, on [0, 255].
expect 0 "FID " "$dir/rf.log" "${evaluate[@]}" --features "$dir/return_features.pt" --features-cache none \
  --out "$dir/rf"
grep -qF '"input": "uint8"' "$dir/rf/evaluation.json" && grep -qF '"return_features": true' "$dir/rf/evaluation.json" \
  || { cat "$dir/rf/evaluation.json"; exit 1; }

# Training on 2 ranks with FID/KID at each validation: every rank loads the network, rank 0 runs it.
expect 0 "val FID/KID" "$dir/train2.log" "${mpirun[@]}" -np 2 "$bin" train --data "$dir/d.h5" --run-dir "$dir/run2" \
  --ngf 4 --ndf 4 --batch-size 8 --max-epochs 2 --progress none --val-features "$dir/features.pt" \
  --val-features-input signed --es-metric kid --es-window 1
head -n 1 "$dir/run2/metrics.csv" | grep -q ',val_fid,val_fid_smoothed,val_kid,val_kid_smoothed$' \
  || { head -n 2 "$dir/run2/metrics.csv"; echo "no FID/KID columns"; exit 1; }
grep -qF '"es_metric": "kid"' "$dir/run2/summary.json" || { cat "$dir/run2/summary.json"; exit 1; }

# Bad feature networks and options.
echo "not a network" >"$dir/text.pt"
expect 1 "neither a TorchScript module" "$dir/text.log" "${evaluate[@]}" --features "$dir/text.pt" \
  --features-input signed --out "$dir/bad"
expect 1 "features must be 2-D" "$dir/not2d.log" "${mpirun[@]}" -np 2 "${evaluate[@]}" --features "$dir/not_2d.pt" \
  --features-input unit --out "$dir/bad"
expect 1 "NaN or infinite features" "$dir/nan.log" "${evaluate[@]}" --features "$dir/nan.pt" \
  --features-input unit --out "$dir/bad"
expect 1 "with at least one dimension" "$dir/nofeatures.log" "${evaluate[@]}" --features "$dir/no_features.pt" \
  --features-input unit --out "$dir/bad"
# SIGTERM while KID runs its subsets (10^5 of 340 images' 512 features: many minutes) ends evaluate
# within seconds with 128+15 and nothing written (issue 45; it ran on and exited 0). The signal is
# sent once the images are scored (the progress line).
timeout 300 "$bin" evaluate --checkpoint "$dir/run" --data "$dir/d.h5" --split train --samples 0 --progress lines \
  --features "$dir/wide.pt" --features-input signed --kid-subsets 100000 --kid-subset-size 1000 \
  --features-cache none --out "$dir/term" >"$dir/term.log" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -Eq ": ([0-9]+)/\1 done" "$dir/term.log" && break; sleep 0.1; done
sleep 1
kill -TERM "$pid"
start=$(date +%s)
rc=0
wait "$pid" || rc=$?
[ "$rc" = 143 ] && [ $(($(date +%s) - start)) -le 10 ] && [ ! -e "$dir/term/evaluation.json" ] ||
  { cat "$dir/term.log"; echo "SIGTERM during KID: status $rc after $(($(date +%s) - start)) s (expected 143 within 10 s)"; exit 1; }
expect 2 "say which value range" "$dir/range.log" "${evaluate[@]}" --features "$dir/features.pt" --out "$dir/bad"
expect 2 "--kid-subsets needs --features" "$dir/alone.log" "${evaluate[@]}" --kid-subsets 5 --out "$dir/bad"
expect 1 "--dump-features $dir/dump: $dir/dump/real.npy exists" "$dir/dump.log" "${evaluate[@]}" "${features[@]}" \
  --dump-features "$dir/dump" --out "$dir/bad2"
[ ! -e "$dir/bad/evaluation.json" ] || { echo "a refused evaluation wrote evaluation.json"; exit 1; }
echo "fid_kid: all checks passed"
