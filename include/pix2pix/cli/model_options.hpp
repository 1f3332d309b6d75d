// What --model decides of the training options: its help, the "auto" defaults of --netG, --norm
// and --gan-mode, dropout, and the refusal of other models' options, all from the registry
// (See Note [the model registry]).
#pragma once

#include <map>
#include <string>

#include "pix2pix/cli/options.hpp"
#include "pix2pix/gan/model_registry.hpp"
#include "pix2pix/train/train_options.hpp"

namespace pix2pix::cli {

// --model's help: every model's name and what it is.
std::string model_help();
// The help of an option only some models take, after their names ("cyclegan: ...").
std::string model_option_help(const std::string& option, const std::string& help);
// Every model's parameters as options (gan::model_parameters(): each once, with its default and
// help; a count as an integer option).
void add_model_parameters(po::options_description& options);

// --model, --netG, --norm, --no-dropout, --gan-mode and the model's own options and parameters into `o`
// (o.num_downs read first: --netG checks it). UsageError for another model's option given, and
// for a bad value. Returns the model's entry.
const gan::ModelEntry& apply_model_options(const po::variables_map& vm, train::TrainOptions& o);
// What --netG, --norm and --gan-mode resolved to, by option name, for config.cfg (a resume
// compares values, not "auto").
std::map<std::string, std::string> resolved_model_options(const po::variables_map& vm, const gan::ModelEntry& model);

}  // namespace pix2pix::cli
