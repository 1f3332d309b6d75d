#!/usr/bin/python3
"""The reference Pix2Pix training step in PyTorch, for timing against `pix2pix bench --what train`.

Written for this project from the published architecture (Isola et al. 2017; the U-Net and
70x70 PatchGAN as the reference implementation builds them: nested skip blocks, batch norm,
convolutions without bias before batch norm, dropout in the inner decoder blocks, GAN + lambda*L1,
Adam(0.5, 0.999)). One process, or DistributedDataParallel over gloo when started by
torch.distributed (`--ddp`, environment from bench/compare-pytorch.sh).

It reads the same HDF5 file as our trainer (h5py), takes this rank's shard of the first
--pairs train pairs, keeps it in memory as float NCHW in [-1, 1], and times --steps steps after
--warmup steps between two barriers. Prints `images/s <global images per second>`, and on a GPU
`peak memory MiB <allocated> <reserved>` (PyTorch's caching allocator, the whole run).

On a GPU node without h5py and numpy (a pip PyTorch has neither), `--idx FILE.gz` makes the
pairs from a Fashion-MNIST IDX file with PyTorch alone (B: the image resized to --size, --channels
copies; A: its edges, See Note [pairs without numpy]), and `--write-aligned DIR` writes them as A|B
PNGs that `pix2pix prepare --aligned DIR` turns into the same pairs for our trainer
(scripts/gpu-smoke.sh). `--device cuda` and `--precision bf16|fp16` (autocast; fp16 with a
gradient scaler) time the GPU step at each precision.

As a careful user tunes it on a GPU: `--cudnn-benchmark` (torch.backends.cudnn.benchmark),
`--channels-last` (NHWC weights and inputs) and `--compile default|reduce-overhead|max-autotune`
(torch.compile of G and D; reduce-overhead replays CUDA graphs). `--flops` counts the step's
floating-point operations once (torch.utils.flop_counter: convolutions and matrix products, the
convention of model FLOP utilisation) and prints `step GFLOP <n>`. `--trace FILE` records
--trace-steps untimed steps after the timed ones as a Chrome trace, the counterpart of
`pix2pix bench --trace` (bench/trace_summary.py sets the two side by side).
"""
import argparse
import contextlib
import gzip
import os
import struct
import sys
import time
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F


def norm_layer(norm, channels):
    """The reference's norm layers ('none' is not here: the reference builds it without biases)."""
    if norm == "batch":
        return nn.BatchNorm2d(channels)
    if norm == "instance":
        return nn.InstanceNorm2d(channels, affine=False, track_running_stats=False)
    raise ValueError("norm must be batch or instance, got " + repr(norm))


class SkipBlock(nn.Module):
    """One U-Net level, as the reference builds it (its in-place LeakyReLU overwrites x before
    torch.cat reads it; the parent's ReLU makes that the same function as networks.cpp's)."""

    def __init__(self, outer, inner, in_ch=None, sub=None, outermost=False, innermost=False, dropout=False,
                 norm="batch"):
        super().__init__()
        self.outermost = outermost
        bias = norm == "instance"
        in_ch = outer if in_ch is None else in_ch
        down = nn.Conv2d(in_ch, inner, 4, 2, 1, bias=bias)
        if outermost:
            layers = [down, sub, nn.ReLU(True), nn.ConvTranspose2d(inner * 2, outer, 4, 2, 1), nn.Tanh()]
        elif innermost:
            layers = [nn.LeakyReLU(0.2, True), down, nn.ReLU(True),
                      nn.ConvTranspose2d(inner, outer, 4, 2, 1, bias=bias), norm_layer(norm, outer)]
        else:
            layers = [nn.LeakyReLU(0.2, True), down, norm_layer(norm, inner), sub, nn.ReLU(True),
                      nn.ConvTranspose2d(inner * 2, outer, 4, 2, 1, bias=bias), norm_layer(norm, outer)]
            if dropout:
                layers.append(nn.Dropout(0.5))
        self.model = nn.Sequential(*layers)

    def forward(self, x):
        return self.model(x) if self.outermost else torch.cat([x, self.model(x)], 1)


class Wrapper(nn.Module):
    """The reference's UnetGenerator and NLayerDiscriminator hold their network as `model`, which
    puts `model.` in front of every name of their state dicts."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)


def unet(in_ch, out_ch, num_downs, ngf=64, norm="batch", dropout=True):
    block = SkipBlock(ngf * 8, ngf * 8, innermost=True, norm=norm)
    for _ in range(num_downs - 5):
        block = SkipBlock(ngf * 8, ngf * 8, sub=block, dropout=dropout, norm=norm)
    block = SkipBlock(ngf * 4, ngf * 8, sub=block, norm=norm)
    block = SkipBlock(ngf * 2, ngf * 4, sub=block, norm=norm)
    block = SkipBlock(ngf, ngf * 2, sub=block, norm=norm)
    return Wrapper(SkipBlock(out_ch, ngf, in_ch=in_ch, sub=block, outermost=True, norm=norm))


def patchgan(in_ch, ndf=64, n_layers=3, norm="batch"):
    bias = norm == "instance"
    layers = [nn.Conv2d(in_ch, ndf, 4, 2, 1), nn.LeakyReLU(0.2, True)]
    mult = 1
    for n in range(1, n_layers):
        prev, mult = mult, min(2 ** n, 8)
        layers += [nn.Conv2d(ndf * prev, ndf * mult, 4, 2, 1, bias=bias), norm_layer(norm, ndf * mult),
                   nn.LeakyReLU(0.2, True)]
    prev, mult = mult, min(2 ** n_layers, 8)
    layers += [nn.Conv2d(ndf * prev, ndf * mult, 4, 1, 1, bias=bias), norm_layer(norm, ndf * mult),
               nn.LeakyReLU(0.2, True), nn.Conv2d(ndf * mult, 1, 4, 1, 1)]
    return Wrapper(nn.Sequential(*layers))


class ResnetBlock(nn.Module):
    """x + conv_block(x), as the reference's ResnetBlock with reflection padding."""

    def __init__(self, dim, norm="instance", dropout=False):
        super().__init__()
        bias = norm == "instance"
        layers = [nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3, bias=bias), norm_layer(norm, dim), nn.ReLU(True)]
        if dropout:
            layers.append(nn.Dropout(0.5))
        layers += [nn.ReflectionPad2d(1), nn.Conv2d(dim, dim, 3, bias=bias), norm_layer(norm, dim)]
        self.conv_block = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv_block(x)


def resnet(in_ch, out_ch, ngf=64, n_blocks=9, norm="instance", dropout=False):
    """The reference's ResnetGenerator (CycleGAN): 7x7 stem, 2 downsamplings, n_blocks residual
    blocks, 2 upsamplings, 7x7 head, reflection padding."""
    bias = norm == "instance"
    layers = [nn.ReflectionPad2d(3), nn.Conv2d(in_ch, ngf, 7, bias=bias), norm_layer(norm, ngf), nn.ReLU(True)]
    for mult in (1, 2):
        layers += [nn.Conv2d(ngf * mult, ngf * mult * 2, 3, 2, 1, bias=bias), norm_layer(norm, ngf * mult * 2),
                   nn.ReLU(True)]
    layers += [ResnetBlock(ngf * 4, norm, dropout) for _ in range(n_blocks)]
    for mult in (4, 2):
        layers += [nn.ConvTranspose2d(ngf * mult, ngf * mult // 2, 3, 2, 1, output_padding=1, bias=bias),
                   norm_layer(norm, ngf * mult // 2), nn.ReLU(True)]
    layers += [nn.ReflectionPad2d(3), nn.Conv2d(ngf, out_ch, 7), nn.Tanh()]
    return Wrapper(nn.Sequential(*layers))


def init_weights(net):
    for m in net.modules():
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
            nn.init.normal_(m.weight, 0.0, 0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.normal_(m.weight, 1.0, 0.02)
            nn.init.zeros_(m.bias)


class PairD(nn.Module):
    """D applied to the fake and the real pair in one forward: under DDP the discriminator's
    gradients of both are then reduced once per backward, as one process accumulates them."""

    def __init__(self, d):
        super().__init__()
        self.d = d

    def forward(self, fake_ab, real_ab):
        return self.d(fake_ab), self.d(real_ab)


def load_shard(path, pairs, rank, world):
    import h5py  # noqa: only this source needs it (and numpy)
    import numpy as np
    with h5py.File(path, "r") as f:
        a = f["train/A"][:pairs][rank::world]
        b = f["train/B"][:pairs][rank::world]

    def to_float(x):  # uint8 NHWC -> float NCHW in [-1, 1], as our loader does
        return torch.from_numpy(np.ascontiguousarray(x)).permute(0, 3, 1, 2).float().div(127.5).sub(1.0).contiguous()

    return to_float(a), to_float(b)


# Note [pairs without numpy]: a Fashion-MNIST IDX file (gzip: magic, count, rows, cols, then
# bytes) read with the standard library; B is each image resized (bilinear) to the side and
# repeated to the channels, A the Sobel magnitude of B above a third of its maximum, both in
# [-1, 1]. Not our `prepare --derive edges` (Canny, OpenCV), but the same for a timing: the
# networks see images of this size, and gpu-smoke.sh gives our trainer these very pairs.
def idx_pairs(path, count, side, channels):
    with gzip.open(path, "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        if magic != 2051:
            raise SystemExit("%s: not an IDX image file (magic %d)" % (path, magic))
        count = min(count, n)
        raw = f.read(count * rows * cols)
    images = torch.tensor(list(raw), dtype=torch.float32).view(count, 1, rows, cols) / 255.0
    b = F.interpolate(images, size=(side, side), mode="bilinear", align_corners=False).clamp(0, 1)
    sobel = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]).view(1, 1, 3, 3)
    gx = F.conv2d(b, sobel, padding=1)
    gy = F.conv2d(b, sobel.transpose(2, 3), padding=1)
    magnitude = (gx * gx + gy * gy).sqrt()
    threshold = magnitude.amax(dim=(1, 2, 3), keepdim=True) / 3
    a = (magnitude > threshold).float()
    # Rounded to 8 bits as a file would hold them, then [-1, 1] as our loader makes them.
    to_unit = lambda x: (x * 255).round().div(127.5).sub(1.0).repeat(1, channels, 1, 1).contiguous()
    return to_unit(a), to_unit(b)


def write_png(path, rgb_rows, width, height):
    """8-bit RGB PNG, filter 0 on every row, with the standard library only."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    raw = b"".join(b"\x00" + row for row in rgb_rows)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def write_aligned(directory, a, b):
    """Each pair as DIR/NNNNN.png, A left and B right (the layout of `prepare --aligned`)."""
    os.makedirs(directory, exist_ok=True)
    to_bytes = lambda x: x.add(1.0).mul(127.5).round().clamp(0, 255).to(torch.uint8)
    for i in range(a.shape[0]):
        pair = torch.cat([to_bytes(a[i]), to_bytes(b[i])], 2)  # C, H, 2W
        if pair.shape[0] == 1:
            pair = pair.repeat(3, 1, 1)
        hwc = pair.permute(1, 2, 0).contiguous()
        rows = [bytes(hwc[r].flatten().tolist()) for r in range(hwc.shape[0])]
        write_png(os.path.join(directory, "%05d.png" % i), rows, hwc.shape[1], hwc.shape[0])


def trace(path, steps, step, first, finish_queued, device):
    """`steps` more steps under torch.profiler (the host's operators, the allocator's memory events
    and, on a GPU, the kernels and copies), each inside a "pytorch step N" range as ours are inside
    "pix2pix step N", written as a Chrome trace to a fresh name beside `path` and renamed over it.
    Untimed: a profiler slows every operator it records (See Note [a trace beside the timing])."""
    from torch.profiler import ProfilerActivity, profile, record_function
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities, record_shapes=True, profile_memory=True) as prof:
        for i in range(steps):
            with record_function("pytorch step %d" % i):
                step(first + i)
        finish_queued()
    directory, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(directory, ".%s.tmp-%d" % (name, os.getpid()))
    try:
        prof.export_chrome_trace(temporary)
        if os.path.getsize(temporary) == 0:
            raise OSError("the profiler wrote nothing")
        os.replace(temporary, path)
    except OSError as e:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise SystemExit("--trace: cannot write %s: %s" % (path, e))
    print("trace: %d steps in %s" % (steps, path), flush=True)


def cpu_convolutions_checked():
    """What our CPU trainer does first (See Note [oneDNN's wrong input gradients]): the input
    gradients of stride-1 convolutions whose output channels are not a multiple of 16, with oneDNN
    and without; oneDNN off where they part by more than 1e-3 of the largest (an AMD EPYC with
    PyTorch 2.6: ~1, and this step's losses NaN). Says so on stderr."""
    if not torch.backends.mkldnn.is_available() or not torch.backends.mkldnn.enabled:
        return

    def filled(sizes, step, scale):  # values without the RNG, as ours
        return (torch.arange(int(torch.tensor(sizes).prod()), dtype=torch.float).mul(step).sin() * scale).reshape(
            sizes)
    worst = 0.0
    for cin, cout, kernel, padding, side, batch in [(8, 1, 4, 1, 8, 1), (8, 3, 7, 3, 10, 1), (16, 4, 3, 1, 4, 2),
                                                    (8, 15, 3, 1, 4, 2)]:
        x = filled((batch, cin, side, side), 0.37, 1.0)
        w = filled((cout, cin, kernel, kernel), 0.11, 0.1)

        def input_gradient():
            xi = x.clone().requires_grad_(True)
            y = F.conv2d(xi, w, padding=padding)
            return torch.autograd.grad(y, xi, filled(tuple(y.shape), 0.53, 1.0))[0]
        with_onednn = input_gradient()
        torch.backends.mkldnn.enabled = False
        without = input_gradient()
        torch.backends.mkldnn.enabled = True
        error = ((with_onednn - without).abs().max() / without.abs().max()).item()
        worst = max(worst, error if error == error else float("inf"))
    if worst > 1e-3:
        torch.backends.mkldnn.enabled = False
        print("CPU convolutions without oneDNN: its input gradients were wrong here (relative error %.3g)" % worst,
              file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser()
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help="the pix2pix-h5 file our trainer reads (needs h5py, numpy)")
    source.add_argument("--idx", help="a Fashion-MNIST IDX .gz: pairs made with PyTorch alone")
    ap.add_argument("--size", type=int, default=256, help="--idx: the side of the pairs")
    ap.add_argument("--channels", type=int, default=3, help="--idx: channels of A and B")
    ap.add_argument("--write-aligned", metavar="DIR", help="--idx: write the pairs as A|B PNGs and exit")
    ap.add_argument("--device", default="cpu", help="cpu | cuda")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--pairs", type=int, default=64)
    ap.add_argument("--lambda-l1", type=float, default=100.0)
    ap.add_argument("--ddp", action="store_true")
    ap.add_argument("--cudnn-benchmark", action="store_true", help="torch.backends.cudnn.benchmark = True")
    ap.add_argument("--channels-last", action="store_true", help="NHWC weights and inputs")
    ap.add_argument("--compile", default="none", choices=["none", "default", "reduce-overhead", "max-autotune"],
                    help="torch.compile G and D with this mode")
    ap.add_argument("--flops", action="store_true", help="count the step's FLOPs (one extra step) and print them")
    ap.add_argument("--trace", metavar="FILE",
                    help="after the timed steps, run --trace-steps more under torch.profiler and write them as a "
                         "Chrome trace (as `pix2pix bench --trace`; bench/trace_summary.py compares the two)")
    ap.add_argument("--trace-steps", type=int, default=3, help="steps --trace records")
    args = ap.parse_args()
    if args.trace and args.trace_steps < 1:
        raise SystemExit("--trace-steps must be at least 1, got %d" % args.trace_steps)
    if args.trace and args.ddp:
        raise SystemExit("--trace is taken on one process here; give it without --ddp")
    if args.compile != "none" and args.ddp:
        raise SystemExit("--compile is timed on one process here; give it without --ddp")
    torch.backends.cudnn.benchmark = args.cudnn_benchmark

    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(1)
        cpu_convolutions_checked()
    elif not torch.cuda.is_available():
        raise SystemExit("--device %s: this PyTorch sees no GPU" % args.device)
    if args.precision == "fp16" and device.type != "cuda":
        raise SystemExit("--precision fp16 needs --device cuda (loss scaling is CUDA's)")
    rank, world = 0, 1
    if args.ddp:
        torch.distributed.init_process_group("gloo")
        rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
    if args.idx:
        a_all, b_all = idx_pairs(args.idx, args.pairs, args.size, args.channels)
        if args.write_aligned:
            write_aligned(args.write_aligned, a_all, b_all)
            print("wrote %d aligned pairs of %dx%d to %s" % (a_all.shape[0], args.size, args.size, args.write_aligned))
            return
        a_all, b_all = a_all[rank::world].contiguous(), b_all[rank::world].contiguous()
    else:
        a_all, b_all = load_shard(args.data, args.pairs, rank, world)
    layout = torch.channels_last if args.channels_last else torch.contiguous_format
    a_all, b_all = a_all.to(device, memory_format=layout), b_all.to(device, memory_format=layout)
    side = a_all.shape[2]
    num_downs = min(8, side.bit_length() - 1)

    torch.manual_seed(1)
    net_g = unet(a_all.shape[1], b_all.shape[1], num_downs)
    net_d = patchgan(a_all.shape[1] + b_all.shape[1])
    init_weights(net_g)
    init_weights(net_d)
    net_g.to(device, memory_format=layout)
    net_d.to(device, memory_format=layout)
    pair_d = PairD(net_d)
    net_d_run = net_d
    if args.ddp:
        net_g_run = nn.parallel.DistributedDataParallel(net_g)
        pair_d_run = nn.parallel.DistributedDataParallel(pair_d)
    elif args.compile != "none":
        net_g_run = torch.compile(net_g, mode=args.compile)
        net_d_run = torch.compile(net_d, mode=args.compile)
        pair_d_run = PairD(net_d_run)
    else:
        net_g_run, pair_d_run = net_g, pair_d
    opt_g = torch.optim.Adam(net_g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(net_d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    l1 = nn.L1Loss()
    half = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[args.precision]
    autocast = lambda: torch.autocast(device.type, dtype=half, enabled=half is not None)
    scaler = torch.cuda.amp.GradScaler(enabled=args.precision == "fp16")
    # The phases ours names in a trace ("pix2pix D backward", ...), named alike while tracing
    # (record_function, set below before trace()), so that trace_summary.py compares them phase by
    # phase; the timed steps pay one empty context each.
    phase = lambda name: contextlib.nullcontext()

    def step(i):
        if args.compile == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()  # nothing of the last step's graphs is read again
        n = a_all.shape[0]
        idx = [(i * args.batch_size + k) % n for k in range(args.batch_size)]
        real_a = a_all[idx].contiguous(memory_format=layout)
        real_b = b_all[idx].contiguous(memory_format=layout)
        with autocast():
            fake_b = net_g_run(real_a)
        for p in net_d.parameters():
            p.requires_grad_(True)
        opt_d.zero_grad()
        with autocast():
            pred_fake, pred_real = pair_d_run(torch.cat([real_a, fake_b.detach()], 1),
                                              torch.cat([real_a, real_b], 1))
            loss_d = 0.5 * (bce(pred_fake, torch.zeros_like(pred_fake)) + bce(pred_real, torch.ones_like(pred_real)))
        with phase("pytorch D backward"):
            scaler.scale(loss_d).backward()
        with phase("pytorch D update"):
            scaler.step(opt_d)
        for p in net_d.parameters():
            p.requires_grad_(False)
        opt_g.zero_grad()
        with autocast():
            pred = net_d_run(torch.cat([real_a, fake_b], 1))  # D frozen here: outside DDP
            loss_g = bce(pred, torch.ones_like(pred)) + l1(fake_b, real_b) * args.lambda_l1
        with phase("pytorch G backward"):
            scaler.scale(loss_g).backward()
        with phase("pytorch G update"):
            scaler.step(opt_g)
            scaler.update()
        return loss_d.item(), loss_g.item()  # as the reference logs them: a sync per step

    def finish_queued():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    if args.flops:
        try:
            from torch.utils.flop_counter import FlopCounterMode
        except ImportError:
            raise SystemExit("--flops needs torch.utils.flop_counter (PyTorch 2.1 or later)")
        counter = FlopCounterMode(display=False)
        with counter:  # an eager step: the count is the networks', whatever runs them
            saved = (net_g_run, net_d_run, pair_d_run)
            net_g_run, net_d_run, pair_d_run = net_g, net_d, pair_d
            step(0)
            net_g_run, net_d_run, pair_d_run = saved
        print("step GFLOP %.4f" % (counter.get_total_flops() / 1e9), flush=True)
    for i in range(args.warmup):
        step(i)
    finish_queued()
    if args.ddp:
        torch.distributed.barrier()
    start = time.perf_counter()
    losses = (0.0, 0.0)
    for i in range(args.steps):
        losses = step(args.warmup + i)
    finish_queued()
    if args.ddp:
        torch.distributed.barrier()
    seconds = time.perf_counter() - start
    if not all(map(lambda v: v == v and abs(v) != float("inf"), losses)):
        raise SystemExit("a loss of the last step is not finite: %r" % (losses,))
    if rank == 0:
        print("images/s %.4f" % (args.steps * args.batch_size * world / seconds), flush=True)
        if device.type == "cuda":
            print("peak memory MiB %.0f %.0f" % (torch.cuda.max_memory_allocated(device) / 2**20,
                                                 torch.cuda.max_memory_reserved(device) / 2**20), flush=True)
    if args.trace:
        from torch.profiler import record_function
        phase = record_function
        trace(args.trace, args.trace_steps, step, args.warmup + args.steps, finish_queued, device)
    if args.ddp:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
