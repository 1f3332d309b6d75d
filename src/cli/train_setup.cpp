#include "pix2pix/cli/train_setup.hpp"

#include <cstdio>
#include <filesystem>
#include <map>

#include "pix2pix/cli/options.hpp"
#include "pix2pix/cli/rank_agreement.hpp"
#include "pix2pix/cli/thread_options.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/dist/cuda_device.hpp"
#include "pix2pix/dist/device.hpp"
#include "pix2pix/dist/recording_communicator.hpp"
#include "pix2pix/metrics/run_claim.hpp"
#include "pix2pix/metrics/run_directory.hpp"
#include "pix2pix/train/trainer.hpp"

namespace pix2pix::cli {
namespace {

// "rank 0  host node1  local rank 0  device cpu  threads 1" for every rank, and for a GPU rank the GPU it
// holds as that rank's CUDA runtime names it ("device cuda:0 NVIDIA H100 80GB HBM3 (79.1 GiB,
// sm_90)"). A collective: every rank calls it. Local ranks follow the host order of
// MPI_Comm_split_type (keyed by world rank), so they can be derived from the host list.
std::vector<std::string> rank_table(const dist::MpiSession& mpi, const torch::Device& device, int threads) {
  const std::string mine =
      (device.is_cuda() ? device.str() + " " + dist::cuda_device_description(device.index()) : device.str()) +
      "  threads " + std::to_string(threads);
  const std::vector<std::string> devices = mpi.allgather(mine);
  std::vector<std::string> lines;
  std::map<std::string, int> seen;
  for (int r = 0; r < mpi.world(); ++r) {
    const std::string& host = mpi.hosts()[static_cast<size_t>(r)];
    const int local = seen[host]++;
    lines.push_back("rank " + std::to_string(r) + "  host " + host + "  local rank " + std::to_string(local) +
                    "  device " + devices[static_cast<size_t>(r)]);
  }
  return lines;
}

// Rank 0 locks --run-dir for the job (See Note [one job per run directory]) before anything is
// written there; a new run (no --resume) then takes it only when it is empty or --overwrite says
// so; `inputs` (what the run reads) may not lie in it. The folder is shared: rank 0 looks, every
// rank learns its verdict.
void take_run_directory(const std::vector<std::string>& inputs, TrainJob& job, int rank) {
  std::string verdict;  // "": fine; else '1' or '2' (the exit status it asks for) and the message
  if (rank == 0) {
    try {
      job.run_lock = std::make_unique<metrics::RunLock>(job.options.run_dir);
      if (!job.options.resume.empty()) metrics::refuse_inputs_in_run_dir(job.options.run_dir, inputs);
      if (!job.options.resume.empty()) metrics::refuse_linked_folders(job.options.run_dir);
      const auto claim = job.options.resume.empty()
                             ? metrics::claim_for_new_run(job.options.run_dir, job.options.overwrite, inputs)
                             : metrics::RunDirectoryClaim{};
      if (!claim.removed.empty()) {
        std::string removed;
        for (const auto& entry : claim.removed) removed += " " + entry;
        std::printf("--overwrite: deleted the previous run in %s:%s\n", job.options.run_dir.c_str(), removed.c_str());
      }
    } catch (const UsageError& e) {
      verdict = std::string("2") + e.what();
    } catch (const Error& e) {
      verdict = std::string("1") + e.what();
    }
  }
  verdict = job.comm->broadcast_string(verdict, 0);
  if (verdict.empty()) return;
  if (verdict[0] == '2') throw UsageError(verdict.substr(1));
  throw Error(verdict.substr(1));
}

}  // namespace

void end_job_on_error(const char* command, const std::exception& error) {
  const bool usage = dynamic_cast<const UsageError*>(&error) != nullptr;
  dist::MpiSession::abort_job(
      "pix2pix " + std::string(command) + ": " + (usage ? "" : "error: ") + rank_prefix() + error_message(error),
      usage ? 2 : 1);
}

int run_training_job(const char* command, const dist::MpiSession& mpi, const std::string& after_interrupt,
                     const std::function<int()>& job) {
  try {
    return job();
  } catch (const Interrupted& e) {
    const std::string message = "pix2pix " + std::string(command) + ": " + rank_prefix() + e.what() + after_interrupt;
    if (mpi.world() > 1) dist::MpiSession::abort_job(message, train::kExitInterrupted);
    std::fprintf(stderr, "%s\n", message.c_str());
    return train::kExitInterrupted;
  } catch (const std::exception& e) {
    // An error that only some ranks see must not leave the others waiting in a collective.
    if (mpi.world() > 1) end_job_on_error(command, e);
    throw;
  }
}

TrainJob make_train_job(const TrainCommandLine& command_line, const po::variables_map& vm, const dist::MpiSession& mpi,
                        const std::string& run_dir) {
  TrainJob job;
  job.options = command_line.resolve(vm, mpi.world());
  if (const train::TestFaults faults = command_line.faults(mpi.world()); faults.any())
    job.faults = std::make_shared<train::TestFaults>(faults);
  // Before the first collective: See Note [ranks that agree]. The run directory is rank 0's anyway
  // (its default name holds rank 0's clock); progress is drawn by rank 0 alone.
  AgreedFields agreed = options_to_agree(vm, command_line.options());
  // What the run reads; --resume's checkpoint is not among them: a run continues there.
  std::vector<std::string> inputs;
  for (const auto& [option, path] : input_files(vm, command_line.options())) {
    add_file(agreed, option, path);
    inputs.push_back(path);
  }
  if (!config_file(vm).empty()) inputs.push_back(config_file(vm));
  if (!job.options.resume.empty() && job.options.resume != "auto") add_file(agreed, "--resume", job.options.resume);
  require_agreement(mpi, agreed);
  const ThreadBudget threads = settle_threads(command_line.threads(), &mpi);
  job.options.threads = threads.describe();
  if (!run_dir.empty()) job.options.run_dir = run_dir;
  job.device = dist::choose_device(command_line.device(), mpi.local_rank(), mpi.local_size());
  job.kernels = dist::apply_convolution_settings(command_line.compute().convolution, job.device);
  job.comm = communicator_from(command_line.compute(), job.device, mpi);
  job.options.ranks_per_node = mpi.local_size();
  // One run directory for the job: rank 0's (its default name holds rank 0's clock).
  job.options.run_dir = job.comm->broadcast_string(job.options.run_dir, 0);
  take_run_directory(inputs, job, mpi.rank());
  if (command_line.collective_log()) {
    const auto log = std::filesystem::path(job.options.run_dir) / "logs" /
                     ("rank-" + std::to_string(mpi.rank()) + ".collectives.tsv");
    job.comm = std::make_unique<dist::RecordingCommunicator>(std::move(job.comm), log.string());
  }
  job.options.rank_table = rank_table(mpi, job.device, threads.intra_op);
  // The start-up table says when ranks share GPUs (prepare_shared_gpus is idempotent).
  if (job.device.is_cuda())
    if (const std::string sharing = dist::prepare_shared_gpus(mpi.rank(), mpi.local_size()); !sharing.empty())
      job.options.rank_table.push_back(sharing);
  if (!job.kernels.empty()) job.options.rank_table.push_back(job.kernels);
  return job;
}

}  // namespace pix2pix::cli
