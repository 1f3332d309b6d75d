// The models `--model` names, as one table: the only place where a model's name is spelled.
// See Note [the model registry].
#pragma once

#include <torch/torch.h>

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/gan/content_score.hpp"
#include "pix2pix/gan/losses.hpp"
#include "pix2pix/nets/networks.hpp"

namespace pix2pix::gan {

class GanModel;
class RecognitionLoss;
struct ModelInputs;
struct ModelOptions;

// A number of a model's own that the command line declares as an option (--lambda-l1): the model
// reads it from ModelOptions::parameters by name (parameter()). Models that share a name share
// the option, so they must agree on all but the help.
struct ModelParameter {
  std::string name;  // the option without "--"
  double default_value = 0;
  std::string help;      // what it does, after the names of the models taking it
  bool integer = false;  // a count (--pool-size), else a real number
  double low = 0, high = std::numeric_limits<double>::infinity();  // the values taken, ends included
};

// Builds the model for the run loop. `recognition` (--aux-classifier; null unless the model takes
// that option) must outlive the model.
using ModelFactory = std::function<std::unique_ptr<GanModel>(const ModelOptions& options, const ModelInputs& inputs,
                                                             const torch::Device& device, dist::Communicator& comm,
                                                             RecognitionLoss* recognition)>;

// One model: everything code outside the model's own files needs to know of it.
struct ModelEntry {
  std::string name;  // --model NAME; also "model=NAME" in an unpaired model's shape (nets/model_shape.hpp)
  std::string help;  // its part of --model's help
  // Trains and validates on pairs only (its D judges (A, B) pairs); the others learn from two
  // sets of images, and take pairs as two sets.
  bool learns_from_pairs = false;
  // What validation scores besides G(A) against B: none for a model that learns from pairs only
  // (it has no unpaired val split).
  std::optional<ContentScore> content;
  // What the "auto" of --netG, --norm and --gan-mode resolve to, and whether G has dropout (the
  // reference's default for the model; --no-dropout removes it where there is some).
  std::string net_g = "unet";  // a --netG value
  nets::Norm norm = nets::Norm::batch;
  GanMode gan_mode = GanMode::vanilla;
  bool dropout = true;
  // Its own numbers (the command line declares each once, from the registry).
  std::vector<ModelParameter> parameters;
  // The shared options (without "--") only some models take, that this one takes, besides its
  // parameters. A model refuses another model's option when it is given (cli/model_options.cpp):
  // it would do nothing.
  std::vector<std::string> own_options;
  ModelFactory make;

  bool takes(const std::string& option) const;  // an own option or a parameter
  // Throws the UsageError of another model's `option` given to this one.
  [[noreturn]] void refuse(const std::string& option) const;
};

// Every model, in registration order; the first is --model's default.
const std::vector<ModelEntry>& registered_models();
const ModelEntry& default_model();
// The model named `name`; UsageError naming --model and every name otherwise.
const ModelEntry& model_entry(const std::string& name);
// Adds a model (a test's: the shipped ones are in the table of model_registry.cpp). Error when
// its name is taken, it has no factory, or a parameter of its disagrees with another model's of
// that name.
void register_model(ModelEntry entry);

// "pix2pix | cyclegan | ...", with `separator` between the names.
std::string model_names(const std::string& separator);
// Every model option (some model's own_options or parameters), each once, in registration order.
std::vector<std::string> model_options();
// Every model's parameters, each name once, in registration order.
std::vector<ModelParameter> model_parameters();
// UsageError unless `value` is a value `parameter` takes ("--lambda-l1 must be finite and >= 0, got -1").
void check_parameter(const ModelParameter& parameter, double value);
// The models that take `option`, as "a", "a and b", "a, b and c".
std::string models_taking(const std::string& option);
// "X for a, Y for b and c": what `value_of` says of each model, grouped (for "auto" help texts).
std::string per_model(const std::function<std::string(const ModelEntry&)>& value_of);

// The entry's factory, after the checks every model shares: parameters not set take their
// defaults, other models' parameters and values out of range are refused.
std::unique_ptr<GanModel> make_gan_model(const ModelOptions& options, const ModelInputs& inputs,
                                         const torch::Device& device, dist::Communicator& comm,
                                         RecognitionLoss* recognition);

}  // namespace pix2pix::gan
