#include "pix2pix/interop/reference_state_dict.hpp"

#include <map>

#include "pix2pix/common/error.hpp"

namespace pix2pix::interop {
StateDict named_tensors(const torch::nn::Module& network) {
  StateDict tensors;
  for (const auto& p : network.named_parameters()) tensors.emplace_back(p.key(), p.value());
  for (const auto& b : network.named_buffers()) tensors.emplace_back(b.key(), b.value());
  return tensors;
}

namespace {

// The norm of the layer at `norm_prefix` after the convolution at `conv_prefix`: running
// statistics mean batch norm; a convolution bias (absent before batch norm) instance norm.
nets::Norm reference_norm(const std::map<std::string, torch::Tensor>& by_name, const std::string& conv_prefix,
                          const std::string& norm_prefix, const std::string& source, const std::string& network) {
  if (by_name.count(norm_prefix + "running_mean")) return nets::Norm::batch;
  if (by_name.count(conv_prefix + "bias")) return nets::Norm::instance;
  throw Error(source + " is a " + network +
              " without norm layers or convolution biases (the reference's --norm none), which this trainer does "
              "not build");
}

// The reference's ResnetGenerator (resnet_generator.hpp): model.1 the stem convolution, model.K
// with a conv_block each residual block, the head the last 4-d model.K.weight.
nets::GeneratorOptions reference_resnet_options(const std::map<std::string, torch::Tensor>& by_name,
                                                const std::string& source) {
  nets::GeneratorOptions o;
  o.arch = nets::GeneratorArch::resnet;
  o.num_downs = 0;
  const torch::Tensor& stem = by_name.at("model.1.weight");
  if (stem.dim() != 4) throw Error(source + ": model.1.weight is not 4-d: not a reference ResnetGenerator");
  o.ngf = stem.size(0);
  o.in_channels = stem.size(1);
  std::int64_t blocks = 0, head = -1;
  for (std::int64_t k = 0; k < 4096; ++k) {
    const std::string prefix = "model." + std::to_string(k) + ".";
    if (by_name.count(prefix + "conv_block.1.weight")) ++blocks;
    const auto weight = by_name.find(prefix + "weight");
    if (weight != by_name.end() && weight->second.dim() == 4) head = k;
  }
  if (head < 0) throw Error(source + ": no output convolution: not a reference ResnetGenerator");
  o.out_channels = by_name.at("model." + std::to_string(head) + ".weight").size(0);
  o.n_blocks = blocks;
  // With dropout a block's second convolution sits at 6, after the Dropout at 4.
  o.dropout = by_name.count("model.10.conv_block.6.weight") > 0;
  o.norm = reference_norm(by_name, "model.1.", "model.2.", source, "ResNet generator");
  return o;
}

}  // namespace

nets::GeneratorOptions reference_generator_options(const StateDict& state, const std::string& source) {
  std::map<std::string, torch::Tensor> by_name(state.begin(), state.end());
  if (by_name.count("model.1.weight") && !by_name.count("model.model.0.weight"))
    return reference_resnet_options(by_name, source);
  const auto conv_weight = [&](const std::string& name) -> const torch::Tensor& {
    const auto it = by_name.find(name);
    if (it == by_name.end() || it->second.dim() != 4)
      throw Error(source + " has no 4-d " + name + ": not the state dict of a reference UnetGenerator");
    return it->second;
  };
  nets::GeneratorOptions o;
  const torch::Tensor& first = conv_weight("model.model.0.weight");  // Conv2d(in, ngf)
  o.ngf = first.size(0);
  o.in_channels = first.size(1);
  o.out_channels = conv_weight("model.model.3.weight").size(1);  // ConvTranspose2d(2 ngf, out)
  // Each inner block's down-convolution is its `1`; a middle block nests the next as its `3`.
  std::int64_t levels = 1;
  for (std::string prefix = "model.model.1.model."; by_name.count(prefix + "1.weight"); prefix += "3.model.") ++levels;
  o.num_downs = levels;
  o.norm = reference_norm(by_name, "model.model.1.model.1.", "model.model.1.model.2.", source, "U-Net");
  o.dropout = true;
  if (o.num_downs < 5)
    throw Error(source + " holds a U-Net of " + std::to_string(o.num_downs) +
                " levels; the reference's have 5 or more");
  return o;
}

void load_state_dict(torch::nn::Module& network, const StateDict& state, const std::string& source) {
  const StateDict own = named_tensors(network);
  std::map<std::string, torch::Tensor> targets(own.begin(), own.end());
  std::map<std::string, torch::Tensor> given(state.begin(), state.end());
  for (const auto& [name, target] : targets) {
    const auto it = given.find(name);
    if (it == given.end()) throw Error(source + " has no " + name + ", which the network needs");
    if (it->second.sizes() != target.sizes())
      throw Error(source + ": " + name + " is " + c10::str(it->second.sizes()) + ", the network needs " +
                  c10::str(target.sizes()));
  }
  for (const auto& [name, tensor] : state)
    if (!targets.count(name)) throw Error(source + " holds " + name + ", which the network does not have");
  torch::NoGradGuard no_grad;
  for (auto& [name, target] : targets) target.copy_(given.at(name));
}

}  // namespace pix2pix::interop
