#!/usr/bin/env bash
# What --ema-decay costs a training step (docs/performance.md): bench --what train without and with
# it, interleaved, five rounds, one rank bound to core 0 with one thread, at ngf 16 and 64.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
data="$(realpath "${1:?usage: bench/ema-cost.sh DATA.h5}")"
cd "$(dirname "$0")/.."
for ngf in 16 64; do
  for round in 1 2 3 4 5; do
    for ema in 0 0.999; do
      ms=$(taskset -c 0 ./build/bin/pix2pix bench --what train --config configs/quickstart.cfg --data "$data" \
        --device cpu --steps 40 --warmup 5 --ngf $ngf --ndf $ngf --ema-decay $ema 2>&1 | sed -n 's/.*ms\/step \([0-9.]*\).*/\1/p')
      echo "ngf $ngf round $round ema $ema ms/step $ms"
    done
  done
done
