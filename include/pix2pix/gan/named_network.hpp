// A trained network as the run loop sees it: what messages call it and what its checkpoint
// archive is named.
#pragma once

#include <torch/torch.h>

#include <string>

namespace pix2pix::gan {

struct NamedNetwork {
  std::string label;  // "G", "D": replica-check messages, the start-up table
  std::string key;    // "generator", "discriminator": its archive in checkpoints
  torch::nn::Module* module;
};

}  // namespace pix2pix::gan
