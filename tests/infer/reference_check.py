#!/usr/bin/python3
"""The reference networks in plain PyTorch, for the export and import tests.

The networks are rebuilt from the published architecture as the reference implementation
(junyanz/pytorch-CycleGAN-and-pix2pix) builds them (bench/pytorch_pix2pix.py).

- Default: the files of `pix2pix export --format pytorch` are loaded with
  load_state_dict(strict=True) (any missing, extra or misshapen tensor is an error) and the
  networks run in eval mode on an input tensor saved with torch::pickle_save; their outputs are
  saved with torch.save for the C++ test to compare with LibTorch's.
- --save-generator FILE: a reference generator with seeded random weights and running statistics,
  saved as the reference saves it (torch.save of state_dict(), an OrderedDict with _metadata), and
  its eval-mode output on --input; --damage missing|extra|shape saves it damaged that way.

Exit status 0, or 1 with the reason on stderr.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from pytorch_pix2pix import patchgan, resnet, unet  # noqa: E402


def run(network, weights, input_path, output_path):
    # weights_only=True: PyTorch 2.6's default, which refuses any global a plain state dict does
    # not need (1.13 has the flag too, so both CI legs check what users of either get).
    state = torch.load(weights, map_location="cpu", weights_only=True)
    network.load_state_dict(state, strict=True)
    network.eval()
    with torch.no_grad():
        torch.save(network(torch.load(input_path)), output_path)


def save_random_generator(args):
    torch.manual_seed(args.seed)
    net = unet(args.in_channels, args.out_channels, args.num_downs, args.ngf, args.norm)
    with torch.no_grad():
        for name, tensor in net.state_dict().items():
            if name.endswith("running_mean"):
                tensor.uniform_(-0.3, 0.3)
            elif name.endswith("running_var"):
                tensor.uniform_(0.5, 2.0)
            elif tensor.dim() == 4:
                tensor.normal_(0.0, tensor[0].numel() ** -0.5)
            elif tensor.is_floating_point():
                tensor.normal_(0.0, 0.1)
    net.eval()
    with torch.no_grad():
        torch.save(net(torch.load(args.input)), args.output)
    state = net.state_dict()
    if args.damage == "missing":
        del state["model.model.3.bias"]
    elif args.damage == "extra":
        state["model.model.9.weight"] = torch.zeros(2)
    elif args.damage == "shape":
        state["model.model.3.bias"] = torch.zeros(state["model.model.3.bias"].numel() + 1)
    torch.save(state, args.save_generator)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--norm", default="batch")
    parser.add_argument("--generator", help="the exported generator state dict")
    parser.add_argument("--in-channels", type=int, default=3)
    parser.add_argument("--out-channels", type=int, default=3)
    parser.add_argument("--num-downs", type=int, default=8)
    parser.add_argument("--ngf", type=int, default=64)
    parser.add_argument("--resnet-blocks", type=int, help="--generator is a ResNet generator with this many blocks")
    parser.add_argument("--dropout", action="store_true", help="the ResNet generator's blocks hold dropout")
    parser.add_argument("--discriminator", help="the exported discriminator state dict")
    parser.add_argument("--ndf", type=int, default=64)
    parser.add_argument("--n-layers", type=int, default=3)
    parser.add_argument("--input", required=True, help="a tensor saved by torch::pickle_save")
    parser.add_argument("--output", required=True, help="where torch.save puts the network's output")
    parser.add_argument("--save-generator", help="save a random reference generator's state dict here")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--damage", choices=["missing", "extra", "shape"])
    args = parser.parse_args()
    try:
        if args.save_generator:
            save_random_generator(args)
            return 0
        if args.generator and args.resnet_blocks is not None:
            net = resnet(args.in_channels, args.out_channels, args.ngf, args.resnet_blocks, args.norm, args.dropout)
            run(net, args.generator, args.input, args.output)
        elif args.generator:
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
