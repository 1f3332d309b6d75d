#include "pix2pix/cli/model_options.hpp"

#include <cstdint>
#include <utility>

#include "pix2pix/cli/train_setup.hpp"
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

namespace {

// Whether `option` was set, on the command line or in --config, to another value than its
// default: a run's config.cfg lists every option at its value, every model's too.
bool given(const po::variables_map& vm, const std::string& option) {
  if (!vm.count(option) || vm[option].defaulted()) return false;
  static const po::options_description all = train_option_descriptions();
  boost::any fallback;
  if (!all.find(option, false).semantic()->apply_default(fallback)) return true;  // no default: given
  const boost::any& value = vm[option].value();
  if (value.type() == typeid(double)) return boost::any_cast<double>(value) != boost::any_cast<double>(fallback);
  if (value.type() == typeid(long)) return boost::any_cast<long>(value) != boost::any_cast<long>(fallback);
  if (value.type() == typeid(std::string))
    return boost::any_cast<std::string>(value) != boost::any_cast<std::string>(fallback);
  return true;
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
  o.lambda_l1 = real_option(vm, "lambda-l1", Range::at_least(0));
  o.lambda_a = real_option(vm, "lambda-A", Range::at_least(0));
  o.lambda_b = real_option(vm, "lambda-B", Range::at_least(0));
  o.lambda_identity = real_option(vm, "lambda-identity", Range::at_least(0));
  o.pool_size = integer_option(vm, "pool-size", 0, 100000);
  o.lambda_deviation = real_option(vm, "lambda-deviation", Range::at_least(0));
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
