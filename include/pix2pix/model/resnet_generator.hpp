// The CycleGAN generator of the reference implementation (Zhu et al. 2017; the
// CycleGAN-and-pix2pix repository's ResnetGenerator): a 7x7 stem, two stride-2 downsamplings,
// n residual blocks at 4*ngf filters, two transposed-convolution upsamplings and a 7x7 head,
// reflection padding throughout. Its state-dict names are the reference's (`model.N...`), so
// reference weights load into it and ours into the reference.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "pix2pix/model/networks.hpp"

namespace pix2pix::model {

struct ResnetGeneratorOptions {
  std::int64_t in_channels = 3;
  std::int64_t out_channels = 3;
  std::int64_t ngf = 64;
  std::int64_t n_blocks = 9;   // resnet_9blocks (256x256 in the reference), resnet_6blocks (128x128)
  Norm norm = Norm::instance;  // CycleGAN's default
  bool dropout = false;        // 0.5 between a block's two convolutions (the reference's --no_dropout off)
};

// Error unless `side` is a multiple of 4 (two stride-2 levels that the upsampling must undo
// exactly) and at least 8 (the blocks' reflection padding needs 2 pixels at side / 4).
void check_resnet_side(std::int64_t side);

class ResnetGeneratorImpl : public torch::nn::Module {
 public:
  explicit ResnetGeneratorImpl(const ResnetGeneratorOptions& options);
  torch::Tensor forward(const torch::Tensor& a);
  const ResnetGeneratorOptions& options() const { return options_; }

 private:
  ResnetGeneratorOptions options_;
  torch::nn::Sequential model_;
};
TORCH_MODULE(ResnetGenerator);

}  // namespace pix2pix::model
