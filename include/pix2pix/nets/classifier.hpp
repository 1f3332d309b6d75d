// The recognition network of the paper's auxiliary loss (Lupión et al. 2022, Fig. 9): a compact
// CNN that classifies B images. Sized from the image and the class count (docs/training.md,
// "Recognition network"): `blocks` stages of two 3x3 convolutions (norm, ReLU) and a 2x2 max
// pool, the first with `filters` channels and each later one with twice as many (at most 8x);
// then global average pooling and one linear layer to the class logits. Its input is what the
// generator gives and the loader makes: [n, channels, H, W] in [-1, 1] (pixels / 127.5 - 1).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "pix2pix/nets/networks.hpp"

namespace pix2pix::nets {

// How input pixels become the network's input; recorded in classifier files and checked on load.
inline constexpr const char* kClassifierInput = "uint8 pixels / 127.5 - 1";

struct ClassifierOptions {
  std::int64_t channels = 1;
  std::int64_t height = 32, width = 32;  // the image size it was trained on (G(A) must have it)
  std::int64_t classes = 10;
  std::int64_t filters = 32;  // channels of the first stage
  std::int64_t blocks = 0;    // stages; 0: classifier_blocks_for(height, width)
  Norm norm = Norm::batch;
};

// Stages for an image: halve the smaller side while it stays at least 4, at most 5 times
// (32 -> 3, 64 -> 4, 28 -> 2, 256 -> 5). Error for sides below 8.
std::int64_t classifier_blocks_for(std::int64_t height, std::int64_t width);

// "channels=1 size=32x32 classes=10 filters=32 blocks=3 norm=batch": for start-up tables and errors.
std::string describe(const ClassifierOptions& options);

class ClassifierImpl : public torch::nn::Module {
 public:
  // `options.blocks` 0 is resolved here (options() returns the resolved value). Error for a shape
  // the network cannot take (sides that leave no pixel, no classes).
  explicit ClassifierImpl(ClassifierOptions options);
  // Logits [n, classes].
  torch::Tensor forward(const torch::Tensor& images);
  // The penultimate layer, [n, D] (D: the last stage's channels): the pooled features the head
  // classifies, which `evaluate --features` takes for FID/KID.
  torch::Tensor embed(const torch::Tensor& images);
  const ClassifierOptions& options() const { return options_; }

 private:
  ClassifierOptions options_;
  torch::nn::Sequential features_;
  torch::nn::Linear head_{nullptr};
};
TORCH_MODULE(Classifier);

}  // namespace pix2pix::nets
