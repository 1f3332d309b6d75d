// The Pix2Pix networks, matching the reference implementation (Isola et al.; the
// CycleGAN-and-pix2pix repository): a U-Net generator and a PatchGAN discriminator.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace pix2pix::model {

enum class Norm { batch, instance, none };
Norm parse_norm(const std::string& text);  // Error naming --norm otherwise
std::string to_string(Norm norm);

struct GeneratorOptions {
  std::int64_t in_channels = 3;
  std::int64_t out_channels = 3;
  std::int64_t num_downs = 8;  // 2^num_downs must divide the image side; >= 5
  std::int64_t ngf = 64;
  Norm norm = Norm::batch;
  bool dropout = true;  // 0.5 in the innermost decoder blocks (not with num_downs == 5)
};

struct DiscriminatorOptions {
  std::int64_t in_channels = 6;  // A and B concatenated
  std::int64_t ndf = 64;
  std::int64_t n_layers = 3;  // 3: the 70x70 PatchGAN
  Norm norm = Norm::batch;
};

// The U-Net depth for an image side: log2(side), at most 8 (the reference's unet_256 serves 512
// too). Throws Error when the side is not a multiple of 2^depth or the depth would be below 5.
std::int64_t unet_depth_for(std::int64_t side);

// Side of the PatchGAN output map for an input side; Error when the input is too small.
std::int64_t patch_output_side(std::int64_t side, std::int64_t n_layers);

class UnetGeneratorImpl : public torch::nn::Module {
 public:
  explicit UnetGeneratorImpl(const GeneratorOptions& options);
  torch::Tensor forward(const torch::Tensor& a);
  const GeneratorOptions& options() const { return options_; }

 private:
  GeneratorOptions options_;
  torch::nn::AnyModule model_;  // the outermost skip block
};
TORCH_MODULE(UnetGenerator);

class PatchDiscriminatorImpl : public torch::nn::Module {
 public:
  explicit PatchDiscriminatorImpl(const DiscriminatorOptions& options);
  // `pair`: A and B concatenated on channels. Returns logits [n, 1, p, p].
  torch::Tensor forward(const torch::Tensor& pair);
  const DiscriminatorOptions& options() const { return options_; }

 private:
  DiscriminatorOptions options_;
  torch::nn::Sequential model_;
};
TORCH_MODULE(PatchDiscriminator);

// The norm layer after a convolution, as the reference builds it: BatchNorm2d, InstanceNorm2d
// (no affine parameters, no running statistics) or an Identity that keeps the layer's index.
torch::nn::AnyModule norm_layer(Norm norm, std::int64_t channels);
// Whether a convolution followed by `norm` carries a bias: not before batch norm, whose shift
// would make it redundant.
bool conv_bias(Norm norm);

// normal(0, 0.02) for (transposed) convolution weights, zero biases, normal(1, 0.02) for norm
// scales; the same numbers on every rank for the same generator state.
void init_weights(torch::nn::Module& module);

std::int64_t count_parameters(const torch::nn::Module& module);

}  // namespace pix2pix::model
