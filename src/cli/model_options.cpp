#include "pix2pix/cli/model_options.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "pix2pix/common/error.hpp"

namespace pix2pix::cli {
namespace {

// "auto": the model's default (See Note [the model registry]).
std::string chosen(const std::string& value, const std::string& model_default) {
  return value != "auto" ? value : model_default;
}

// --netG in the reference's names; --num-downs may only agree with a named U-Net's depth.
void apply_net_g(const std::string& name, train::TrainOptions& o) {
  const std::map<std::string, std::pair<nets::GeneratorArch, std::int64_t>> known = {
      {"unet", {nets::GeneratorArch::unet, 0}},
      {"unet_128", {nets::GeneratorArch::unet, 7}},
      {"unet_256", {nets::GeneratorArch::unet, 8}},
      {"resnet_6blocks", {nets::GeneratorArch::resnet, 6}},
      {"resnet_9blocks", {nets::GeneratorArch::resnet, 9}}};
  const auto it = known.find(name);
  if (it == known.end())
    throw UsageError("--netG " + name + ": not unet, unet_128, unet_256, resnet_6blocks or resnet_9blocks");
  const auto [arch, size] = it->second;
  o.net_g = arch;
  if (arch == nets::GeneratorArch::resnet) {
    if (o.num_downs != 0) throw UsageError("--num-downs is the depth of a U-Net; --netG " + name + " has none");
    o.n_blocks = size;
  } else if (size != 0) {
    if (o.num_downs != 0 && o.num_downs != size)
      throw UsageError("--netG " + name + " is a U-Net of depth " + std::to_string(size) + ", --num-downs says " +
                       std::to_string(o.num_downs));
    o.num_downs = size;
  }
}

}  // namespace

std::string model_help() {
  std::string text;
  for (const auto& m : gan::registered_models()) text += (text.empty() ? "" : " | ") + m.name + " (" + m.help + ")";
  return text;
}

std::string model_option_help(const std::string& option, const std::string& help) {
  return gan::models_taking(option) + ": " + help;
}

void add_model_parameters(OptionGroup& options, ModelChoice& choice) {
  for (const gan::ModelParameter& p : gan::model_parameters()) {
    const std::string help = model_option_help(p.name, p.help);
    if (p.integer) {
      choice.counts[p.name] = static_cast<std::int64_t>(p.default_value);
      const long long high =
          std::isinf(p.high) ? std::numeric_limits<long long>::max() : static_cast<long long>(p.high);
      options.count(p.name, choice.counts[p.name], static_cast<long long>(p.low), high, help);
    } else {
      choice.reals[p.name] = p.default_value;
      options.real(p.name, choice.reals[p.name], Range::closed(p.low, p.high), help);
    }
  }
}

const gan::ModelEntry& apply_model_options(const ModelChoice& choice, const std::vector<std::string>& set,
                                           train::TrainOptions& o) {
  const gan::ModelEntry& model = gan::model_entry(choice.model);
  o.model = model.name;
  apply_net_g(chosen(choice.net_g, model.net_g), o);
  o.norm = nets::parse_norm(chosen(choice.norm, nets::to_string(model.norm)));
  o.dropout = choice.dropout && model.dropout;
  o.gan_mode = gan::parse_gan_mode(chosen(choice.gan_mode, gan::to_string(model.gan_mode)));
  o.model_parameters.clear();
  for (const gan::ModelParameter& p : model.parameters)  // their ranges checked as they were parsed
    o.model_parameters[p.name] = p.integer ? static_cast<double>(choice.counts.at(p.name)) : choice.reals.at(p.name);
  // Another model's option would do nothing: refused, not ignored.
  const std::vector<std::string> model_options = gan::model_options();
  for (const std::string& option : set)
    if (std::find(model_options.begin(), model_options.end(), option) != model_options.end() && !model.takes(option))
      model.refuse(option);
  return model;
}

std::map<std::string, std::string> resolved_model_options(const ModelChoice& choice, const gan::ModelEntry& model) {
  return {{"netG", chosen(choice.net_g, model.net_g)},
          {"norm", chosen(choice.norm, nets::to_string(model.norm))},
          {"gan-mode", chosen(choice.gan_mode, gan::to_string(model.gan_mode))}};
}

}  // namespace pix2pix::cli
