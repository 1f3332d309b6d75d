#include "pix2pix/gan/model_registry.hpp"

#include <algorithm>

#include "pix2pix/common/error.hpp"
#include "pix2pix/gan/cyclegan_model.hpp"
#include "pix2pix/gan/onesided_model.hpp"
#include "pix2pix/gan/pix2pix_model.hpp"

namespace pix2pix::gan {
namespace {

// Note [the model registry]
// A model is one row here and one file pair of its own (its GanModel). The command line asks
// the row for --model's help, the defaults of the options left at "auto" and the options the
// model refuses; the run loop asks it whether the model learns from pairs, what scores an
// unpaired val split and how the model is built; bench and the report print its name. Nothing
// else spells a model's name, so adding a model touches no file of the run loop, the command
// line or the checkpoint reader (docs/architecture.md, "Adding a model"). Checkpoints name no
// model: their entries are the networks' own (GanModel::networks()), and an unpaired model's
// shape says "model=NAME", which the resumed run compares as text.
std::vector<ModelEntry> shipped_models() {
  ModelEntry pix2pix;
  pix2pix.name = "pix2pix";
  pix2pix.help = "paired: G and D on (A, B) pairs";
  pix2pix.learns_from_pairs = true;
  pix2pix.own_options = {"lambda-l1", "aux-classifier", "lambda-aux", "init-generator", "init-discriminator"};
  pix2pix.make = [](const ModelOptions& options, const ModelInputs& inputs, const torch::Device& device,
                    dist::Communicator& comm, RecognitionLoss* recognition) -> std::unique_ptr<GanModel> {
    return std::make_unique<Pix2PixModel>(options, inputs, device, comm, recognition);
  };

  // The reference CycleGAN's defaults: ResNet generators, instance norm, LSGAN, no dropout.
  ModelEntry cyclegan;
  cyclegan.name = "cyclegan";
  cyclegan.help = "two generators and two discriminators, cycle and identity losses; A and B as two domains";
  cyclegan.content = ContentScore::cycle;
  cyclegan.net_g = "resnet_9blocks";
  cyclegan.norm = nets::Norm::instance;
  cyclegan.gan_mode = GanMode::lsgan;
  cyclegan.dropout = false;
  cyclegan.own_options = {"lambda-A", "lambda-B", "lambda-identity", "pool-size"};
  cyclegan.make = [](const ModelOptions& options, const ModelInputs& inputs, const torch::Device& device,
                     dist::Communicator& comm, RecognitionLoss*) -> std::unique_ptr<GanModel> {
    return std::make_unique<CycleGanModel>(options, inputs, device, comm);
  };

  ModelEntry onesided = cyclegan;
  onesided.name = "onesided";
  onesided.help = "one generator and one discriminator, a deviation loss |G(B) - B| instead of the cycle";
  onesided.content = ContentScore::deviation;
  onesided.own_options = {"lambda-deviation", "pool-size"};
  onesided.make = [](const ModelOptions& options, const ModelInputs& inputs, const torch::Device& device,
                     dist::Communicator& comm, RecognitionLoss*) -> std::unique_ptr<GanModel> {
    return std::make_unique<OneSidedModel>(options, inputs, device, comm);
  };
  return {pix2pix, cyclegan, onesided};
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
  return std::find(own_options.begin(), own_options.end(), option) != own_options.end();
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
  for (const auto& existing : table())
    if (existing.name == entry.name) throw Error("register_model: the name " + entry.name + " is taken");
  table().push_back(std::move(entry));
}

std::string model_names(const std::string& separator) {
  std::string text;
  for (const auto& entry : table()) text += (text.empty() ? "" : separator) + entry.name;
  return text;
}

std::vector<std::string> model_options() {
  std::vector<std::string> options;
  for (const auto& entry : table())
    for (const auto& option : entry.own_options)
      if (std::find(options.begin(), options.end(), option) == options.end()) options.push_back(option);
  return options;
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

std::string to_string(ContentScore score) {
  switch (score) {
    case ContentScore::cycle:
      return "cycle";
    case ContentScore::deviation:
      return "deviation";
    default:
      return "";
  }
}

std::unique_ptr<GanModel> make_gan_model(const ModelOptions& options, const ModelInputs& inputs,
                                         const torch::Device& device, dist::Communicator& comm,
                                         RecognitionLoss* recognition) {
  const ModelEntry& entry = model_entry(options.model);
  // The command line refuses these; library callers get the same answer.
  if (recognition && !entry.takes("aux-classifier")) entry.refuse("aux-classifier");
  if (!options.init_generator.empty() && !entry.takes("init-generator")) entry.refuse("init-generator");
  if (!options.init_discriminator.empty() && !entry.takes("init-discriminator")) entry.refuse("init-discriminator");
  return entry.make(options, inputs, device, comm, recognition);
}

}  // namespace pix2pix::gan
