"""Chrome traces of training steps side by side, per step and per operator.

    trace_summary.py [--top N] [--top-kernels N] [--top-held N] [--top-calls N] LABEL=TRACE.json [LABEL=TRACE.json ...]

Reads traces that LibTorch's and PyTorch's profiler (Kineto) write: `pix2pix bench --trace` (each
step inside a "pix2pix step N" range) and `bench/pytorch_pix2pix.py --trace` ("pytorch step N").
Only what happens inside those ranges counts. For each trace it prints, per step: the host's wall
time, how many operators the host ran, and on a GPU how many kernels (with copies and memsets)
ran, how long the device was busy (the union of their intervals) and how long it idled between
the first and the last of them (each step's own work). Then one row per operator, the largest first: a kernel counts for
the innermost operator running on the host thread that launched it (aten::cudnn_convolution,
aten::convolution_backward, aten::_fused_adam_, ...) or named range ("pix2pix G average"), so two
programs running the same networks compare operator by operator, whatever their kernels are
called. Without kernels (a CPU trace) the rows are the operators' and ranges' own host time (less
the operators they call). On a device a last table has one row per kernel (copy, memset) name, so
that the same operator's work done by other kernels (another cuDNN algorithm) shows, and where
the profiler recorded the tensors' shapes, one row per operator and 4-d input contiguous in neither
NCHW nor NHWC (a channel slice of an NHWC tensor): the kernels that read such a tensor are often
not the ones its layout has. Given two
traces or more, a last table lists every operator and named range (nested ones too, however short)
whose calls per step differ between them, the largest difference first: work one program does and
the other does not (a layout conversion before a convolution, a product with 1), which the tables
by time miss where it is small.

With the profiler's memory events (both programs' --trace record them) it prints, per device, the
memory of the last traced step (the one that the earlier ones left in a steady state): what was
allocated when it began, its peak and the peak above that start (what the step itself holds at
once: activations, gradients, temporaries), the caching allocator's peak reservation on a GPU, and
the operator running when the peak was reached. A GPU's figures are the allocator's totals; a
CPU's count only what was allocated while the profiler ran (PyTorch's CPU allocator tracks no
more), so on a CPU the start is what the earlier traced steps left, not the weights. Then what is
live at that peak, by what allocated it: each block the step allocated and had not freed by the
peak counts for the innermost operator or named range that asked for it (an allocation-only
operator such as aten::empty counts for the operator that called it), so two programs that keep
different tensors until backward differ in a named row (an activation's output kept beside its
input shows as that activation's row); blocks from the earlier traced steps, and those allocated
before the trace began (the peak less every block seen), are a row each. The rows add up to the
peak. And the peak of each phase that both programs name alike ("pix2pix G backward" and "pytorch
G backward" are "G backward"; "D update", ...), the rest of the step (forward passes, losses) as
one row: two programs whose peaks fall in different phases still compare phase by phase.

The standard library only: it runs where a GPU node's Python has no numpy. Exit status 2 with
the file named for a trace it cannot read or that holds no step.
"""
import argparse
import bisect
import json
import re
import sys
from collections import defaultdict

STEP = re.compile(r"^(pix2pix|pytorch) step \d+$")
PHASE = re.compile(r"^(?:pix2pix|pytorch) (.+)$")  # a phase both programs name: "pix2pix G backward"
OUTSIDE_PHASES = "(outside the named phases: forward passes, losses)"
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
# Operators that only allocate: a block they make counts for the operator that called them.
ALLOCATION_ONLY = re.compile(r"^aten::(empty|empty_like|empty_strided|new_empty|new_empty_strided|zeros|zeros_like|"
                             r"new_zeros|resize_)$")
BEFORE_TRACE = "(held since before the trace)"
EARLIER_STEP = ", in an earlier traced step"


def refuse(message):
    print("trace_summary: " + message, file=sys.stderr)
    sys.exit(2)


class Trace:
    def __init__(self, label, path):
        self.label = label
        try:
            with open(path) as f:
                trace = json.load(f)
            # The Trace Event Format's two forms: an object holding traceEvents (Kineto's), or the
            # bare array (PyTorch's profiler without Kineto, as Debian 12's).
            events = trace if isinstance(trace, list) else trace["traceEvents"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            refuse("cannot read %s as a Chrome trace: %s" % (path, e))
        # Kineto copies each range a program names onto the device's timeline (category
        # gpu_user_annotation) where kernels ran in it: the host's range is the one that counts.
        spans = [e for e in events if e.get("ph") == "X" and "dur" in e and e.get("cat") != "gpu_user_annotation"]
        steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in spans if STEP.match(str(e.get("name", ""))))
        if not steps:
            refuse("%s holds no step range ('pix2pix step N' or 'pytorch step N')" % path)
        self.steps = len(steps)
        self.host_ms = sum(end - start for start, end in steps) / 1e3 / self.steps
        starts = [start for start, _ in steps]

        def step_of(ts):  # the index of the step range holding time ts, or None
            i = bisect.bisect_right(starts, ts) - 1
            return i if i >= 0 and ts < steps[i][1] else None

        # Operators: Kineto's cpu_op; the array form has no categories, and every range in it but
        # the steps is an operator or a range the program named (Optimizer.step, say).
        ops = [e for e in spans if (e.get("cat") == "cpu_op" or ("cat" not in e and not STEP.match(str(e.get("name")))))
               and step_of(e["ts"]) is not None]
        self.operators = len(ops)
        # Ranges a program names (ours: See Note [named ranges in a trace]; PyTorch's
        # Optimizer.step) own the time and the kernels of what runs inside them and in no operator.
        named = [e for e in spans if e.get("cat") == "user_annotation" and not STEP.match(str(e.get("name")))
                 and step_of(e["ts"]) is not None]
        ops += named
        # Every operator's and named range's calls per step, nested ones too: where two programs
        # differ in these, one runs work the other does not (a layout conversion, a product with 1).
        # A phase both name counts under its shared name ("G backward").
        self.calls = defaultdict(float)
        for e in ops:
            phase = PHASE.match(str(e.get("name")))
            self.calls[phase.group(1) if phase else str(e.get("name"))] += 1 / self.steps
        launches = {}  # correlation id -> (host thread, time) of the runtime call that queued it
        for e in spans:
            if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {}):
                launches[e["args"]["correlation"]] = (e.get("tid"), e["ts"])
        device = []  # (event, launch, step)
        for e in spans:
            if e.get("cat") not in DEVICE_CATEGORIES:
                continue
            launch = launches.get(e.get("args", {}).get("correlation"))
            step = step_of(launch[1]) if launch is not None else None
            if step is not None:
                device.append((e, launch, step))
        self.kernels = len(device)
        phases = [(phase.group(1), e["ts"], e["ts"] + e["dur"]) for e in named
                  if step_of(e["ts"]) == self.steps - 1 and (phase := PHASE.match(str(e.get("name"))))]
        self.memory = memory_of_last_step(events, steps[-1], ops, phases)
        # Busy: the union of the intervals of what each step queued; idle: the rest of the time
        # from its first to its last.
        busy = idle = 0.0
        for step in range(self.steps):
            intervals = sorted((e["ts"], e["ts"] + e["dur"]) for e, _, s in device if s == step)
            covered, end = 0.0, None
            for s, t in intervals:
                if end is None or s > end:
                    covered += t - s
                    end = t
                elif t > end:
                    covered += t - end
                    end = t
            busy += covered
            if intervals:
                idle += max(t for _, t in intervals) - intervals[0][0] - covered
        self.device_busy_ms = busy / 1e3 / self.steps
        self.device_idle_ms = idle / 1e3 / self.steps
        # Per step, {name: count} and {name: ms}: per operator the device time of the kernels it
        # launched, else its own host time; on a device also per kernel name.
        self.count, self.ms = defaultdict(float), defaultdict(float)
        self.kernel_count, self.kernel_ms = defaultdict(float), defaultdict(float)
        # And per operator call on a tensor contiguous in neither layout, the device time of its
        # kernels: a kernel that reads such a tensor is often not the one the layout has (ATen's
        # NCHW batch norm over an NHWC slice), nor vectorised.
        self.strided_count, self.strided_ms = defaultdict(float), defaultdict(float)
        if device:
            owner = innermost_operator_events(ops, [launch for _, launch, _ in device])
            calls_seen = set()
            for (e, _, _), op in zip(device, owner):
                name = op["name"] if op is not None else "(no operator)"
                for count, ms, key in ((self.count, self.ms, name),
                                       (self.kernel_count, self.kernel_ms, str(e.get("name")))):
                    count[key] += 1 / self.steps
                    ms[key] += e["dur"] / 1e3 / self.steps
                strided = strided_input(op)
                if strided is not None:
                    key = "%s %s" % (name, strided)
                    if id(op) not in calls_seen:
                        calls_seen.add(id(op))
                        self.strided_count[key] += 1 / self.steps
                    self.strided_ms[key] += e["dur"] / 1e3 / self.steps
        else:
            for name, own in self_times(ops):
                self.count[name] += 1 / self.steps
                self.ms[name] += own / 1e3 / self.steps


def memory_of_last_step(events, step, ops, phases):
    """{device: (allocated at the step's start, peak allocated, peak reserved, operator at the
    peak, {what allocated it: [bytes, blocks] live at the peak}, {phase: its peak})} in bytes,
    from the [memory] events of the profiler's memory profiling; `phases`: (name, start, end) of
    the step's named phases."""
    first, last = step
    per_device = {}
    for e in events:
        args = e.get("args", {})
        if e.get("name") != "[memory]" or "Total Allocated" not in args:
            continue
        device = "cpu" if args.get("Device Type") == 0 else "cuda:%d" % args.get("Device Id", 0)
        per_device.setdefault(device, []).append(e)
    memory = {}
    for device, marks in per_device.items():
        marks.sort(key=lambda e: (e["ts"], e["args"].get("Ev Idx", 0)))
        before = [e for e in marks if e["ts"] < first]
        inside = [e for e in marks if first <= e["ts"] < last]
        start = before[-1]["args"]["Total Allocated"] if before else 0
        at = max(range(len(before), len(before) + len(inside)), key=lambda i: marks[i]["args"]["Total Allocated"],
                 default=None)
        top = marks[at] if at is not None else None
        by_phase = phase_peaks(start, inside, phases)
        if top is None or top["args"]["Total Allocated"] < start:
            memory[device] = (start, start, 0, "(no allocation above the start)", {}, by_phase)
            continue
        reserved = max(e["args"].get("Total Reserved", 0) for e in inside)
        where = innermost_operators(ops, [(top.get("tid"), top["ts"])], skip=ALLOCATION_ONLY)[0]
        peak = top["args"]["Total Allocated"]
        memory[device] = (start, peak, reserved, where, live_at(marks[:at + 1], first, peak, ops), by_phase)
    return memory


def phase_peaks(start, inside, phases):
    """{phase: the most allocated during it} for a step that begins at `start` bytes with the
    memory events `inside` (in time order): what was allocated as a phase began counts for it, and
    an event counts for the phase whose range holds its time on any thread (a GPU's backward
    allocates on LibTorch's device threads, the range is the training thread's); the events in none
    count for OUTSIDE_PHASES, with the step's start."""
    peaks = {OUTSIDE_PHASES: start}
    level, k = start, 0
    for name, begin, end in sorted(phases, key=lambda p: p[1]):
        while k < len(inside) and inside[k]["ts"] < begin:
            level = inside[k]["args"]["Total Allocated"]
            peaks[OUTSIDE_PHASES] = max(peaks[OUTSIDE_PHASES], level)
            k += 1
        peaks[name] = max(peaks.get(name, 0), level)
        while k < len(inside) and inside[k]["ts"] < end:
            level = inside[k]["args"]["Total Allocated"]
            peaks[name] = max(peaks[name], level)
            k += 1
    for e in inside[k:]:
        peaks[OUTSIDE_PHASES] = max(peaks[OUTSIDE_PHASES], e["args"]["Total Allocated"])
    return peaks


def live_at(marks, first, peak, ops):
    """{what allocated it: [bytes, blocks]} of the blocks live after the events `marks`: a block
    counts for the operator that asked for it, marked EARLIER_STEP where that was before time
    `first`; what the total `peak` holds beyond every block seen counts for BEFORE_TRACE."""
    live = {}  # address -> (bytes, index of its allocation in marks)
    for i, e in enumerate(marks):
        args = e["args"]
        if "Addr" not in args:
            continue
        if args.get("Bytes", 0) > 0:
            live[args["Addr"]] = (args["Bytes"], i)
        else:
            live.pop(args["Addr"], None)  # a free (of a block the trace may not have seen made)
    blocks = sorted(live.values(), key=lambda block: block[1])
    owners = innermost_operators(ops, [(marks[i].get("tid"), marks[i]["ts"]) for _, i in blocks],
                                 skip=ALLOCATION_ONLY)
    held = {}
    for (size, i), owner in zip(blocks, owners):
        name = owner if marks[i]["ts"] >= first else owner + EARLIER_STEP
        held.setdefault(name, [0, 0])
        held[name][0] += size
        held[name][1] += 1
    seen = sum(size for size, _ in blocks)
    if peak != seen:
        held[BEFORE_TRACE] = [peak - seen, 0]
    return held


def by_thread(ops):
    threads = {}
    for e in ops:
        threads.setdefault(e.get("tid"), []).append(e)
    for events in threads.values():
        events.sort(key=lambda e: (e["ts"], -e["dur"]))  # a parent before the children it starts with
    return threads


def innermost_operators(ops, launches, skip=None):
    """For each (thread, time) in `launches`, the name of the innermost operator running then (the
    innermost whose name `skip` does not match, where one is open)."""
    return [e["name"] if e is not None else "(no operator)" for e in innermost_operator_events(ops, launches, skip)]


def innermost_operator_events(ops, launches, skip=None):
    """innermost_operators' events (None where no operator is open): one pass over each thread's
    operators and launches in time order with a stack of the open ones."""
    found = [None] * len(launches)
    wanted = {}
    for i, (tid, ts) in enumerate(launches):
        wanted.setdefault(tid, []).append((ts, i))
    threads = by_thread(ops)
    for tid, points in wanted.items():
        points.sort()
        events, stack, k = threads.get(tid, []), [], 0
        for ts, i in points:
            while k < len(events) and events[k]["ts"] <= ts:
                while stack and stack[-1]["ts"] + stack[-1]["dur"] <= events[k]["ts"]:
                    stack.pop()
                stack.append(events[k])
                k += 1
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= ts:
                stack.pop()
            if stack:
                kept = [e for e in stack if skip is None or not skip.match(e["name"])]
                found[i] = (kept or stack)[-1]
    return found


def strided_input(op):
    """The first 4-d input of operator event `op` (Kineto's "Input Dims" and "Input Strides") that
    is contiguous in neither NCHW nor NHWC, as "[dims] strides [strides]"; None where there is none.
    A dimension of size 1 takes any stride; a tensor with a stride of 0 is a broadcast, not a layout."""
    args = op.get("args", {}) if op is not None else {}
    for dims, strides in zip(args.get("Input Dims", []), args.get("Input Strides", [])):
        if not (isinstance(dims, list) and len(dims) == 4 and isinstance(strides, list) and len(strides) == 4
                and all(isinstance(v, int) for v in dims + strides)) or 0 in strides:
            continue
        n, c, h, w = dims
        fits = lambda expected: all(s == e or d == 1 for s, e, d in zip(strides, expected, dims))
        if not fits([c * h * w, h * w, w, 1]) and not fits([h * w * c, 1, w * c, c]):
            return "%s strides %s" % (dims, strides)
    return None


def self_times(ops):
    """(name, own time) for each operator: its duration less its direct children's."""
    out = []
    for events in by_thread(ops).values():
        stack = []  # [event, children's time]
        for e in events:
            while stack and e["ts"] >= stack[-1][0]["ts"] + stack[-1][0]["dur"]:
                done = stack.pop()
                out.append((done[0]["name"], done[0]["dur"] - done[1]))
            if stack:
                stack[-1][1] += e["dur"]
            stack.append([e, 0.0])
        out.extend((done[0]["name"], done[0]["dur"] - done[1]) for done in stack)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--top", type=int, default=30, help="operator rows (the largest by time per step)")
    ap.add_argument("--top-kernels", type=int, default=30,
                    help="kernel rows on a device (the largest by time per step)")
    ap.add_argument("--top-held", type=int, default=20,
                    help="rows of what is live at the peak (the largest first)")
    ap.add_argument("--top-calls", type=int, default=40,
                    help="rows of operators whose calls per step differ between traces (the largest difference first)")
    ap.add_argument("traces", nargs="+", metavar="LABEL=TRACE.json")
    args = ap.parse_args()
    traces = []
    for given in args.traces:
        label, sep, path = given.partition("=")
        if not sep or not label or not path:
            refuse("give each trace as LABEL=FILE, not %r" % given)
        traces.append(Trace(label, path))
    on_device = any(t.kernels for t in traces)

    def row(name, values):
        print("| %s | %s |" % (name, " | ".join(values)))

    print("| per step | %s |" % " | ".join(t.label for t in traces))
    print("|---|" + "---|" * len(traces))
    row("steps traced", [str(t.steps) for t in traces])
    row("host: wall ms", ["%.2f" % t.host_ms for t in traces])
    row("host: operators", ["%.0f" % (t.operators / t.steps) for t in traces])
    if on_device:
        row("device: kernels, copies, memsets", ["%.0f" % (t.kernels / t.steps) for t in traces])
        row("device: busy ms", ["%.2f" % t.device_busy_ms for t in traces])
        row("device: idle ms between its first and last kernel", ["%.2f" % t.device_idle_ms for t in traces])
    devices = sorted(set().union(*(t.memory for t in traces)))
    mib = lambda b: "%.1f" % (b / 2**20)
    for device in devices:
        def memory_row(name, figure):
            row("memory %s, last step: %s" % (device, name),
                [figure(t.memory[device]) if device in t.memory else "-" for t in traces])
        memory_row("allocated at its start, MiB", lambda m: mib(m[0]))
        memory_row("peak allocated, MiB", lambda m: mib(m[1]))
        memory_row("peak above its start, MiB", lambda m: mib(m[1] - m[0]))
        if any(t.memory.get(device, (0, 0, 0))[2] for t in traces):
            memory_row("peak reserved by the caching allocator, MiB", lambda m: mib(m[2]))
        memory_row("the peak in", lambda m: m[3])
    print()
    for device in devices:
        by_phase = [t.memory[device][5] if device in t.memory else {} for t in traces]
        if not any(len(p) > 1 for p in by_phase):
            continue  # no trace names a phase
        print("| memory %s, last step's peak by phase, MiB | %s |" % (device, " | ".join(t.label for t in traces)))
        print("|---|" + "---|" * len(traces))
        names = []  # in the order the programs run them, the rest of the step last
        for p in by_phase:
            names += [n for n in p if n not in names and n != OUTSIDE_PHASES]
        for name in names + [OUTSIDE_PHASES]:
            row(name, [mib(p[name]) if name in p else "-" for p in by_phase])
        print()
    for device in devices:
        held = [t.memory[device][4] if device in t.memory else {} for t in traces]
        if not any(held):
            continue
        print("| memory %s, live at the last step's peak, by what allocated it (MiB, blocks) | %s |"
              % (device, " | ".join(t.label for t in traces)))
        print("|---|" + "---|" * len(traces))
        names = sorted(set().union(*held), key=lambda n: -max(h.get(n, [0])[0] for h in held))
        for name in names[:args.top_held]:
            row(name, ["%s, %d" % (mib(h[name][0]), h[name][1]) if name in h else "-" for h in held])
        if len(names) > args.top_held:
            rest = names[args.top_held:]
            row("%d more" % len(rest), ["%s, %d" % (mib(sum(h.get(n, [0, 0])[0] for n in rest)),
                                                    sum(h.get(n, [0, 0])[1] for n in rest)) for h in held])
        print()
    measure = "device ms of the kernels it launched" if on_device else "own host ms"
    ranked_table("operator (per step: count, %s)" % measure, [(t.count, t.ms) for t in traces], args.top, traces, row)
    if on_device:
        # The same work by kernel: two programs whose operator rows differ run other kernels (another
        # cuDNN algorithm, a copy one of them makes) for it.
        print()
        ranked_table("kernel (per step: count, device ms)", [(t.kernel_count, t.kernel_ms) for t in traces],
                     args.top_kernels, traces, row)
        if any(t.strided_ms for t in traces):
            print()
            ranked_table("operator on a tensor contiguous in neither NCHW nor NHWC (per step: calls, device ms)",
                         [(t.strided_count, t.strided_ms) for t in traces], args.top_kernels, traces, row)
    spread = lambda n: max(t.calls.get(n, 0.0) for t in traces) - min(t.calls.get(n, 0.0) for t in traces)
    differing = {n for n in set().union(*(t.calls for t in traces)) if spread(n) > 1e-9}
    if len(traces) > 1 and differing:
        # Largest difference first; those beyond --top-calls in one row of their number.
        ranked = sorted(differing, key=lambda n: (-spread(n), n))
        calls = lambda c: ("%.0f" if abs(c - round(c)) < 1e-9 else "%.2f") % c
        print()
        print("| operator (calls per step, where the traces differ) | %s |" % " | ".join(t.label for t in traces))
        print("|---|" + "---|" * len(traces))
        for name in ranked[:args.top_calls]:
            row(name, [calls(t.calls.get(name, 0.0)) for t in traces])
        if len(ranked) > args.top_calls:
            row("%d more operators" % (len(ranked) - args.top_calls), ["" for _ in traces])


def ranked_table(title, figures, top, traces, row):
    """A table of `figures` ({name: count}, {name: ms}) per trace, the largest `top` names by time
    first, the rest summed in one row."""
    print("| %s | %s |" % (title, " | ".join(t.label for t in traces)))
    print("|---|" + "---|" * len(traces))
    names = set().union(*(ms for _, ms in figures))
    ranked = sorted(names, key=lambda n: -max(ms.get(n, 0.0) for _, ms in figures))
    for name in ranked[:top]:
        row(name, ["%.0f, %.3f" % (count[name], ms[name]) if name in ms else "-" for count, ms in figures])
    if len(ranked) > top:
        rest = ranked[top:]
        row("%d more" % len(rest), ["%.3f" % sum(ms.get(n, 0.0) for n in rest) for _, ms in figures])

if __name__ == "__main__":
    main()
