// `pix2pix bench --what train`: a fixed number of training steps on every rank of the job (after
// a warm-up), timed between two barriers: the global images/s of one point of a scaling study
// (slurm/scaling-study.sh). Takes every `pix2pix train` option; writes no run directory.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/train_setup.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/train/trainer.hpp"

namespace pix2pix::cli {
namespace {

// The next batch, wrapping into the next epoch when one ends (short epochs on small data).
data::Batch next_batch(data::BatchLoader& loader, std::int64_t& epoch) {
  auto batch = loader.next();
  if (!batch) {
    loader.start_epoch(++epoch);
    batch = loader.next();
  }
  return std::move(*batch);
}

void append_csv(const std::string& path, const std::string& header, const std::string& row) {
  const bool fresh = !std::filesystem::exists(path) || std::filesystem::file_size(path) == 0;
  std::ofstream out(path, std::ios::app);
  if (fresh) out << header << "\n";
  out << row << "\n";
  if (!out) throw Error("--csv: cannot write " + path);
}

}  // namespace

int run_bench_train(int argc, char** argv) {
  const CommandSpec spec{"bench", "pix2pix bench --what train --data FILE [train options] [--steps N] [--csv FILE]",
                         "Times --steps training steps (after --warmup steps) on every rank of the job, between\n"
                         "two barriers, and prints the global images/s, ms per step and the share of the step\n"
                         "spent averaging gradients. Run it under mpirun/srun like `pix2pix train`; with --csv,\n"
                         "rank 0 appends one row (slurm/scaling-study.sh collects them)."};
  po::options_description bench("Benchmark");
  bench.add_options()("what", po::value<std::string>()->default_value("train"), "train")(
      "steps", po::value<long>()->default_value(50), "timed steps")("warmup", po::value<long>()->default_value(5),
                                                                    "untimed steps first (allocations, autotuning)")(
      "csv", po::value<std::string>()->value_name("FILE"), "append the result as a CSV row");
  po::options_description all;
  all.add(bench).add(train_option_descriptions());
  const po::options_description hidden = train_hidden_options();
  const auto parsed = parse_command(spec, all, po::positional_options_description(), argc, argv, &hidden);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const long steps = integer_option(vm, "steps", 1), warmup = integer_option(vm, "warmup", 0);
  if (vm.count("csv") && vm.count("data"))
    refuse_output_among_inputs("--csv", vm["csv"].as<std::string>(), {vm["data"].as<std::string>()});

  dist::MpiSession mpi(&argc, &argv);
  // A throw-away run directory (the trainer writes its config there); rank 0's name for all.
  const auto scratch = std::filesystem::temp_directory_path() / ("pix2pix-bench-" + std::to_string(::getpid()));
  try {
    TrainJob job = make_train_job(vm, mpi, scratch.string());
    train::Trainer trainer(job.options, job.device, *job.comm);
    dist::Communicator& comm = *job.comm;
    data::BatchLoader& loader = trainer.loader();
    std::int64_t epoch = 0;
    loader.start_epoch(epoch);
    for (long s = 0; s < warmup; ++s) trainer.step(next_batch(loader, epoch));
    comm.barrier();
    const double sync_before = trainer.sync_seconds();
    const auto start = std::chrono::steady_clock::now();
    for (long s = 0; s < steps; ++s) trainer.step(next_batch(loader, epoch));  // losses .item(): device synced
    comm.barrier();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double sync_share = comm.allreduce_mean((trainer.sync_seconds() - sync_before) / seconds);
    if (mpi.rank() == 0) {
      const std::int64_t global_batch = trainer.global_batch();
      const double images_per_s = static_cast<double>(steps * global_batch) / seconds;
      char row[256];
      std::snprintf(row, sizeof(row), "%d,%d,%lld,%lld,%ld,%.4f,%.2f,%.3f,%.4f,%s,%s", mpi.world(), mpi.node_count(),
                    static_cast<long long>(global_batch), static_cast<long long>(global_batch / mpi.world()), steps,
                    seconds, images_per_s, 1000.0 * seconds / static_cast<double>(steps), sync_share,
                    job.device.str().c_str(), train::to_string(job.options.precision).c_str());
      std::printf("# bench train: %d rank(s) on %d node(s), global batch %lld, %ld steps after %ld warm-up\n",
                  mpi.world(), mpi.node_count(), static_cast<long long>(global_batch), steps, warmup);
      std::printf("images/s %.3f  ms/step %.2f  gradient averaging %.1f%% of the time\n", images_per_s,
                  1000.0 * seconds / static_cast<double>(steps), 100.0 * sync_share);
      if (vm.count("csv"))
        append_csv(vm["csv"].as<std::string>(),
                   "gpus,nodes,global_batch,batch_per_rank,steps,seconds,images_per_s,ms_per_step,sync_share,device,"
                   "precision",
                   row);
      std::error_code ec;
      std::filesystem::remove_all(job.options.run_dir, ec);
    }
    return 0;
  } catch (const std::exception& e) {
    if (mpi.world() > 1) end_job_on_error("bench", e);
    throw;
  }
}

}  // namespace pix2pix::cli
