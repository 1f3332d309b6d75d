// The training options of `pix2pix train` and `pix2pix bench --what train`, and their translation
// into TrainOptions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "pix2pix/cli/compute_options.hpp"
#include "pix2pix/cli/feature_options.hpp"
#include "pix2pix/cli/model_options.hpp"
#include "pix2pix/cli/option_group.hpp"
#include "pix2pix/train/test_faults.hpp"
#include "pix2pix/train/train_options.hpp"

namespace pix2pix::cli {

// The training options, declared once and bound to where their values go
// (See Note [an option is declared once]): parse_command(spec, options(), ..., &hidden()) fills
// them, resolve() decides what options decide together. Bound to its own members, so neither
// copied nor moved.
class TrainCommandLine {
 public:
  TrainCommandLine();
  TrainCommandLine(const TrainCommandLine&) = delete;
  TrainCommandLine& operator=(const TrainCommandLine&) = delete;

  const po::options_description& options() const { return options_; }  // what --help lists
  const po::options_description& hidden() const { return hidden_; }    // --test-*: fault injection for tests

  // After parsing: the options for a job of `world` ranks, checked against each other (UsageError).
  train::TrainOptions resolve(const po::variables_map& vm, int world) const;
  train::TestFaults faults(int world) const;  // UsageError for a bad --test-*

  const ComputeChoices& compute() const { return compute_; }
  long threads() const { return threads_; }
  const std::string& device() const { return device_; }
  bool collective_log() const { return collective_log_; }

 private:
  OptionGroup run_options();
  OptionGroup network_options();
  OptionGroup optimisation_options();
  OptionGroup validation_options();

  train::TrainOptions given_;  // the options bound to a field of their own
  ModelChoice model_;
  FeatureCommandLine val_features_{"val-"};
  ComputeChoices compute_;
  train::TestFaults faults_;
  // Options decided with others in resolve().
  std::int64_t global_batch_ = 0;
  std::optional<std::int64_t> test_rank_;
  std::optional<double> lambda_aux_;
  std::string val_metrics_ = "auto";
  double bucket_mb_ = 25.0;
  std::string device_ = "auto";
  bool collective_log_ = false;
  long threads_ = 0;
  po::options_description options_, hidden_;
};

}  // namespace pix2pix::cli
