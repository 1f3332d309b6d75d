// The feature network FID and KID are measured with, read from a file the user gives: a
// TorchScript module mapping images [n, C, H, W] to features [n, D] (the StyleGAN2-ADA/clean-fid
// Inception `inception-2015-12-05.pt` among them), or a train-classifier file, whose penultimate
// layer gives the features. How pixels become its input is stated (FeatureOptions) and recorded
// with the file's SHA-256 beside every FID/KID. See Note [feature networks from a file].
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>

namespace pix2pix::metrics {

// The value range a feature network takes: [-1, 1], [0, 1] or [0, 255].
enum class FeatureInput { automatic, signed_unit, unit, pixels };
// "signed" | "unit" | "uint8" | "auto"; UsageError naming `option` otherwise.
FeatureInput parse_feature_input(const std::string& text, const std::string& option = "--features-input");
std::string to_string(FeatureInput input);

struct FeatureOptions {
  std::string file;                              // --features
  FeatureInput input = FeatureInput::automatic;  // --features-input
  std::int64_t channels = 0;                     // --features-channels (0: from the network)
  std::int64_t size = 0;                         // --features-size: images resized to size x size (0: as they are)
  std::string option = "--features";             // how messages name the file's option (train: --val-features)
};

// What was used, as evaluation.json records it.
struct FeatureFacts {
  std::string file, sha256;
  std::string kind;                              // "torchscript" | "classifier"
  FeatureInput input = FeatureInput::automatic;  // resolved
  std::int64_t channels = 0;                     // what the network is given (resolved)
  std::int64_t size = 0;                         // 0: the images' own size
  bool return_features = false;                  // forward was called with return_features=True
};

class FeatureNetwork {
 public:
  // Loads and checks the file onto `device`. Error naming it when it is neither a TorchScript
  // module with a forward method nor a train-classifier file; UsageError when the options do not
  // fit it (a classifier given another input range or size; no range for a module that does not
  // say). See Note [feature networks from a file].
  FeatureNetwork(const FeatureOptions& options, const torch::Device& device);
  ~FeatureNetwork();
  FeatureNetwork(FeatureNetwork&&) noexcept;

  // Features of images given as float [n, C, H, W] pixels on [0, 255] (any device): float32
  // [n, D] on the CPU, no gradients. Error naming the file when the channels cannot be adapted,
  // the output is not a 2-D tensor with n rows, or a feature is NaN or infinite.
  torch::Tensor features(const torch::Tensor& pixels);
  const FeatureFacts& facts() const;

 private:
  struct Loaded;
  std::unique_ptr<Loaded> loaded_;
};

}  // namespace pix2pix::metrics
