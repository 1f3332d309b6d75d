#!/usr/bin/python3
"""The reference Pix2Pix training step in PyTorch, for timing against `pix2pix bench --what train`.

Written for this project from the published architecture (Isola et al. 2017; the U-Net and
70x70 PatchGAN as the reference implementation builds them: nested skip blocks, batch norm,
convolutions without bias before batch norm, dropout in the inner decoder blocks, GAN + lambda*L1,
Adam(0.5, 0.999)). One process, or DistributedDataParallel over gloo when started by
torch.distributed (`--ddp`, environment from bench/compare-pytorch.sh).

It reads the same HDF5 file as our trainer (h5py), takes this rank's shard of the first
--pairs train pairs, keeps it in memory as float NCHW in [-1, 1], and times --steps steps after
--warmup steps between two barriers. Prints one line: `images/s <global images per second>`.
"""
import argparse
import os
import time

import h5py
import numpy as np
import torch
import torch.nn as nn


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
    with h5py.File(path, "r") as f:
        a = f["train/A"][:pairs][rank::world]
        b = f["train/B"][:pairs][rank::world]

    def to_float(x):  # uint8 NHWC -> float NCHW in [-1, 1], as our loader does
        return torch.from_numpy(np.ascontiguousarray(x)).permute(0, 3, 1, 2).float().div(127.5).sub(1.0).contiguous()

    return to_float(a), to_float(b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--pairs", type=int, default=64)
    ap.add_argument("--lambda-l1", type=float, default=100.0)
    ap.add_argument("--ddp", action="store_true")
    args = ap.parse_args()

    torch.set_num_threads(1)
    rank, world = 0, 1
    if args.ddp:
        torch.distributed.init_process_group("gloo")
        rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
    a_all, b_all = load_shard(args.data, args.pairs, rank, world)
    side = a_all.shape[2]
    num_downs = min(8, int(np.log2(side)))

    torch.manual_seed(1)
    net_g = unet(a_all.shape[1], b_all.shape[1], num_downs)
    net_d = patchgan(a_all.shape[1] + b_all.shape[1])
    init_weights(net_g)
    init_weights(net_d)
    pair_d = PairD(net_d)
    if args.ddp:
        net_g_run = nn.parallel.DistributedDataParallel(net_g)
        pair_d_run = nn.parallel.DistributedDataParallel(pair_d)
    else:
        net_g_run, pair_d_run = net_g, pair_d
    opt_g = torch.optim.Adam(net_g.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(net_d.parameters(), lr=2e-4, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    l1 = nn.L1Loss()

    def step(i):
        n = a_all.shape[0]
        idx = [(i * args.batch_size + k) % n for k in range(args.batch_size)]
        real_a, real_b = a_all[idx], b_all[idx]
        fake_b = net_g_run(real_a)
        for p in net_d.parameters():
            p.requires_grad_(True)
        opt_d.zero_grad()
        pred_fake, pred_real = pair_d_run(torch.cat([real_a, fake_b.detach()], 1), torch.cat([real_a, real_b], 1))
        loss_d = 0.5 * (bce(pred_fake, torch.zeros_like(pred_fake)) + bce(pred_real, torch.ones_like(pred_real)))
        loss_d.backward()
        opt_d.step()
        for p in net_d.parameters():
            p.requires_grad_(False)
        opt_g.zero_grad()
        pred = net_d(torch.cat([real_a, fake_b], 1))  # D frozen here: outside DDP
        loss_g = bce(pred, torch.ones_like(pred)) + l1(fake_b, real_b) * args.lambda_l1
        loss_g.backward()
        opt_g.step()
        return loss_d.item(), loss_g.item()  # as the reference logs them: a sync per step

    for i in range(args.warmup):
        step(i)
    if args.ddp:
        torch.distributed.barrier()
    start = time.perf_counter()
    for i in range(args.steps):
        step(args.warmup + i)
    if args.ddp:
        torch.distributed.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        print("images/s %.4f" % (args.steps * args.batch_size * world / seconds), flush=True)
    if args.ddp:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
