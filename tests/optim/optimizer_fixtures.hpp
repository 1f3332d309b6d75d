// What the optimizer tests share: a small convolutional network to train, a copy of its values,
// and an optimizer's state as the bytes a checkpoint holds.
#pragma once

#include <torch/torch.h>

#include <sstream>
#include <string>

namespace pix2pix::optim_tests {

// Two convolutions (3 -> 8 -> 4 channels, one of stride 2) around a leaky ReLU: 4-D weights for
// the layouts, biases for the small tensors, a few buckets at a small --bucket-mb.
inline torch::nn::Sequential small_net() {
  return torch::nn::Sequential(torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 4).stride(2).padding(1)),
                               torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
                               torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 4, 3).padding(1)));
}

inline void copy_values(torch::nn::Sequential& to, torch::nn::Sequential& from) {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < to->parameters().size(); ++i) to->parameters()[i].copy_(from->parameters()[i]);
}

inline std::string saved(const torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  return bytes.str();
}

}  // namespace pix2pix::optim_tests
