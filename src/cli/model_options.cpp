#include "pix2pix/cli/model_options.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

#include "pix2pix/common/error.hpp"

namespace pix2pix::cli {
namespace {

// "auto": the model's default (See Note [the model registry]).
std::string chosen(const po::variables_map& vm, const char* option, const std::string& model_default) {
  const std::string value = vm[option].as<std::string>();
  return value != "auto" ? value : model_default;
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

void add_model_parameters(po::options_description& options) {
  for (const gan::ModelParameter& p : gan::model_parameters()) {
    const std::string help = model_option_help(p.name, p.help);
    if (p.integer)
      options.add_options()(p.name.c_str(), po::value<long>()->default_value(static_cast<long>(p.default_value)),
                            help.c_str());
    else
      options.add_options()(p.name.c_str(), po::value<double>()->default_value(p.default_value), help.c_str());
  }
}

namespace {

// A parameter's value as declared (add_model_parameters).
double parameter_value(const po::variables_map& vm, const gan::ModelParameter& p) {
  return p.integer ? static_cast<double>(vm[p.name].as<long>()) : vm[p.name].as<double>();
}

// Whether another model's `option` was set, on the command line or in --config, to another
// value than its default: a run's config.cfg lists every option at its value, every model's too.
bool given(const po::variables_map& vm, const std::string& option) {
  if (!vm.count(option) || vm[option].defaulted()) return false;
  for (const gan::ModelParameter& p : gan::model_parameters())
    if (p.name == option) return parameter_value(vm, p) != p.default_value;
  return true;  // an own option without a default (--aux-classifier FILE)
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

const gan::ModelEntry& apply_model_options(const po::variables_map& vm, train::TrainOptions& o) {
  const gan::ModelEntry& model = gan::model_entry(vm["model"].as<std::string>());
  o.model = model.name;
  apply_net_g(chosen(vm, "netG", model.net_g), o);
  o.norm = nets::parse_norm(chosen(vm, "norm", nets::to_string(model.norm)));
  o.dropout = !vm["no-dropout"].as<bool>() && model.dropout;
  o.gan_mode = gan::parse_gan_mode(chosen(vm, "gan-mode", gan::to_string(model.gan_mode)));
  o.model_parameters.clear();
  for (const gan::ModelParameter& p : model.parameters) {
    // Read as every option is (the same messages); gan::check_parameter guards library callers.
    const long high = std::isinf(p.high) ? std::numeric_limits<long>::max() : static_cast<long>(p.high);
    o.model_parameters[p.name] =
        p.integer ? static_cast<double>(integer_option(vm, p.name.c_str(), static_cast<long>(p.low), high))
                  : real_option(vm, p.name.c_str(), Range::closed(p.low, p.high));
  }
  // Another model's option would do nothing: refused, not ignored.
  for (const std::string& option : gan::model_options())
    if (!model.takes(option) && given(vm, option)) model.refuse(option);
  if (vm.count("aux-classifier")) o.aux_classifier = vm["aux-classifier"].as<std::string>();
  if (vm.count("lambda-aux")) {
    if (o.aux_classifier.empty())
      throw UsageError("--lambda-aux weighs the --aux-classifier term; give --aux-classifier FILE too");
    o.lambda_aux = real_option(vm, "lambda-aux", Range::at_least(0));
  }
  return model;
}

std::map<std::string, std::string> resolved_model_options(const po::variables_map& vm, const gan::ModelEntry& model) {
  return {{"netG", chosen(vm, "netG", model.net_g)},
          {"norm", chosen(vm, "norm", nets::to_string(model.norm))},
          {"gan-mode", chosen(vm, "gan-mode", gan::to_string(model.gan_mode))}};
}

}  // namespace pix2pix::cli
