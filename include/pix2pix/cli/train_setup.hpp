// What `pix2pix train` and `pix2pix bench --what train` share beside their options
// (train_command_line.hpp): the job set-up on every rank (device, communicator, run directory,
// optional collective log) and the end of a job on an error.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>

#include "pix2pix/cli/train_command_line.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/dist/mpi_session.hpp"
#include "pix2pix/metrics/run_lock.hpp"
#include "pix2pix/train/test_faults.hpp"
#include "pix2pix/train/train_options.hpp"

namespace pix2pix::cli {

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
