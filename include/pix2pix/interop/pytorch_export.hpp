// `export --format pytorch`: a state dict that Python's torch.load reads, named as the reference
// implementation (junyanz/pytorch-CycleGAN-and-pix2pix) names the tensors of its UnetGenerator and
// NLayerDiscriminator. Our modules are built block by block as those are (networks.cpp), so the
// names are our own; the one architecture without a reference form is --norm none, which the
// reference builds without convolution biases.
#pragma once

#include <torch/torch.h>

#include <string>

#include "pix2pix/nets/networks.hpp"

namespace pix2pix::interop {

// Error naming --norm none (the only norm whose networks differ from the reference's).
void require_reference_form(nets::Norm norm);

// Every parameter and buffer of `network` (as a copy on the CPU) by name, in module order.
c10::Dict<std::string, torch::Tensor> reference_state_dict(const torch::nn::Module& network);

// reference_state_dict(network) in the zip format of torch.save, as a plain dict that torch.load
// reads with weights_only=True (PyTorch 2.6's default), written to `path` through a temporary
// file: whole or not at all.
void write_state_dict(const std::string& path, const torch::nn::Module& network);

}  // namespace pix2pix::interop
