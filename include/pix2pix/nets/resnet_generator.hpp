// The CycleGAN generator of the reference implementation (Zhu et al. 2017; the
// CycleGAN-and-pix2pix repository's ResnetGenerator): a 7x7 stem, two stride-2 downsamplings,
// n residual blocks at 4*ngf filters, two transposed-convolution upsamplings and a 7x7 head,
// reflection padding throughout. Its state-dict names are the reference's (`model.N...`), so
// reference weights load into it and ours into the reference.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "pix2pix/nets/networks.hpp"

namespace pix2pix::nets {

// GeneratorOptions of a ResNet generator (num_downs unused).
GeneratorOptions resnet_generator_options(std::int64_t in_channels, std::int64_t out_channels, std::int64_t ngf,
                                          std::int64_t n_blocks, Norm norm, bool dropout);

class ResnetGeneratorImpl : public GeneratorImpl {
 public:
  explicit ResnetGeneratorImpl(const GeneratorOptions& options);  // arch resnet
  torch::Tensor forward(const torch::Tensor& a) override;

 private:
  torch::nn::Sequential model_;
};
TORCH_MODULE(ResnetGenerator);

}  // namespace pix2pix::nets
