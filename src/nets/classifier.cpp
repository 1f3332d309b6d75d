#include "pix2pix/nets/classifier.hpp"

#include <algorithm>

#include "pix2pix/common/error.hpp"

namespace pix2pix::nets {
namespace nn = torch::nn;

std::int64_t classifier_blocks_for(std::int64_t height, std::int64_t width) {
  const std::int64_t side = std::min(height, width);
  if (side < 8)
    throw Error("images of " + std::to_string(height) + "x" + std::to_string(width) +
                " are too small for the recognition network (sides of 8 or more)");
  std::int64_t blocks = 0;
  for (std::int64_t s = side; s / 2 >= 4 && blocks < 5; s /= 2) ++blocks;
  return blocks;
}

std::string describe(const ClassifierOptions& o) {
  return "channels=" + std::to_string(o.channels) + " size=" + std::to_string(o.height) + "x" +
         std::to_string(o.width) + " classes=" + std::to_string(o.classes) + " filters=" + std::to_string(o.filters) +
         " blocks=" + std::to_string(o.blocks) + " norm=" + to_string(o.norm);
}

ClassifierImpl::ClassifierImpl(ClassifierOptions options) : options_(options) {
  auto& o = options_;
  if (o.blocks == 0) o.blocks = classifier_blocks_for(o.height, o.width);
  if (o.channels < 1 || o.classes < 2 || o.filters < 1 || o.blocks < 1)
    throw Error("recognition network: " + describe(o) +
                " needs channels >= 1, classes >= 2, filters >= 1, blocks >= 1");
  if ((std::min(o.height, o.width) >> o.blocks) < 1)
    throw Error("recognition network: " + std::to_string(o.blocks) + " blocks leave no pixel of " +
                std::to_string(o.height) + "x" + std::to_string(o.width) + " images");
  features_ = nn::Sequential();
  std::int64_t in = o.channels;
  for (std::int64_t b = 0; b < o.blocks; ++b) {
    const std::int64_t out = o.filters << std::min<std::int64_t>(b, 3);
    for (int conv = 0; conv < 2; ++conv) {
      // Convolutions carry a bias only where no batch norm follows with its own shift.
      features_->push_back(
          nn::Conv2d(nn::Conv2dOptions(conv == 0 ? in : out, out, 3).padding(1).bias(o.norm != Norm::batch)));
      switch (o.norm) {
        case Norm::batch:
          features_->push_back(nn::BatchNorm2d(out));
          break;
        case Norm::instance:
          features_->push_back(nn::InstanceNorm2d(nn::InstanceNorm2dOptions(out).affine(true)));
          break;
        case Norm::none:
          break;
      }
      features_->push_back(relu_in_place());  // See Note [activations in place]
    }
    features_->push_back(nn::MaxPool2d(2));
    in = out;
  }
  features_->push_back(nn::AdaptiveAvgPool2d(1));
  features_->push_back(nn::Flatten());
  register_module("features", features_);
  head_ = register_module("head", nn::Linear(in, o.classes));
}

torch::Tensor ClassifierImpl::forward(const torch::Tensor& images) {
  return head_->forward(features_->forward(images));
}

torch::Tensor ClassifierImpl::embed(const torch::Tensor& images) {
  return features_->forward(images);
}

}  // namespace pix2pix::nets
