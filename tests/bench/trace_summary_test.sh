#!/usr/bin/env bash
# bench/trace_summary.py, on traces whose figures are known: two steps of a made-up GPU trace
# (kernels owned by the innermost operator or named range of the thread that launched them,
# overlapping kernels counted once in the busy time, the gaps as idle, what lies outside the step
# ranges left out, the kernels by name, the memory of the last step, its peak per phase, what is
# live at its peak, the operators whose calls per step differ between two traces, a range's copy
# on the device's timeline no step of its own, the calls on a tensor contiguous in neither NCHW nor
# NHWC) and of a CPU trace (an operator's or a range's own time is its duration less its children's); a
# trace with no step, a file that is no trace and a bad argument refused with status 2, naming the
# file. Then bench/pytorch_pix2pix.py --trace on CPUs: a real PyTorch trace of 2 steps that the
# summary reads.
# Usage: trace_summary_test.sh PYTHON
set -euo pipefail
python="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$python" - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
def x(cat, name, ts, dur, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}
gpu = []
for step, t0 in ((0, 0.0), (1, 10000.0)):
    gpu.append(x("user_annotation", "pix2pix step %d" % step, t0, 4000))
    # Tensors as Kineto records them: conv2d's input contiguous in NHWC and a broadcast weight (no
    # row); add_'s second input a channel slice of an NHWC tensor, contiguous in neither layout.
    gpu.append(x("cpu_op", "aten::conv2d", t0 + 100, 1000, **{"Input Dims": [[2, 4, 3, 3], [4]],
                                                            "Input Strides": [[36, 1, 12, 4], [0]]}))
    gpu.append(x("cpu_op", "aten::cudnn_convolution", t0 + 200, 500, **{"Input Dims": [[2, 4, 3, 3], [2, 4, 3, 3]],
                                                                     "Input Strides": [[36, 1, 12, 4],
                                                                                       [0, 0, 0, 0]]}))  # inside conv2d
    gpu.append(x("cuda_runtime", "cudaLaunchKernel", t0 + 300, 10, correlation=10 * step + 1))
    gpu.append(x("cuda_runtime", "cudaLaunchKernel", t0 + 900, 10, correlation=10 * step + 2))  # conv2d's own
    gpu.append(x("cpu_op", "aten::add_", t0 + 2000, 100, tid=2, **{"Input Dims": [[2, 4, 3, 3], [2, 4, 3, 3], []],
                                                                 "Input Strides": [[36, 1, 12, 4], [72, 1, 24, 8], []]}))
    gpu.append(x("cuda_runtime", "cudaLaunchKernel", t0 + 2050, 5, tid=2, correlation=10 * step + 3))
    # Device: 1000 us + 500 us overlapping it by 200, a gap of 300, 200 us, a gap of 400, 100 us:
    # busy 1600, idle 700.
    gpu.append(x("kernel", "implicit_gemm", t0 + 1000, 1000, tid=7, correlation=10 * step + 1))
    gpu.append(x("kernel", "im2col", t0 + 1800, 500, tid=7, correlation=10 * step + 2))
    gpu.append(x("gpu_memset", "Memset", t0 + 2600, 200, tid=7, correlation=10 * step + 3))
    # A named range with a kernel of no operator in it (an all-reduce): the range owns it.
    gpu.append(x("user_annotation", "pix2pix G average", t0 + 3000, 500))
    gpu.append(x("cuda_runtime", "cudaLaunchKernel", t0 + 3100, 5, correlation=10 * step + 4))
    gpu.append(x("kernel", "ncclAllReduce", t0 + 3200, 100, tid=7, correlation=10 * step + 4))
    # A phase around the convolution: its memory peak is the last step's only.
    gpu.append(x("user_annotation", "pix2pix D backward", t0 + 50, 1500))
    if step == 0:  # a phase of the first step only: no row
        gpu.append(x("user_annotation", "pix2pix D update", t0 + 1600, 100))
    # Kineto's copies of the ranges on the device's timeline, spanning their kernels: not steps of
    # their own (counted, they halved every figure a step), nor ranges owning kernels.
    gpu.append(x("gpu_user_annotation", "pix2pix step %d" % step, t0 + 1000, 2300, tid=7))
    gpu.append(x("gpu_user_annotation", "pix2pix G average", t0 + 3200, 100, tid=7))
# The allocator's memory events (MiB, each block at an address of its own): 100 allocated before
# the trace; step 0 makes an 800 (its peak, 900, reserved 1024: not the last step's) and a 20 that
# it keeps; between the steps the 800 goes; the last step frees 20 of what was there before the
# trace, makes a 30 in aten::conv2d and then a 150 through aten::empty inside
# aten::cudnn_convolution: its peak, 280 (reserved 512), the 30 freed after it on another thread.
# On the CPU a 10 inside a named range.
def memory(ts, total, device, change, addr, tid=1, reserved=0):
    return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": tid, "ts": ts,
            "args": {"Total Allocated": total * 2**20, "Total Reserved": reserved * 2**20, "Bytes": change * 2**20,
                     "Addr": addr, "Device Type": 1 if device == "cuda" else 0,
                     "Device Id": 0 if device == "cuda" else -1}}
gpu += [memory(250, 900, "cuda", 800, 0xA, reserved=1024), memory(260, 920, "cuda", 20, 0xB, reserved=1024),
        memory(9900, 120, "cuda", -800, 0xA), memory(10120, 100, "cuda", -20, 0xE),
        memory(10150, 130, "cuda", 30, 0xD), memory(10250, 280, "cuda", 150, 0xC, reserved=512),
        memory(12050, 250, "cuda", -30, 0xD, tid=2, reserved=512), memory(13100, 10, "cpu", 10, 0xF)]
gpu += [x("cpu_op", "aten::empty", t0 + 240, 20) for t0 in (0.0, 10000.0)]  # allocates for cudnn_convolution
# Outside every step: an operator and its kernel that must not count.
gpu.append(x("cpu_op", "aten::cudnn_convolution", 30000, 500))
gpu.append(x("cuda_runtime", "cudaLaunchKernel", 30100, 10, correlation=99))
gpu.append(x("kernel", "implicit_gemm", 30200, 9000, tid=7, correlation=99))
json.dump({"traceEvents": gpu}, open(d + "/gpu.json", "w"))
# The same steps with two layout conversions more in each (one inside the other, as
# aten::contiguous calls aten::clone) and the G average phase as PyTorch names it.
other = [dict(e, name="pytorch G average") if e["name"] == "pix2pix G average" else e for e in gpu]
for t0 in (0.0, 10000.0):
    other += [x("cpu_op", "aten::contiguous", t0 + 1200, 30), x("cpu_op", "aten::clone", t0 + 1205, 20),
              x("cpu_op", "aten::contiguous", t0 + 1300, 30), x("cpu_op", "aten::clone", t0 + 1305, 20)]
json.dump({"traceEvents": other}, open(d + "/converts.json", "w"))
cpu = [x("user_annotation", "pytorch step 0", 0, 5000),
       x("cpu_op", "aten::linear", 100, 3000), x("cpu_op", "aten::addmm", 200, 2000),
       x("cpu_op", "aten::copy_", 300, 500),
       x("user_annotation", "Optimizer.step#Adam.step", 3500, 1000), x("cpu_op", "aten::lerp_", 3600, 300)]
json.dump({"traceEvents": cpu}, open(d + "/cpu.json", "w"))
json.dump({"traceEvents": [x("cpu_op", "aten::add", 0, 5)]}, open(d + "/nostep.json", "w"))
open(d + "/broken.json", "w").write("{not json")
PY

"$python" "$root/bench/trace_summary.py" ours="$dir/gpu.json" other="$dir/gpu.json" >"$dir/gpu.md" ||
  { cat "$dir/gpu.md"; fail "the GPU trace was refused"; }
expect() {  # expect FILE LINE: LINE is one of FILE's lines
  grep -qxF -- "$2" "$1" || { cat "$1"; fail "$1 lacks the line '$2'"; }
}
expect "$dir/gpu.md" "| steps traced | 2 | 2 |"
expect "$dir/gpu.md" "| host: wall ms | 4.00 | 4.00 |"
expect "$dir/gpu.md" "| host: operators | 4 | 4 |"
expect "$dir/gpu.md" "| device: kernels, copies, memsets | 4 | 4 |"
expect "$dir/gpu.md" "| device: busy ms | 1.60 | 1.60 |"
expect "$dir/gpu.md" "| device: idle ms between its first and last kernel | 0.70 | 0.70 |"
expect "$dir/gpu.md" "| aten::cudnn_convolution | 1, 1.000 | 1, 1.000 |"
expect "$dir/gpu.md" "| aten::conv2d | 1, 0.500 | 1, 0.500 |"
expect "$dir/gpu.md" "| aten::add_ | 1, 0.200 | 1, 0.200 |"
expect "$dir/gpu.md" "| pix2pix G average | 1, 0.100 | 1, 0.100 |"
# The calls on a tensor contiguous in neither layout: add_'s channel slice only.
expect "$dir/gpu.md" "| aten::add_ [2, 4, 3, 3] strides [72, 1, 24, 8] | 1, 0.200 | 1, 0.200 |"
if grep -q "^| aten::c.*strides" "$dir/gpu.md"; then cat "$dir/gpu.md"; fail "a contiguous or broadcast tensor has a row"; fi
# The same device time by kernel name: the one outside the steps left out.
expect "$dir/gpu.md" "| kernel (per step: count, device ms) | ours | other |"
expect "$dir/gpu.md" "| implicit_gemm | 1, 1.000 | 1, 1.000 |"
expect "$dir/gpu.md" "| im2col | 1, 0.500 | 1, 0.500 |"
expect "$dir/gpu.md" "| Memset | 1, 0.200 | 1, 0.200 |"
expect "$dir/gpu.md" "| ncclAllReduce | 1, 0.100 | 1, 0.100 |"
expect "$dir/gpu.md" "| memory cuda:0, last step: allocated at its start, MiB | 120.0 | 120.0 |"
expect "$dir/gpu.md" "| memory cuda:0, last step: peak allocated, MiB | 280.0 | 280.0 |"
expect "$dir/gpu.md" "| memory cuda:0, last step: peak above its start, MiB | 160.0 | 160.0 |"
expect "$dir/gpu.md" "| memory cuda:0, last step: peak reserved by the caching allocator, MiB | 512.0 | 512.0 |"
expect "$dir/gpu.md" "| memory cuda:0, last step: the peak in | aten::cudnn_convolution | aten::cudnn_convolution |"
expect "$dir/gpu.md" "| memory cpu, last step: peak above its start, MiB | 10.0 | 10.0 |"
expect "$dir/gpu.md" "| memory cpu, last step: the peak in | pix2pix G average | pix2pix G average |"
if grep -q "memory cpu, last step: peak reserved" "$dir/gpu.md"; then cat "$dir/gpu.md"; fail "a CPU reservation row"; fi
# Live at the peak: the 150 for the operator that called aten::empty, the 30, step 0's 20, and the
# 80 left of what was there before the trace; what came after the peak left out.
expect "$dir/gpu.md" "| memory cuda:0, live at the last step's peak, by what allocated it (MiB, blocks) | ours | other |"
expect "$dir/gpu.md" "| aten::cudnn_convolution | 150.0, 1 | 150.0, 1 |"
expect "$dir/gpu.md" "| (held since before the trace) | 80.0, 0 | 80.0, 0 |"
expect "$dir/gpu.md" "| aten::conv2d | 30.0, 1 | 30.0, 1 |"
expect "$dir/gpu.md" "| aten::cudnn_convolution, in an earlier traced step | 20.0, 1 | 20.0, 1 |"
expect "$dir/gpu.md" "| pix2pix G average | 10.0, 1 | 10.0, 1 |"
if grep -q "aten::empty" "$dir/gpu.md"; then cat "$dir/gpu.md"; fail "a block counted for aten::empty"; fi
# The peak by phase, the last step's: D backward holds the 280 (step 0's 920 in its D backward left
# out); G average allocates nothing on the GPU and holds the 250 it began with; the rest of the
# step the 250 after the free (and the 120 it began with). On the CPU the 10 in G average.
expect "$dir/gpu.md" "| memory cuda:0, last step's peak by phase, MiB | ours | other |"
expect "$dir/gpu.md" "| D backward | 280.0 | 280.0 |"
expect "$dir/gpu.md" "| G average | 250.0 | 250.0 |"
expect "$dir/gpu.md" "| (outside the named phases: forward passes, losses) | 250.0 | 250.0 |"
expect "$dir/gpu.md" "| memory cpu, last step's peak by phase, MiB | ours | other |"
expect "$dir/gpu.md" "| G average | 10.0 | 10.0 |"
if grep -q "^| D update |" "$dir/gpu.md"; then cat "$dir/gpu.md"; fail "a phase of an earlier step has a row"; fi
if grep -q "calls per step" "$dir/gpu.md"; then cat "$dir/gpu.md"; fail "a table of differing calls for equal traces"; fi
# Calls that differ: the conversions, nested or not; a phase named by both programs is one name.
"$python" "$root/bench/trace_summary.py" ours="$dir/gpu.json" other="$dir/converts.json" >"$dir/calls.md" ||
  { cat "$dir/calls.md"; fail "the trace with conversions was refused"; }
expect "$dir/calls.md" "| operator (calls per step, where the traces differ) | ours | other |"
expect "$dir/calls.md" "| aten::clone | 0 | 2 |"
expect "$dir/calls.md" "| aten::contiguous | 0 | 2 |"
[ "$(sed -n '/calls per step/,$p' "$dir/calls.md" | wc -l)" -eq 4 ] || { cat "$dir/calls.md"; fail "rows beyond the two"; }
"$python" "$root/bench/trace_summary.py" --top-calls 1 ours="$dir/gpu.json" other="$dir/converts.json" >"$dir/calls1.md" ||
  { cat "$dir/calls1.md"; fail "--top-calls 1 was refused"; }
expect "$dir/calls1.md" "| 1 more operators |  |  |"
"$python" "$root/bench/trace_summary.py" --top-held 2 ours="$dir/gpu.json" >"$dir/held.md" ||
  { cat "$dir/held.md"; fail "--top-held 2 was refused"; }
expect "$dir/held.md" "| 2 more | 50.0, 2 |"
"$python" "$root/bench/trace_summary.py" --top-kernels 2 ours="$dir/gpu.json" >"$dir/kernels.md" ||
  { cat "$dir/kernels.md"; fail "--top-kernels 2 was refused"; }
expect "$dir/kernels.md" "| 2 more | 0.300 |"

"$python" "$root/bench/trace_summary.py" one="$dir/cpu.json" >"$dir/cpu.md" || { cat "$dir/cpu.md"; fail "the CPU trace was refused"; }
expect "$dir/cpu.md" "| aten::addmm | 1, 1.500 |"
expect "$dir/cpu.md" "| aten::linear | 1, 1.000 |"
expect "$dir/cpu.md" "| aten::copy_ | 1, 0.500 |"
expect "$dir/cpu.md" "| Optimizer.step#Adam.step | 1, 0.700 |"
expect "$dir/cpu.md" "| host: operators | 4 |"
if grep -qE "device:|^\| kernel " "$dir/cpu.md"; then cat "$dir/cpu.md"; fail "a trace without kernels printed device rows"; fi

refused() {  # refused WHAT EXPECTED-TEXT ARGS...: status 2 and the text in the message
  local what="$1" text="$2" status=0
  shift 2
  "$python" "$root/bench/trace_summary.py" "$@" >"$dir/refused.log" 2>&1 || status=$?
  [ "$status" -eq 2 ] || { cat "$dir/refused.log"; fail "$what: status $status, not 2"; }
  grep -qF -- "$text" "$dir/refused.log" || { cat "$dir/refused.log"; fail "$what: the message lacks '$text'"; }
}
refused "a trace without steps" "$dir/nostep.json holds no step range" a="$dir/nostep.json"
refused "a file that is no trace" "cannot read $dir/broken.json" a="$dir/broken.json"
refused "a trace without a label" "LABEL=FILE" "$dir/gpu.json"

# A real trace: PyTorch's step on CPUs, 2 steps at 32x32 from the Fashion-MNIST file.
idx="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}/t10k-images-idx3-ubyte.gz"
OMP_NUM_THREADS=1 "$python" "$root/bench/pytorch_pix2pix.py" --idx "$idx" --size 32 --channels 1 --pairs 8 \
  --batch-size 2 --steps 1 --warmup 1 --trace "$dir/pytorch.json" --trace-steps 2 >"$dir/pytorch.log" 2>&1 ||
  { cat "$dir/pytorch.log"; fail "pytorch_pix2pix.py --trace failed"; }
grep -q "^trace: 2 steps in $dir/pytorch.json" "$dir/pytorch.log" || { cat "$dir/pytorch.log"; fail "no trace line"; }
"$python" "$root/bench/trace_summary.py" pytorch="$dir/pytorch.json" >"$dir/pytorch.md" ||
  { cat "$dir/pytorch.md"; fail "the summary refused PyTorch's trace"; }
expect "$dir/pytorch.md" "| steps traced | 2 |"
# A step's convolution backwards at 32x32: G's 5 convolutions and 5 transposed ones, D's 5 for
# each of its 3 passes (the fake and the real pair for D, the fake again for G).
grep -q "^| aten::convolution_backward | 25, " "$dir/pytorch.md" ||
  { cat "$dir/pytorch.md"; fail "PyTorch's trace lacks the 25 convolution backwards of a step"; }
# A PyTorch with Kineto (Debian 13's, a GPU node's) records the CPU allocator's memory events too;
# Debian 12's 1.13 profiler writes none.
if grep -q '"\[memory\]"' "$dir/pytorch.json"; then
  grep -q "^| memory cpu, last step: peak above its start, MiB | [0-9.]*[1-9]" "$dir/pytorch.md" ||
    { cat "$dir/pytorch.md"; fail "PyTorch's trace has memory events but the summary no CPU peak"; }
  # The phases it names as ours does, each with its peak; none above the step's.
  for phase in "D backward" "D update" "G backward" "G update"; do
    grep -q "^| $phase | [0-9.]* |\$" "$dir/pytorch.md" || { cat "$dir/pytorch.md"; fail "no peak of PyTorch's $phase"; }
  done
  "$python" - "$dir/pytorch.md" <<'PY' || { cat "$dir/pytorch.md"; fail "a phase's peak above the step's"; }
import sys
lines = open(sys.argv[1]).read().split("\n")
peak = float(next(l for l in lines if l.startswith("| memory cpu, last step: peak allocated")).split("|")[2])
start = next(i for i, l in enumerate(lines) if l.startswith("| memory cpu, last step's peak by phase"))
phases = [float(l.split("|")[2]) for l in lines[start + 2:lines.index("", start)]]
sys.exit(0 if phases and max(phases) == peak else 1)
PY
  # What is live at the peak adds up to the peak (each row rounded to 0.1 MiB), every byte in a block
  # the trace saw made: a CPU's allocator counts nothing from before the trace.
  "$python" - "$dir/pytorch.md" <<'PY' || { cat "$dir/pytorch.md"; fail "the live rows do not add up to the peak"; }
import sys
lines = open(sys.argv[1]).read().split("\n")
peak = float(next(l for l in lines if l.startswith("| memory cpu, last step: peak allocated")).split("|")[2])
start = next(i for i, l in enumerate(lines) if l.startswith("| memory cpu, live at the last step's peak"))
rows = [l for l in lines[start + 2:lines.index("", start)] if not l.startswith("| (held since before the trace)")]
held = sum(float(l.split("|")[2].split(",")[0]) for l in rows)
sys.exit(0 if rows and abs(held - peak) <= 0.05 * len(rows) + 0.05 else 1)
PY
fi
echo "trace_summary: known traces summed, bad ones refused, a real PyTorch trace read"
