#!/usr/bin/env bash
# The communication model of docs/performance.md ("The model meets a link") against a real link:
# two hosts (network namespaces, tests/cluster/cluster_lib.sh) joined by a veth pair, shaped with
# tc tbf to each rate of --rates, one rank on each (1 thread, pinned to its own core), TCP.
# For each image size, --overlap-grad-sync off|on and --grad-dtype fp32|bf16 it times
# `pix2pix bench --what train` and prints the model's prediction beside the measurement:
#
#   C(group)  = sum over its buckets b of ( 2(N-1)/N * s_b / B + 2(N-1) * a )       N = 2 ranks
#   exposed   = C                                        overlap off
#             = max(0, C - c_last - H) + c_last          overlap on (H: that group's backward,
#                                                         c_last: its last bucket's share of C)
#   predicted step on link L = measured step on the unshaped link - exposed(unshaped) + exposed(L)
#
# B and a (bandwidth, one-way latency) are measured on each link by a TCP probe before the runs;
# s_b come from the bench itself ("# wire" lines); H from a 1-rank `bench --phases` on node1.
# So the unshaped run calibrates what the model does not describe (compute, bf16 rounding, CPU
# the kernel spends on TCP), and the check is how the step changes with the link. Exits 1 when a
# prediction misses by more than --factor (default 1.5) either way; 2 on bad usage.
#
#   sudo scripts/network-model-check.sh [--rates "10gbit 1gbit"] [--sizes "128:4 256:1"]
#        [--steps 3] [--warmup 1] [--factor 1.5] [--bin build/bin/pix2pix] [--table FILE]
#
# The kernel here has no sch_netem (CONFIG_NET_SCH_NETEM unset), so latency cannot be added: the
# link keeps the veth's own (the probe measures it). Needs root (namespaces, tc) and python3.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$root/build/bin/pix2pix" rates="10gbit 1gbit" sizes="128:4 256:1" steps=3 warmup=1 factor=1.5 table=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rates) rates="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --factor) factor="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --table) table="$2"; shift 2 ;;
    -h | --help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "network-model-check.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
bin="$(realpath "$bin")"
[ -x "$bin" ] || { echo "network-model-check.sh: no pix2pix binary at $bin (--bin)" >&2; exit 2; }
command -v tc >/dev/null && command -v python3 >/dev/null && command -v taskset >/dev/null ||
  { echo "network-model-check.sh: needs tc (iproute2), python3 and taskset" >&2; exit 2; }
source "$root/tests/cluster/cluster_lib.sh"
trap cluster_teardown EXIT
trap 'exit 130' INT TERM
cluster_init
cluster_make_hosts
work="$CLUSTER_DIR/jobs"
cd "$work" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
read -r -a two_hosts <<<"$(cluster_mpirun_hosts)"
# Each host's rank on its own core (both "hosts" are this machine: mpirun would bind both to core 0).
cat >"$work/pin" <<'PIN'
#!/bin/sh
case "$(hostname)" in node1) core=0 ;; *) core=1 ;; esac
exec taskset -c "$core" "$@"
PIN
chmod +x "$work/pin"

# The link: egress of both ends through tbf (a token bucket of ~1 ms at the rate).
shape() {  # rate | unshaped
  local end
  for end in 1 2; do
    if [ "$1" = unshaped ]; then
      on_host "$end" tc qdisc del dev "p2pv$end" root 2>/dev/null || true
    else
      on_host "$end" tc qdisc replace dev "p2pv$end" root tbf rate "$1" burst 1mbit latency 50ms ||
        { echo "network-model-check.sh: tc tbf failed on node$end" >&2; exit 1; }
    fi
  done
}

# The probe: 200 one-byte round trips (latency: half the median), then 64 MB each way at once
# (bandwidth: the slower direction's bytes per second), node1 <-> node2 over TCP.
cat >"$work/probe.py" <<'PY'
import socket, sys, threading, time, statistics
role, addr = sys.argv[1], sys.argv[2]
N = 64 << 20
def drain(conn, n):
    got = 0
    while got < n:
        chunk = conn.recv(1 << 20)
        if not chunk:
            raise SystemExit("probe: connection closed")
        got += len(chunk)
def both_ways(conn):
    t = time.perf_counter()
    sender = threading.Thread(target=conn.sendall, args=(b"x" * N,))
    sender.start(); drain(conn, N); sender.join()
    return time.perf_counter() - t
if role == "server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, 17345)); s.listen(1); conn, _ = s.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for _ in range(200):
        drain(conn, 1); conn.sendall(b"y")
    both_ways(conn)
else:
    conn = socket.create_connection((addr, 17345))
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    rtts = []
    for _ in range(200):
        t = time.perf_counter(); conn.sendall(b"x"); drain(conn, 1); rtts.append(time.perf_counter() - t)
    seconds = both_ways(conn)
    print(f"{N / seconds:.6g} {statistics.median(rtts) / 2:.6g}")
PY
probe() {
  on_host 2 taskset -c 1 python3 "$work/probe.py" server "$CLUSTER_SUBNET.2" &
  local server=$!
  sleep 0.5
  on_host 1 taskset -c 0 python3 "$work/probe.py" client "$CLUSTER_SUBNET.2"
  wait "$server"
}

# One bench across the two hosts: "ms_per_step|G sizes|D sizes", sizes in MB, space-separated.
across() {  # size batch overlap dtype
  on_host 1 mpirun -np 2 "${two_hosts[@]}" --bind-to none -x OMP_NUM_THREADS -x OPENBLAS_NUM_THREADS "$work/pin" \
    "$bin" bench --what train --data "$work/d$1.h5" --batch-size "$2" --steps "$steps" --warmup "$warmup" \
    --sync-bn off --overlap-grad-sync "$3" --grad-dtype "$4" --collective-timeout 600 >"$work/run.log" 2>&1 ||
    { cat "$work/run.log" >&2; echo "network-model-check.sh: the bench failed" >&2; exit 1; }
  local ms g d
  ms=$(sed -n 's/.*ms\/step \([0-9.]*\).*/\1/p' "$work/run.log")
  g=$(sed -n 's/^# wire G: .*(\(.*\))$/\1/p' "$work/run.log")
  d=$(sed -n 's/^# wire D: .*(\(.*\))$/\1/p' "$work/run.log")
  echo "$ms|$g|$d"
}

echo "# $(uptime)"
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(env -u OMP_NUM_THREADS nproc) cores; $("$bin" --version | head -1)"
shapes=()
for spec in $sizes; do
  size="${spec%%:*}" batch="${spec##*:}"
  [ -f "$work/d$size.h5" ] ||
    "$bin" prepare --images idx:/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz --derive edges \
      --size "$size" --limit 64 --out "$work/d$size.h5" >/dev/null 2>&1 || { echo "prepare failed" >&2; exit 1; }
  # H: each group's backward at 1 rank ("D step" = D's forward and backward; "G step" = D's
  # forward and G's backward), node1, core 0.
  on_host 1 taskset -c 0 "$bin" bench --what train --data "$work/d$size.h5" --batch-size "$batch" --steps "$steps" \
    --warmup "$warmup" --phases >"$work/one.log" 2>&1 || { cat "$work/one.log" >&2; exit 1; }
  h_d=$(sed -n 's/^D step ([^)]*) *\([0-9.]*\).*/\1/p' "$work/one.log")
  h_g=$(sed -n 's/^G step ([^)]*) *\([0-9.]*\).*/\1/p' "$work/one.log")
  one=$(sed -n 's/.*ms\/step \([0-9.]*\).*/\1/p' "$work/one.log")
  shapes+=("$size|$batch|$h_g|$h_d|$one")
  echo "# ${size}x$size, batch $batch per rank: 1 rank alone $one ms/step; backward G $h_g ms, D $h_d ms"
done

results="$work/results"
: >"$results"
for link in unshaped $rates; do
  shape "$link"
  read -r bandwidth latency <<<"$(probe)"
  [ -n "$latency" ] || { echo "network-model-check.sh: the link probe failed" >&2; exit 1; }
  echo "# link $link: probe $(awk -v b="$bandwidth" 'BEGIN { printf "%.2f Gbit/s", b * 8 / 1e9 }') each way at once," \
    "$(awk -v a="$latency" 'BEGIN { printf "%.0f us", a * 1e6 }') one-way latency"
  for entry in "${shapes[@]}"; do
    IFS='|' read -r size batch h_g h_d _ <<<"$entry"
    for overlap in off on; do
      for dtype in fp32 bf16; do
        IFS='|' read -r ms g d <<<"$(across "$size" "$batch" "$overlap" "$dtype")"
        echo "$link|$bandwidth|$latency|$size|$batch|$overlap|$dtype|$ms|$g|$d|$h_g|$h_d" >>"$results"
        echo "#   ${size}x$size overlap $overlap $dtype: $ms ms/step"
      done
    done
  done
done
shape unshaped

# The model, and the table: predicted vs measured per link and configuration.
report="$work/report"
awk -F'|' -v factor="$factor" '
  function comm(sizes, b, a, last,   n, i, s, total) {  # C of one group; last bucket in LAST_C
    n = split(sizes, s, " "); total = 0; LAST_C = 0
    for (i = 1; i <= n; ++i) { c = s[i] * 1e6 / b + 2 * a; total += c; if (i == n) LAST_C = c }
    return total
  }
  function exposed(overlap, sizes, b, a, h,   c) {
    c = comm(sizes, b, a)
    if (overlap == "off") return c
    return (c - LAST_C - h > 0 ? c - LAST_C - h : 0) + LAST_C
  }
  {
    key = $4 "|" $5 "|" $6 "|" $7
    e = 1000 * (exposed($6, $9, $2, $3, $11 / 1000) + exposed($6, $10, $2, $3, $12 / 1000))
    if ($1 == "unshaped") { base[key] = $8; base_e[key] = e }
    rows[++n] = $0; exp_ms[n] = e
  }
  END {
    bad = 0
    printf "| link (probe) | image, batch/rank | overlap | wire | exposed comm, model (ms) | predicted ms/step | measured ms/step | measured / predicted |\n"
    printf "|---|---|---|---|---|---|---|---|\n"
    for (i = 1; i <= n; ++i) {
      split(rows[i], f, "|"); key = f[4] "|" f[5] "|" f[6] "|" f[7]
      predicted = base[key] - base_e[key] + exp_ms[i]; ratio = f[8] / predicted
      miss = (ratio > factor || ratio < 1 / factor)
      bad += (f[1] != "unshaped" && miss)
      printf "| %s (%.2f Gbit/s, %.0f us) | %s², %s | %s | %s | %.0f | %s | %.1f | %.2f%s |\n", f[1], f[2] * 8 / 1e9,
             f[3] * 1e6, f[4], f[5], f[6], f[7], exp_ms[i], f[1] == "unshaped" ? "(calibration)" : sprintf("%.1f", predicted),
             f[8], ratio, (f[1] != "unshaped" && miss) ? " **miss**" : ""
    }
    exit bad > 0
  }' "$results" >"$report"
status=$?
cat "$report"
[ -z "$table" ] || cp "$report" "$table"
if [ "$status" -ne 0 ]; then
  echo "network-model-check.sh: a prediction missed by more than a factor $factor (rows marked **miss**)"
  exit 1
fi
echo "network-model-check.sh: every prediction within a factor $factor of the measurement"
