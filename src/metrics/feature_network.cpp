#include "pix2pix/metrics/feature_network.hpp"

#include <torch/script.h>

#include <optional>

#include "pix2pix/checkpoint/checkpoint_seal.hpp"
#include "pix2pix/checkpoint/classifier_file.hpp"
#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/sha256.hpp"

// Note [feature networks from a file]
// FID is only comparable between results measured with the same network, and no Inception weights
// ship with this project (users translate faces, thermal frames, satellite bands). So the network
// is a file: any TorchScript module, or a recognition network from train-classifier. What is
// recorded with the result is the file's SHA-256 and how images were fed to it:
//  - range: a TorchScript file does not say which it takes, so --features-input is required, except
//    for a module whose forward has a `return_features` argument: that is the StyleGAN2-ADA
//    Inception clean-fid uses (inception-2015-12-05.pt), which takes [0, 255] and resizes inside
//    itself; it is called with return_features=True, giving the standard 2048-D pool features.
//    A classifier takes what it was trained on: [-1, 1] at its own size.
//  - channels: the first 4-D parameter's second side (the first convolution's input channels),
//    unless --features-channels says; grey images are repeated to 3 channels, colour ones averaged
//    to 1; other mismatches are an error.
//  - size: --features-size resizes bilinearly (a classifier: to its own size).
// The network runs in float32 and in eval mode whatever --precision the generator runs in.

namespace pix2pix::metrics {
namespace {

// The last line of a TorchScript interpreter error ("RuntimeError: self must be a matrix"): what
// went wrong, without the traceback of serialized code above it.
std::string last_line(const std::string& text) {
  const auto end = text.find_last_not_of("\n ");
  if (end == std::string::npos) return text;
  const auto start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1,
                     end + 1 - (start == std::string::npos ? 0 : start + 1));
}

constexpr Choices<FeatureInput> kInputs = {{"auto", FeatureInput::automatic},
                                           {"signed", FeatureInput::signed_unit},
                                           {"unit", FeatureInput::unit},
                                           {"uint8", FeatureInput::pixels}};

}  // namespace

FeatureInput parse_feature_input(const std::string& text, const std::string& option) {
  return parse_choice(text, option.c_str(), kInputs);
}
std::string to_string(FeatureInput input) {
  return choice_name(input, kInputs);
}

struct FeatureNetwork::Loaded {
  FeatureFacts facts;
  std::optional<torch::jit::Module> module;
  std::optional<checkpoint::SavedClassifier> classifier;
  torch::Device device{torch::kCPU};
  std::string where;  // "--features FILE: ", the start of every message
};

FeatureNetwork::~FeatureNetwork() = default;
FeatureNetwork::FeatureNetwork(FeatureNetwork&&) noexcept = default;

FeatureNetwork::FeatureNetwork(const FeatureOptions& options, const torch::Device& device)
    : loaded_(std::make_unique<Loaded>()) {
  auto& facts = loaded_->facts;
  loaded_->device = device;
  facts.file = options.file;
  facts.sha256 = file_sha256(options.file);
  facts.size = options.size;
  const std::string where = loaded_->where = options.option + " " + options.file + ": ";
  const std::string input_option = options.option + "-input";
  if (!checkpoint::check_seal(options.file)) {
    // Sealed: one of this program's files, of which only a classifier gives features.
    try {
      loaded_->classifier = checkpoint::load_classifier(options.file, device);
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      throw Error(where + e.what());
    }
    const auto& c = loaded_->classifier->network->options();
    facts.kind = "classifier";
    if (options.input != FeatureInput::automatic && options.input != FeatureInput::signed_unit)
      throw UsageError(where + "a train-classifier network takes [-1, 1] (" + input_option + " signed); got " +
                       input_option + " " + to_string(options.input));
    facts.input = FeatureInput::signed_unit;
    if (options.size != 0 && (options.size != c.height || options.size != c.width))
      throw UsageError(where + "the classifier takes " + std::to_string(c.height) + "x" + std::to_string(c.width) +
                       " images; got --features-size " + std::to_string(options.size));
    if (options.channels != 0 && options.channels != c.channels)
      throw UsageError(where + "the classifier takes " + std::to_string(c.channels) +
                       " channels; got --features-channels " + std::to_string(options.channels));
    facts.channels = c.channels;
    return;
  }
  try {
    loaded_->module = torch::jit::load(options.file, device);
  } catch (const c10::Error& e) {
    throw Error(where + "neither a TorchScript module (torch.jit.save) nor a train-classifier file: " +
                std::string(e.what_without_backtrace()).substr(0, 300));
  }
  auto& module = *loaded_->module;
  module.eval();
  const auto forward = module.find_method("forward");
  if (!forward) throw Error(where + "the TorchScript module has no forward method");
  facts.kind = "torchscript";
  for (const auto& argument : forward->function().getSchema().arguments())
    if (argument.name() == "return_features") facts.return_features = true;
  facts.input = options.input;
  if (facts.input == FeatureInput::automatic) {
    if (!facts.return_features)
      throw UsageError(where + "say which value range the network takes: " + input_option +
                       " signed ([-1, 1]), unit ([0, 1]) or uint8 ([0, 255])");
    facts.input = FeatureInput::pixels;
  }
  facts.channels = options.channels;
  if (facts.channels == 0)
    for (const auto& parameter : module.parameters(/*recurse=*/true))
      if (parameter.dim() == 4) {
        facts.channels = parameter.size(1);
        break;
      }
}

const FeatureFacts& FeatureNetwork::facts() const {
  return loaded_->facts;
}

torch::Tensor FeatureNetwork::features(const torch::Tensor& pixels) {
  const auto& facts = loaded_->facts;
  const std::string& where = loaded_->where;
  torch::NoGradGuard no_grad;
  auto x = pixels.to(loaded_->device, torch::kFloat32);
  const std::int64_t n = x.size(0), c = x.size(1);
  if (facts.channels != 0 && c != facts.channels) {
    if (c == 1) {
      x = x.expand({n, facts.channels, x.size(2), x.size(3)});
    } else if (facts.channels == 1) {
      x = x.mean(1, /*keepdim=*/true);
    } else {
      throw Error(where + "the network takes " + std::to_string(facts.channels) + " channels and the images have " +
                  std::to_string(c) + " (grey is repeated and colour averaged; nothing else is adapted)");
    }
  }
  std::int64_t height = facts.size, width = facts.size;
  if (loaded_->classifier) {
    height = loaded_->classifier->network->options().height;
    width = loaded_->classifier->network->options().width;
  }
  if (height != 0 && (x.size(2) != height || x.size(3) != width))
    x = torch::nn::functional::interpolate(x, torch::nn::functional::InterpolateFuncOptions()
                                                  .size(std::vector<std::int64_t>{height, width})
                                                  .mode(torch::kBilinear)
                                                  .align_corners(false));
  switch (facts.input) {
    case FeatureInput::signed_unit:
      x = x / 127.5 - 1.0;
      break;
    case FeatureInput::unit:
      x = x / 255.0;
      break;
    default:
      break;
  }
  x = x.contiguous();
  torch::Tensor out;
  if (loaded_->classifier) {
    out = loaded_->classifier->network->embed(x);
  } else {
    auto forward = loaded_->module->get_method("forward");
    c10::IValue result;
    try {
      result = facts.return_features ? forward({x}, {{"return_features", true}}) : forward({x});
    } catch (const std::exception& e) {  // c10::Error, or the interpreter's JITException
      const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
      throw Error(where + "the network failed on images [" + std::to_string(n) + ", " + std::to_string(x.size(1)) +
                  ", " + std::to_string(x.size(2)) + ", " + std::to_string(x.size(3)) +
                  "]: " + last_line(c10_error ? c10_error->what_without_backtrace() : e.what()).substr(0, 400));
    }
    if (!result.isTensor())
      throw Error(where + "the network returns a " + result.tagKind() + ", not a tensor of features [n, D]");
    out = result.toTensor();
  }
  if (out.dim() != 2 || out.size(0) != n || out.size(1) < 1) {
    std::string shape;
    for (const auto side : out.sizes()) shape += (shape.empty() ? "" : ", ") + std::to_string(side);
    throw Error(where + "the network's output for a batch of " + std::to_string(n) + " is [" + shape +
                "]; features must be 2-D, [images, dimensions], with at least one dimension");
  }
  out = out.to(torch::kCPU, torch::kFloat32).contiguous();
  if (!torch::isfinite(out).all().item<bool>())
    throw Error(where + "the network gave NaN or infinite features for " +
                std::to_string((~torch::isfinite(out).all(1)).sum().item<std::int64_t>()) + " of " + std::to_string(n) +
                " images");
  return out;
}

}  // namespace pix2pix::metrics
