#!/usr/bin/python3
"""Runs state dicts exported by `pix2pix export --format pytorch` in plain PyTorch.

The networks are rebuilt from the published architecture as the reference implementation
(junyanz/pytorch-CycleGAN-and-pix2pix) builds them (bench/pytorch_pix2pix.py), the files are
loaded with load_state_dict(strict=True) (any missing, extra or misshapen tensor is an error), and
the networks run in eval mode on an input tensor saved with torch::pickle_save; their outputs are
saved with torch.save for the C++ test to compare with LibTorch's.

Exit status 0, or 1 with the reason on stderr.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from pytorch_pix2pix import patchgan, unet  # noqa: E402


def run(network, weights, input_path, output_path):
    state = torch.load(weights, map_location="cpu")
    network.load_state_dict(state, strict=True)
    network.eval()
    with torch.no_grad():
        torch.save(network(torch.load(input_path)), output_path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--norm", default="batch")
    parser.add_argument("--generator", help="the exported generator state dict")
    parser.add_argument("--in-channels", type=int, default=3)
    parser.add_argument("--out-channels", type=int, default=3)
    parser.add_argument("--num-downs", type=int, default=8)
    parser.add_argument("--ngf", type=int, default=64)
    parser.add_argument("--discriminator", help="the exported discriminator state dict")
    parser.add_argument("--ndf", type=int, default=64)
    parser.add_argument("--n-layers", type=int, default=3)
    parser.add_argument("--input", required=True, help="a tensor saved by torch::pickle_save")
    parser.add_argument("--output", required=True, help="where torch.save puts the network's output")
    args = parser.parse_args()
    try:
        if args.generator:
            net = unet(args.in_channels, args.out_channels, args.num_downs, args.ngf, args.norm)
            run(net, args.generator, args.input, args.output)
        if args.discriminator:
            net = patchgan(args.in_channels + args.out_channels, args.ndf, args.n_layers, args.norm)
            run(net, args.discriminator, args.input, args.output)
    except Exception as error:  # the test reports what PyTorch said
        print("reference_check.py: " + str(error), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
