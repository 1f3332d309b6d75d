#include "pix2pix/gan/model_registry.hpp"

#include <algorithm>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/option_range.hpp"
#include "pix2pix/gan/cyclegan_model.hpp"
#include "pix2pix/gan/onesided_model.hpp"
#include "pix2pix/gan/pix2pix_model.hpp"

namespace pix2pix::gan {
namespace {

// Note [the model registry]
// A model is one row here and the files of its own (its GanModel, and the function that scores
// its validation when it has one). The row holds what code outside those files needs: the command
// line declares the row's parameters as options (their defaults, ranges and help; the model reads
// them by name), takes --model's help and the defaults of the options left at "auto" from it, and
// refuses another model's options; the run loop asks it whether the model learns from pairs and
// how it is built, and calls its content score (content_score.hpp) without knowing what it
// measures; bench and the report print its name. Nothing else spells a model's name or its
// options, so adding a model with options and a score of its own touches no file of the run loop,
// the command line or the checkpoint reader (docs/architecture.md, "Adding a model";
// tests/gan/model_registry_test.cpp adds one). Checkpoints name no model: their entries are the
// networks' own (GanModel::networks()), and an unpaired model's shape says "model=NAME", which the
// resumed run compares as text.
std::vector<ModelEntry> shipped_models() {
  ModelEntry pix2pix;
  pix2pix.name = "pix2pix";
  pix2pix.help = "paired: G and D on (A, B) pairs";
  pix2pix.learns_from_pairs = true;
  pix2pix.parameters = {{"lambda-l1", 100.0, "weight of the L1 term"}};
  pix2pix.own_options = {"aux-classifier", "lambda-aux", "init-generator", "init-discriminator"};
  pix2pix.make = [](const ModelOptions& options, const ModelInputs& inputs, const torch::Device& device,
                    dist::Communicator& comm, RecognitionLoss* recognition) -> std::unique_ptr<GanModel> {
    return std::make_unique<Pix2PixModel>(options, inputs, device, comm, recognition);
  };

  // The reference CycleGAN's defaults: ResNet generators, instance norm, LSGAN, no dropout.
  ModelEntry cyclegan;
  cyclegan.name = "cyclegan";
  cyclegan.help = "two generators and two discriminators, cycle and identity losses; A and B as two domains";
  cyclegan.content = cycle_score();
  cyclegan.net_g = "resnet_9blocks";
  cyclegan.norm = nets::Norm::instance;
  cyclegan.gan_mode = GanMode::lsgan;
  cyclegan.dropout = false;
  const ModelParameter pool_size = {
      "pool-size", 50, "generated images each discriminator's pool keeps, per rank (0: no pool)", true, 0, 100000};
  cyclegan.parameters = {
      {"lambda-A", 10.0, "weight of the cycle loss A -> B -> A"},
      {"lambda-B", 10.0, "weight of the cycle loss B -> A -> B"},
      {"lambda-identity", 0.5,
       "identity loss |G_A(B) - B| and |G_B(A) - A| at this share of --lambda-B / --lambda-A (0: off)"},
      pool_size};
  cyclegan.make = [](const ModelOptions& options, const ModelInputs& inputs, const torch::Device& device,
                     dist::Communicator& comm, RecognitionLoss*) -> std::unique_ptr<GanModel> {
    return std::make_unique<CycleGanModel>(options, inputs, device, comm);
  };

  ModelEntry onesided = cyclegan;
  onesided.name = "onesided";
  onesided.help = "one generator and one discriminator, a deviation loss |G(B) - B| instead of the cycle";
  onesided.content = deviation_score();
  onesided.parameters = {
      {"lambda-deviation", 10.0, "weight of the deviation loss |G(B) - B| (G leaves B images as they are)"}, pool_size};
  onesided.make = [](const ModelOptions& options, const ModelInputs& inputs, const torch::Device& device,
                     dist::Communicator& comm, RecognitionLoss*) -> std::unique_ptr<GanModel> {
    return std::make_unique<OneSidedModel>(options, inputs, device, comm);
  };
  return {pix2pix, cyclegan, onesided};
}

const ModelParameter* find_parameter(const ModelEntry& entry, const std::string& name) {
  for (const auto& p : entry.parameters)
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<ModelEntry>& table() {
  static std::vector<ModelEntry> models = shipped_models();
  return models;
}

// "a", "a and b", "a, b and c".
std::string listed(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) text += i + 1 == names.size() ? " and " : ", ";
    text += names[i];
  }
  return text;
}

}  // namespace

bool ModelEntry::takes(const std::string& option) const {
  return std::find(own_options.begin(), own_options.end(), option) != own_options.end() ||
         find_parameter(*this, option) != nullptr;
}

void ModelEntry::refuse(const std::string& option) const {
  throw UsageError("--" + option + " is an option of " + models_taking(option) + "; --model " + name +
                   " does not take it");
}

const std::vector<ModelEntry>& registered_models() {
  return table();
}

const ModelEntry& default_model() {
  return table().front();
}

const ModelEntry& model_entry(const std::string& name) {
  for (const auto& entry : table())
    if (entry.name == name) return entry;
  throw UsageError("--model must be one of " + model_names(", ") + ", not '" + name + "'");
}

void register_model(ModelEntry entry) {
  if (entry.name.empty() || !entry.make) throw Error("register_model: a model needs a name and a factory");
  for (const auto& existing : table()) {
    if (existing.name == entry.name) throw Error("register_model: the name " + entry.name + " is taken");
    for (const auto& p : entry.parameters)
      if (const ModelParameter* q = find_parameter(existing, p.name);
          q != nullptr &&
          (q->default_value != p.default_value || q->integer != p.integer || q->low != p.low || q->high != p.high))
        throw Error("register_model: --" + p.name + " of " + entry.name + " differs from that of " + existing.name +
                    " in its default, kind or range; they are one option");
  }
  table().push_back(std::move(entry));
}

std::string model_names(const std::string& separator) {
  std::string text;
  for (const auto& entry : table()) text += (text.empty() ? "" : separator) + entry.name;
  return text;
}

std::vector<std::string> model_options() {
  std::vector<std::string> options;
  const auto add = [&options](const std::string& option) {
    if (std::find(options.begin(), options.end(), option) == options.end()) options.push_back(option);
  };
  for (const auto& entry : table()) {
    for (const auto& p : entry.parameters) add(p.name);
    for (const auto& option : entry.own_options) add(option);
  }
  return options;
}

std::vector<ModelParameter> model_parameters() {
  std::vector<ModelParameter> parameters;
  for (const auto& entry : table())
    for (const auto& p : entry.parameters)
      if (std::none_of(parameters.begin(), parameters.end(), [&p](const auto& q) { return q.name == p.name; }))
        parameters.push_back(p);
  return parameters;
}

void check_parameter(const ModelParameter& parameter, double value) {
  check_option_value(
      parameter.name, value,
      parameter.integer ? Range::counts(parameter.low, parameter.high) : Range::closed(parameter.low, parameter.high));
}

double parameter(const ModelOptions& options, const std::string& name) {
  const auto it = options.parameters.find(name);
  if (it == options.parameters.end())
    throw Error("the model's option --" + name + " is not set (gan::make_gan_model sets every one)");
  return it->second;
}

std::string models_taking(const std::string& option) {
  std::vector<std::string> names;
  for (const auto& entry : table())
    if (entry.takes(option)) names.push_back(entry.name);
  return listed(names);
}

std::string per_model(const std::function<std::string(const ModelEntry&)>& value_of) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // value, the models that have it
  for (const auto& entry : table()) {
    const std::string value = value_of(entry);
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == value; });
    if (it == groups.end()) it = groups.insert(groups.end(), {value, {}});
    it->second.push_back(entry.name);
  }
  std::string text;
  for (const auto& [value, names] : groups) text += (text.empty() ? "" : ", ") + value + " for " + listed(names);
  return text;
}

std::unique_ptr<GanModel> make_gan_model(const ModelOptions& options, const ModelInputs& inputs,
                                         const torch::Device& device, dist::Communicator& comm,
                                         RecognitionLoss* recognition) {
  const ModelEntry& entry = model_entry(options.model);
  // The command line refuses these; library callers get the same answer.
  if (recognition && !entry.takes("aux-classifier")) entry.refuse("aux-classifier");
  if (!options.init_generator.empty() && !entry.takes("init-generator")) entry.refuse("init-generator");
  if (!options.init_discriminator.empty() && !entry.takes("init-discriminator")) entry.refuse("init-discriminator");
  ModelOptions completed = options;
  for (const auto& [name, value] : options.parameters) {
    const ModelParameter* p = find_parameter(entry, name);
    if (p == nullptr) entry.refuse(name);
    check_parameter(*p, value);
  }
  for (const auto& p : entry.parameters) completed.parameters.emplace(p.name, p.default_value);
  return entry.make(completed, inputs, device, comm, recognition);
}

}  // namespace pix2pix::gan
