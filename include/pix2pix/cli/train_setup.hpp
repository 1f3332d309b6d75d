// What `pix2pix train` and `pix2pix bench --what train` share: the training options, their
// translation into TrainOptions, and the job set-up on every rank (device, communicator, run
// directory, optional collective log).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "pix2pix/cli/compute_options.hpp"
#include "pix2pix/cli/feature_options.hpp"
#include "pix2pix/cli/model_options.hpp"
#include "pix2pix/cli/option_group.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/dist/mpi_session.hpp"
#include "pix2pix/metrics/run_lock.hpp"
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

struct TrainJob {
  train::TrainOptions options;
  std::shared_ptr<const train::FaultHook>
      faults;                                  // --test-*: none unless a test asks (See Note [test fault injection])
  std::unique_ptr<metrics::RunLock> run_lock;  // rank 0: --run-dir is this job's while it lives
  torch::Device device{torch::kCPU};
  std::unique_ptr<dist::Communicator> comm;
  std::string kernels;  // what dist::apply_convolution_settings said ("": nothing to say)
};

// Under a launcher with several ranks: an error that only some ranks see must not leave the
// others waiting in a collective, so this rank ends the whole job with the status the error asks
// for (2 for a UsageError, else 1) and the message on stderr.
[[noreturn]] void end_job_on_error(const char* command, const std::exception& error);

// Runs a training command's `job` on every rank and returns its exit status. A stop by signal
// before the job's own handling (Interrupted from set-up) is exit 75 with `after_interrupt`
// saying what that left; any other error under a launcher ends the whole job (end_job_on_error),
// in a single process it propagates to main.
int run_training_job(const char* command, const dist::MpiSession& mpi, const std::string& after_interrupt,
                     const std::function<int()>& job);

// On every rank: chooses the device and the communicator, agrees on rank 0's run directory
// (`run_dir`, when not empty, replaces --run-dir), which rank 0 locks for the job's life
// (See Note [one job per run directory]) and, for a new run, claims (metrics/run_claim.hpp), and
// wraps the communicator in the collective log when asked.
TrainJob make_train_job(const TrainCommandLine& command_line, const po::variables_map& vm, const dist::MpiSession& mpi,
                        const std::string& run_dir = "");

}  // namespace pix2pix::cli
