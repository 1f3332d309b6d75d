// Networks from state dicts with the reference implementation's names
// (junyanz/pytorch-CycleGAN-and-pix2pix), which are our modules' names (networks.cpp builds them
// block by block as the reference does): the U-Net's shape read off its tensors, and any state
// dict loaded into a network with every name and shape checked.
#pragma once

#include <torch/torch.h>

#include <string>

#include "pix2pix/interop/torch_save_reader.hpp"
#include "pix2pix/nets/networks.hpp"

namespace pix2pix::interop {

// What a state dict of `network` holds: its parameters, then its buffers, by name in module order
// (the tensors themselves, not copies).
StateDict named_tensors(const torch::nn::Module& network);

// A reference UnetGenerator's or ResnetGenerator's options. U-Net: in/out channels and ngf from
// the outermost convolutions, num_downs from the nesting depth,
// norm from the first inner block (running statistics: batch; convolution biases: instance).
// dropout is not stored in a state dict: true, the reference pix2pix default. Error naming `source`
// and the first tensor a reference UnetGenerator would have and this state dict lacks; the
// reference's --norm none (no norm layers, no biases) has no form here. ResNet: channels and ngf
// from the stem and head, the blocks counted, dropout from where a block's second convolution
// sits, norm as for the U-Net.
nets::GeneratorOptions reference_generator_options(const StateDict& state, const std::string& source);

// Copies `state` into `network`'s parameters and buffers. Error naming `source` and the first name
// the network has and the state dict lacks, the first it holds and the network does not have, or
// the first whose shape differs (both shapes).
void load_state_dict(torch::nn::Module& network, const StateDict& state, const std::string& source);

}  // namespace pix2pix::interop
