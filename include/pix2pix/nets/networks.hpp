// The Pix2Pix networks, matching the reference implementation (Isola et al.; the
// CycleGAN-and-pix2pix repository): a U-Net generator and a PatchGAN discriminator.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>

#include "pix2pix/nets/sync_batch_norm.hpp"

namespace pix2pix::nets {

enum class Norm { batch, instance, none };
Norm parse_norm(const std::string& text);  // Error naming --norm otherwise
std::string to_string(Norm norm);

// The generator architectures of the reference (--netG): the U-Net of Pix2Pix and the ResNet of
// CycleGAN (resnet_generator.hpp).
enum class GeneratorArch { unet, resnet };

// LeakyReLU(slope)(norm(x)) of a batch-norm layer `norm` (its forward, training or not): a stand-in
// for the layer and ATen's leaky_relu_ (gan::batch_norm_leaky_relu).
// See Note [fused batch norm and LeakyReLU]. The networks hand it their BatchNorm2d layers and
// --sync-bn's SyncBatchNorm2d layers over ranks (is_batch_norm).
using BatchNormLeakyRelu = std::function<torch::Tensor(torch::nn::Module& norm, const torch::Tensor& x, double slope)>;
// Whether `module` is a batch norm a BatchNormLeakyRelu takes: a BatchNorm2d or a SyncBatchNorm2d.
bool is_batch_norm(const torch::nn::Module& module);

// ReLU(cat({skip, inner_norm ? inner_norm(inner) : inner}, 1)): a stand-in for the U-Net's skip
// concatenation and the ReLU that opens the outer level's up path
// (See Note [fused concatenation and ReLU]), and where the inner level's up path ends with a batch
// norm (is_batch_norm; a level without dropout), that layer too, which the inner level then hands
// over instead of running it (gan::concat_batch_norm_relu;
// See Note [fused concatenation, batch norm and ReLU]).
using ConcatRelu =
    std::function<torch::Tensor(const torch::Tensor& skip, const torch::Tensor& inner, torch::nn::Module* inner_norm)>;

struct GeneratorOptions {
  std::int64_t in_channels = 3;
  std::int64_t out_channels = 3;
  std::int64_t num_downs = 8;  // U-Net: 2^num_downs must divide the image side; >= 5
  std::int64_t ngf = 64;
  Norm norm = Norm::batch;
  bool dropout = true;  // U-Net: 0.5 in the innermost decoder blocks (not with num_downs == 5); ResNet: in each block
  GeneratorArch arch = GeneratorArch::unet;
  std::int64_t n_blocks = 9;           // ResNet: residual blocks
  BatchStatsSum batch_stats_sum = {};  // --sync-bn: batch norm over every rank's batch (empty: this rank's)
  // --fused-kernels, U-Net: each encoder level's batch norm and the next level's opening LeakyReLU
  // through this (empty: the layers).
  BatchNormLeakyRelu norm_activation = {};
  // --fused-kernels, U-Net: each level's skip concatenation, the outer level's ReLU after it and
  // the level's last batch norm where it ends its up path through this (empty: the layers).
  ConcatRelu concat_activation = {};
};

// What an image side must be a multiple of for this generator: 2^num_downs (U-Net), 4 (ResNet).
std::int64_t side_multiple(const GeneratorOptions& generator);
// Error naming `what` ("val images", "/test images of data.h5") unless `height` x `width` fits.
void check_generator_input(const GeneratorOptions& generator, std::int64_t height, std::int64_t width,
                           const std::string& what);
// The reference's --netG name: unet_256 (num_downs 8), unet_128 (7), unet_<2^n>; resnet_9blocks.
std::string net_g_name(const GeneratorOptions& generator);

// LeakyReLU(slope)(z + bias) of a convolution's output z computed without its bias: a stand-in for
// ATen's two operations (dist::bias_leaky_relu; See Note [fused bias and LeakyReLU]).
using BiasLeakyRelu = std::function<torch::Tensor(const torch::Tensor& z, const torch::Tensor& bias, double slope)>;

struct DiscriminatorOptions {
  std::int64_t in_channels = 6;  // A and B concatenated
  std::int64_t ndf = 64;
  std::int64_t n_layers = 3;  // 3: the 70x70 PatchGAN
  Norm norm = Norm::batch;
  BatchStatsSum batch_stats_sum = {};  // --sync-bn, as GeneratorOptions'
  // --fused-kernels: the first layer's bias and LeakyReLU through this (empty: its two layers).
  BiasLeakyRelu first_layer_activation = {};
  // --fused-kernels: each batch norm and the LeakyReLU after it through this (empty: the layers).
  BatchNormLeakyRelu norm_activation = {};
};

// The U-Net depth for an image side: log2(side), at most 8 (the reference's unet_256 serves 512
// too). Throws Error when the side is not a multiple of 2^depth or the depth would be below 5.
std::int64_t unet_depth_for(std::int64_t side);

// Side of the PatchGAN output map for an input side; Error when the input is too small.
std::int64_t patch_output_side(std::int64_t side, std::int64_t n_layers);

// Any generator: A in [-1, 1] to B in [-1, 1], NCHW. What validation, checkpoints, translate,
// evaluate and export hold.
class GeneratorImpl : public torch::nn::Module {
 public:
  explicit GeneratorImpl(const GeneratorOptions& options) : options_(options) {}
  virtual torch::Tensor forward(const torch::Tensor& a) = 0;
  const GeneratorOptions& options() const { return options_; }

 private:
  GeneratorOptions options_;
};
TORCH_MODULE(Generator);

class UnetGeneratorImpl : public GeneratorImpl {
 public:
  explicit UnetGeneratorImpl(const GeneratorOptions& options);
  torch::Tensor forward(const torch::Tensor& a) override;

 private:
  torch::nn::AnyModule model_;  // the outermost skip block
};
TORCH_MODULE(UnetGenerator);

// The generator `options.arch` names, built from `options`.
Generator make_generator(const GeneratorOptions& options);

class PatchDiscriminatorImpl : public torch::nn::Module {
 public:
  explicit PatchDiscriminatorImpl(const DiscriminatorOptions& options);
  // `pair`: A and B concatenated on channels. Returns logits [n, 1, p, p].
  torch::Tensor forward(const torch::Tensor& pair);
  const DiscriminatorOptions& options() const { return options_; }

 private:
  static constexpr std::int64_t kFirstStride = 2, kFirstPadding = 1;  // the first convolution's
  DiscriminatorOptions options_;
  torch::nn::Sequential model_;
  torch::nn::Conv2d first_{nullptr};  // model_'s layer 0
};
TORCH_MODULE(PatchDiscriminator);

// The norm layer after a convolution, as the reference builds it: BatchNorm2d, InstanceNorm2d
// (no affine parameters, no running statistics) or an Identity that keeps the layer's index.
// Batch norm with a `sum` over ranks is a SyncBatchNorm2d (See Note [synchronised batch norm]).
torch::nn::AnyModule norm_layer(Norm norm, std::int64_t channels, const BatchStatsSum& sum = {});
// Whether a convolution followed by `norm` carries a bias: not before batch norm, whose shift
// would make it redundant.
bool conv_bias(Norm norm);
// The activations, in place as the reference's (ReLU(True), LeakyReLU(0.2, True)):
// See Note [activations in place]
torch::nn::ReLU relu_in_place();
torch::nn::LeakyReLU leaky_relu_in_place();

// normal(0, 0.02) for (transposed) convolution weights, zero biases, normal(1, 0.02) for norm
// scales; the same numbers on every rank for the same generator state.
void init_weights(torch::nn::Module& module);

std::int64_t count_parameters(const torch::nn::Module& module);

}  // namespace pix2pix::nets
