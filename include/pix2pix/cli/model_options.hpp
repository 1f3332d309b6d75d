// What --model decides of the training options: its help, the "auto" defaults of --netG, --norm
// and --gan-mode, dropout, and the refusal of other models' options, all from the registry
// (See Note [the model registry]).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pix2pix/cli/option_group.hpp"
#include "pix2pix/gan/model_registry.hpp"
#include "pix2pix/train/train_options.hpp"

namespace pix2pix::cli {

// The model's options as given, before the model is known ("auto": the model's default).
struct ModelChoice {
  std::string model = gan::default_model().name;
  std::string net_g = "auto", norm = "auto", gan_mode = "auto";
  bool dropout = true;  // false: --no-dropout
  // Every model's parameters by name (gan::model_parameters()): the counts and the real numbers.
  std::map<std::string, std::int64_t> counts;
  std::map<std::string, double> reals;
};

// --model's help: every model's name and what it is.
std::string model_help();
// The help of an option only some models take, after their names ("cyclegan: ...").
std::string model_option_help(const std::string& option, const std::string& help);
// Every model's parameters as options bound to `choice` (gan::model_parameters(): each once, with
// its default, range and help; a count as an integer option).
void add_model_parameters(OptionGroup& options, ModelChoice& choice);

// --model, --netG, --norm, --no-dropout, --gan-mode and the model's parameters into `o`
// (o.num_downs set first: --netG checks it). UsageError for a bad value, and for another model's
// option among `set` (cli::options_set: those given a value other than their default). Returns the
// model's entry.
const gan::ModelEntry& apply_model_options(const ModelChoice& choice, const std::vector<std::string>& set,
                                           train::TrainOptions& o);
// What --netG, --norm and --gan-mode resolved to, by option name, for config.cfg (a resume
// compares values, not "auto").
std::map<std::string, std::string> resolved_model_options(const ModelChoice& choice, const gan::ModelEntry& model);

}  // namespace pix2pix::cli
