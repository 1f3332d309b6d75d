// `pix2pix bench --what train`: a fixed number of training steps on every rank of the job (after
// a warm-up), timed between two barriers: the global images/s of one point of a scaling study
// (slurm/scaling-study.sh). Takes every `pix2pix train` option; writes no run directory.
#include <ATen/record_function.h>
#include <torch/cuda.h>
#include <torch/version.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "pix2pix/cli/bench_trace.hpp"
#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/rank_agreement.hpp"
#include "pix2pix/cli/train_setup.hpp"
#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/heap.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/common/stopwatch.hpp"
#include "pix2pix/dist/fused_activation.hpp"
#include "pix2pix/dist/gradient_sync.hpp"
#include "pix2pix/optim/update_group.hpp"
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

// Note [a bench that checks itself]
// A throughput is only worth its numbers if the steps behind it trained: like nccl-tests, which
// checks every result it times, the bench checks after the timed steps that every rank's losses
// of every timed step were finite and that the replicas still hold the same parameters (the
// checksums of --check-replicas), and otherwise exits 1 naming what failed and writes no row.
// Both checks run after the clock stops.
void verify_bench(dist::Communicator& comm, train::Trainer& trainer, bool finite_here) {
  if (comm.allreduce_max(finite_here ? 0.0 : 1.0) != 0)
    throw Error(
        "bench: a loss of the timed steps was not finite (NaN or infinite) on at least one rank: these "
        "timings are not of training; try a smaller --lr, --precision fp32, or check the data");
  try {
    trainer.verify_replicas();
  } catch (const Error& e) {
    throw Error(std::string("bench: ") + e.what());
  }
}

// "# wire G: 3 buckets, 167.31 MB per step, after backward (1.05 25.17 141.09)", or "overlapped, 3
// of them started during the last backward" in its place: what each update
// group's gradient all-reduce moves per step, bucket by bucket in start order (the input of the
// communication model, scripts/network-model-check.sh), and whether the buckets start during
// backward ("overlapped") or after it. Nothing moves in a world of 1.
void print_wire(train::Trainer& trainer, int world) {
  for (optim::UpdateGroup* group : trainer.model().update_groups()) {
    const dist::GradientSync& sync = group->gradient_sync();
    double total = 0;
    std::string sizes;
    for (std::size_t k = 0; world > 1 && k < sync.bucket_count(); ++k) {
      const double mb = static_cast<double>(sync.bucket_buffer(k).numel()) *
                        static_cast<double>(c10::elementSize(sync.wire_dtype(k))) / 1e6;
      total += mb;
      char text[32];
      std::snprintf(text, sizeof(text), "%s%.2f", sizes.empty() ? "" : " ", mb);
      sizes += text;
    }
    const std::string when = sync.overlaps() ? "overlapped, " + std::to_string(sync.started_during_backward()) +
                                                   " of them started during the last backward"
                                             : "after backward";
    std::printf("# wire %s: %zu buckets, %.2f MB per step, %s (%s)\n", group->label().c_str(),
                world > 1 ? sync.bucket_count() : std::size_t{0}, total, when.c_str(), sizes.c_str());
  }
}

constexpr const char* kCsvHeader =
    "gpus,nodes,global_batch,batch_per_rank,steps,seconds,images_per_s,ms_per_step,sync_share,device,precision,model,"
    "threads_per_rank";

// A --csv file that holds rows under another header (an older bench's columns) is refused before
// the bench runs, rather than given rows its header does not describe.
void refuse_foreign_csv(const std::string& path) {
  if (!std::filesystem::exists(path) || std::filesystem::file_size(path) == 0) return;
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  if (first != kCsvHeader)
    throw UsageError("--csv " + path + ": its header is not this bench's columns (" + kCsvHeader +
                     "); append to a new file");
}

void append_csv(const std::string& path, const std::string& row) {
  try {
    append_to_file(path, row + "\n", std::string(kCsvHeader) + "\n", Links::follow);  // the user's path
  } catch (const Error& e) {
    throw Error(std::string("--csv: ") + e.what());
  }
}

// Rank 0 prints each phase's ms per step: the mean over ranks and the slowest rank's, and its
// share of the step as the mean over ranks of each rank's share of its own timed interval (the
// ranks leave the first barrier at different moments, so rank 0's interval does not bound the
// others' phases).
void print_phases(dist::Communicator& comm, const gan::StepPhases& phases, double data_seconds, double seconds,
                  long steps) {
  std::vector<double> per_step;
  for (const double s : phases.seconds()) per_step.push_back(1e3 * s / static_cast<double>(steps));
  per_step.push_back(1e3 * data_seconds / static_cast<double>(steps));
  auto mean = torch::tensor(per_step, torch::kFloat64), slowest = mean.clone();
  auto share = mean / (1e3 * seconds / static_cast<double>(steps));
  comm.allreduce_mean(mean);
  comm.allreduce_max(slowest);
  comm.allreduce_mean(share);
  if (comm.rank() != 0) return;
  std::printf("# phases, ms per step: mean over ranks, slowest rank, share of the step\n");
  for (std::size_t k = 0; k < per_step.size(); ++k) {
    const char* name =
        k < gan::StepPhases::kCount ? gan::StepPhases::name(static_cast<gan::StepPhase>(k)) : "data (next batch)";
    const auto i = static_cast<std::int64_t>(k);
    std::printf("%-30s %9.2f %9.2f %6.1f%%\n", name, mean[i].item<double>(), slowest[i].item<double>(),
                100.0 * share[i].item<double>());
  }
}

}  // namespace

int run_bench_train(int argc, char** argv) {
  const CommandSpec spec{"bench", "pix2pix bench --what train --data FILE [train options] [--steps N] [--csv FILE]",
                         "Times --steps training steps (after --warmup steps) on every rank of the job, between\n"
                         "two barriers, and prints the global images/s, ms per step and the share of the step\n"
                         "spent averaging gradients. Run it under mpirun/srun like `pix2pix train`; with --csv,\n"
                         "rank 0 appends one row (slurm/scaling-study.sh collects them)."};
  std::string what = "train", csv, trace;
  long steps = 50, warmup = 5, trace_steps = 3;
  bool show_phases = false, perturb_replica = false;
  OptionGroup bench("Benchmark");
  bench.text("what", what, "train");
  bench.count("steps", steps, 1, kNoLimit, "timed steps");
  bench.count("warmup", warmup, 0, kNoLimit, "untimed steps first (allocations, autotuning)");
  bench.optional_text("csv", csv, "append the result as a CSV row").value_name("FILE").rank_local();
  bench.flag("phases", show_phases,
             "also print where a step's time goes (GPUs: synchronises at every phase, so slower)");
  bench
      .optional_text("trace", trace,
                     "after the timed steps, run --trace-steps more under LibTorch's profiler and write them "
                     "as a Chrome trace (chrome://tracing, ui.perfetto.dev): operators, the allocator's memory "
                     "events and a GPU's kernels; "
                     "on N ranks each writes FILE with .rank<r> before its extension")
      .value_name("FILE");
  bench.count("trace-steps", trace_steps, 1, 1000, "steps --trace records");
  const TrainCommandLine train;
  po::options_description all;
  all.add(bench.description()).add(train.options());
  OptionGroup tests;
  tests.flag("test-perturb-replica", perturb_replica,
             "tests: --test-rank changes a parameter after the timed steps (the check must catch it)");
  po::options_description hidden;
  hidden.add(train.hidden()).add(tests.description());
  const auto parsed = parse_command(spec, all, po::positional_options_description(), argc, argv, &hidden);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  // Train's options about its run directory would do nothing here: refused on the command line;
  // from a --config file (a run's config.cfg, reused to time its settings) passed over, and said.
  for (const std::string& option : options_set(vm, train.options())) {
    if (!option_tags(train.options(), option)->run_directory) continue;
    const std::string flag = "--" + option;
    for (int i = 1; i < argc; ++i)
      if (argv[i] == flag || std::string(argv[i]).rfind(flag + "=", 0) == 0)
        throw UsageError(flag + " is train's: bench writes no run directory (it times steps in a scratch folder " +
                         "it removes)");
    std::fprintf(stderr, "note: bench passes over %s of --config: it writes no run directory\n", flag.c_str());
  }
  InputFiles read;
  for (const auto& [option, path] : input_files(vm, train.options())) read.add(path);
  if (!config_file(vm).empty()) read.add(config_file(vm));
  if (!csv.empty()) {
    read.refuse("--csv", csv);
    refuse_foreign_csv(csv);
  }
  if (trace.empty() && !vm["trace-steps"].defaulted()) throw UsageError("--trace-steps needs --trace FILE");

  retain_freed_memory(environ);  // See Note [freed memory stays in the heap]: before MPI and torch allocate
  dist::MpiSession mpi(&argc, &argv);
  // A throw-away run directory (the trainer writes its config there); rank 0's name for all, and
  // rank 0 removes it on every way out, a failed bench's too.
  const auto scratch = std::filesystem::temp_directory_path() / ("pix2pix-bench-" + std::to_string(::getpid()));
  const auto remove_scratch = [&] {
    std::error_code ec;
    if (mpi.rank() == 0) std::filesystem::remove_all(scratch, ec);
  };
  try {
    // Its own options first (a different --steps per rank would wait for a step that never comes);
    // make_train_job checks the training options. See Note [ranks that agree].
    require_agreement(mpi, options_to_agree(vm, bench.description()));
    const std::string my_trace = trace.empty() ? "" : trace_path_for_rank(trace, mpi.rank(), mpi.world());
    if (!my_trace.empty()) {
      read.refuse("--trace", my_trace);
      const std::filesystem::path folder = std::filesystem::path(my_trace).parent_path();
      if (!folder.empty() && !std::filesystem::is_directory(folder))
        throw UsageError("--trace " + trace + ": no folder " + folder.string());
      // See Note [a trace beside the timing]: asked before the bench runs, not after it.
      const std::string unable = trace_unavailable_reason();
      if (!unable.empty())
        throw UsageError(std::string("--trace: this program's LibTorch (") + TORCH_VERSION +
                         ") cannot write a trace: " + unable);
    }
    TrainJob job = make_train_job(train, vm, mpi, scratch.string());
    train::Trainer trainer(job.options, job.device, *job.comm, job.faults);
    dist::Communicator& comm = *job.comm;
    data::BatchLoader& loader = trainer.loader();
    std::int64_t epoch = 0;
    loader.start_epoch(epoch);
    // See Note [no host reads in the step]: steps leave their work queued on a GPU; the timed interval
    // starts and ends with the device idle.
    auto finish_queued = [&job] {
      if (job.device.is_cuda()) torch::cuda::synchronize(job.device.index());
    };
    for (long s = 0; s < warmup; ++s) trainer.step(next_batch(loader, epoch));
    finish_queued();
    comm.barrier();
    const double sync_before = trainer.sync_seconds();
    gan::StepPhases phases(job.device);
    if (show_phases) trainer.set_phases(&phases);
    double data_seconds = 0;
    // See Note [a bench that checks itself]: the timed steps' losses stay on the device until the end.
    torch::Tensor losses_finite = torch::ones({}, torch::TensorOptions().dtype(torch::kBool).device(job.device));
    const auto start = std::chrono::steady_clock::now();
    for (long s = 0; s < steps; ++s) {
      const auto fetch = std::chrono::steady_clock::now();
      auto batch = next_batch(loader, epoch);
      data_seconds += seconds_since(fetch);
      losses_finite.logical_and_(torch::isfinite(trainer.step(batch).values).all());
    }
    finish_queued();
    trainer.set_phases(nullptr);
    comm.barrier();
    const double seconds = seconds_since(start);
    const double sync_share = comm.allreduce_mean((trainer.sync_seconds() - sync_before) / seconds);
    if (perturb_replica && mpi.rank() == train.faults(mpi.world()).rank) {
      torch::NoGradGuard no_grad;
      trainer.model().networks().front().module->parameters().front().add_(1e-3);
    }
    verify_bench(comm, trainer, losses_finite.item<bool>());
    if (!my_trace.empty()) {  // See Note [a trace beside the timing]
      StepTrace traced(job.device.is_cuda());
      for (long s = 0; s < trace_steps; ++s) {
        RECORD_USER_SCOPE("pix2pix step " + std::to_string(s));
        trainer.step(next_batch(loader, epoch));
      }
      finish_queued();
      traced.save(my_trace);
    }
    if (mpi.rank() == 0) {
      const std::int64_t global_batch = trainer.global_batch();
      const double images_per_s = static_cast<double>(steps * global_batch) / seconds;
      const std::string& model = job.options.model;
      char row[256];
      std::snprintf(row, sizeof(row), "%d,%d,%lld,%lld,%ld,%.4f,%.2f,%.3f,%.4f,%s,%s,%s,%d", mpi.world(),
                    mpi.node_count(), static_cast<long long>(global_batch),
                    static_cast<long long>(global_batch / mpi.world()), steps, seconds, images_per_s,
                    1000.0 * seconds / static_cast<double>(steps), sync_share, job.device.str().c_str(),
                    to_string(job.options.precision).c_str(), model.c_str(), torch::get_num_threads());
      std::printf(
          "# bench train: --model %s, %d rank(s) on %d node(s), global batch %lld, %ld steps after %ld warm-up\n"
          "# threads %s\n",
          model.c_str(), mpi.world(), mpi.node_count(), static_cast<long long>(global_batch), steps, warmup,
          job.options.threads.c_str());
      if (!job.kernels.empty()) std::printf("# %s\n", job.kernels.c_str());
      std::printf("# updates: %s\n", optim::describe_updates(job.options.update_options(), job.device).c_str());
      std::printf("# fused kernels: %s\n",
                  dist::describe_fused_kernels(job.options.fused_kernels, trainer.fused_kernels()).c_str());
      const train::CapturedStep* captured = trainer.captured_step();
      std::printf("# step: %s", train::describe_cuda_graph(job.options.cuda_graph, captured != nullptr).c_str());
      if (captured != nullptr)
        std::printf("; %lld steps eager, %lld captures, %lld replays", static_cast<long long>(captured->eager()),
                    static_cast<long long>(captured->captures()), static_cast<long long>(captured->replays()));
      std::printf("\n");
      const std::string graph_memory = captured != nullptr ? captured->capture_memory() : "";
      if (!graph_memory.empty()) std::printf("# CUDA graph: %s\n", graph_memory.c_str());
      std::printf("images/s %.3f  ms/step %.2f  gradient averaging %.1f%% of the time%s\n", images_per_s,
                  1000.0 * seconds / static_cast<double>(steps), 100.0 * sync_share,
                  comm.queues_on_device()
                      ? (" (the host's wait: " + comm.name() + " queues it on the device; --phases times it)").c_str()
                      : "");
      print_wire(trainer, mpi.world());
      std::printf("verified: every loss of the %ld timed steps finite on every rank; the %d replicas identical\n",
                  steps, mpi.world());
      if (!my_trace.empty())
        std::printf("# trace: %ld steps after the timed ones, in %s%s\n", trace_steps, my_trace.c_str(),
                    mpi.world() > 1 ? " (and the other ranks' beside it)" : "");
      if (!csv.empty()) append_csv(csv, row);
    }
    if (show_phases) print_phases(comm, phases, data_seconds, seconds, steps);
    remove_scratch();
    return 0;
  } catch (const std::exception& e) {
    remove_scratch();
    if (mpi.world() > 1) end_job_on_error("bench", e);
    throw;
  }
}

}  // namespace pix2pix::cli
