// `pix2pix bench --what loader`: times the input pipeline alone (cache fill, then batches per
// second through augmentation) so that it can be compared with a training step later.
#include <chrono>
#include <cstdio>
#include <memory>

#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/loader_options.hpp"
#include "pix2pix/cli/thread_options.hpp"
#include "pix2pix/common/memory_budget.hpp"
#include "pix2pix/common/stopwatch.hpp"
#include "pix2pix/dist/device.hpp"
#include "pix2pix/dist/mpi_session.hpp"

namespace pix2pix::cli {
namespace {

int bench_read(const data::PairedDataset& dataset, const data::LoaderOptions& lo, const std::vector<int>& worlds,
               bool report) {
  if (report)
    std::printf("# bench read: %s split %s, shuffle %s, driver %s\n", dataset.path().c_str(), lo.split.c_str(),
                lo.shuffle ? "on" : "off", data::to_string(dataset.driver()).c_str());
  const bool paired = dataset.split(lo.split).paired;
  if (report)
    std::printf("%-8s %12s %12s %12s\n", "# world", paired ? "pairs" : "images", "seconds",
                paired ? "pairs/s" : "images/s");
  for (int world : worlds) {
    if (world < 1) throw UsageError("--worlds must be >= 1");
    const auto& info = dataset.split(lo.split);
    // An unpaired split: A's shard and B's shard, each planned from its own count (as the loader does).
    const auto shard = data::plan_shard({info.count, world, 0, lo.seed, 0, lo.shuffle});
    const auto shard_b = info.paired ? shard : data::plan_shard({info.count_b, world, 0, lo.seed, 0, lo.shuffle});
    require_memory(static_cast<std::int64_t>(shard.indices.size()) * info.image_bytes(data::Domain::A) +
                       static_cast<std::int64_t>(shard_b.indices.size()) * info.image_bytes(data::Domain::B),
                   "bench --what read: one shard of " + dataset.path() + " at world size " + std::to_string(world));
    const auto start = std::chrono::steady_clock::now();
    std::int64_t read = 0;
    if (info.paired) {
      read = dataset.read(lo.split, shard.indices).a.size(0);
    } else {
      read = dataset.read_images(lo.split, data::Domain::A, shard.indices).size(0) +
             dataset.read_images(lo.split, data::Domain::B, shard_b.indices).size(0);
    }
    const double secs = seconds_since(start);
    if (report)
      std::printf("%-8d %12lld %12.3f %12.0f\n", world, static_cast<long long>(read), secs,
                  static_cast<double>(read) / secs);
  }
  return 0;
}

}  // namespace

int run_bench(int argc, char** argv) {
  // --what train takes every training option: its own parser (bench_train_command.cpp).
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--what=train" || (arg == "--what" && i + 1 < argc && std::string(argv[i + 1]) == "train"))
      return run_bench_train(argc, argv);
  }
  const CommandSpec spec{"bench", "pix2pix bench --what loader|read|train --data FILE [options]",
                         "Measures one part of the pipeline on this process.\n"
                         "  train:  training steps/s of the whole job (pix2pix bench --what train --help).\n"
                         "  loader: time to fill the cache, then batches/s and images/s over --epochs epochs\n"
                         "          (after one warm-up epoch).\n"
                         "  read:   pairs/s of PairedDataset::read for the shard rank 0 would get at each\n"
                         "          world size of --worlds (shuffled sharding: scattered indices)."};
  std::string what = "loader", data, device_name = "auto";
  std::vector<int> worlds{1, 2, 4};
  int epochs = 3;
  long threads = 0;
  data::LoaderOptions lo;
  data::H5Driver driver = data::H5Driver::serial;
  OptionGroup options("Benchmark");
  options.text("what", what, "what to measure: loader | read | train");
  options.list("worlds", worlds, "1 2 4", "read: world sizes whose rank-0 shard is read");
  options.optional_text("data", data, "pix2pix-h5 dataset").value_name("FILE");
  options.text("split", lo.split, "split to load");
  options.count("epochs", epochs, 1, 1000000, "timed epochs");
  options.text("device", device_name, "auto | cpu | cuda");
  options.add(loader_options(lo, driver)).add(thread_options(threads));
  const auto parsed = parse_command(spec, options.description(), po::positional_options_description(), argc, argv);
  if (!parsed) return 0;
  // `train` never gets here (main dispatches it to bench_train_command), but it is one of the choices.
  if (what != "loader" && what != "read")
    throw UsageError("--what must be one of loader, read, train; got '" + what + "'");
  if (data.empty()) throw UsageError("--data FILE is required");

  std::unique_ptr<dist::MpiSession> mpi;
  if (driver == data::H5Driver::mpio) mpi = std::make_unique<dist::MpiSession>(&argc, &argv);
  settle_threads(threads, mpi.get());
  const torch::Device device = dist::choose_device(device_name, 0, 1);
  const dist::CacheMemory memory = dist::cache_memory(device, 1);
  lo.device_memory_bytes = memory.device_bytes;
  lo.host_memory_bytes = memory.host_bytes;

  const auto dataset = data::PairedDataset::open(data, driver);
  // With mpio under mpirun every rank measures at once (the contention a job sees); rank 0 reports.
  const bool report = !mpi || mpi->rank() == 0;
  if (what == "read") return bench_read(*dataset, lo, worlds, report);
  auto start = std::chrono::steady_clock::now();
  data::BatchLoader loader(dataset, lo, device);
  const double fill_seconds = seconds_since(start);
  auto run_epoch = [&loader](std::int64_t epoch) {
    loader.start_epoch(epoch);
    std::int64_t images = 0;
    while (auto batch = loader.next()) images += batch->a.size(0);
    return images;
  };
  run_epoch(0);  // warm-up: first-touch allocations, thread start-up
  start = std::chrono::steady_clock::now();
  std::int64_t images = 0;
  for (int e = 1; e <= epochs; ++e) images += run_epoch(e);
  const double secs = seconds_since(start);
  const double steps = static_cast<double>(loader.steps_per_epoch()) * epochs;
  if (!report) return 0;
  std::printf("# bench loader: %s split %s, device %s, cache %s (%.1f MiB), batch %lld, crop %lld, preprocess %s\n",
              dataset->path().c_str(), lo.split.c_str(), device.str().c_str(),
              data::to_string(loader.cache_mode()).c_str(), static_cast<double>(loader.cache_bytes()) / (1 << 20),
              static_cast<long long>(lo.batch_size), static_cast<long long>(loader.augment().crop_size),
              data::to_string(loader.augment().preprocess).c_str());
  std::printf("%-12s %12s %12s %12s %12s\n", "# fill_s", "epochs", "steps/s", "images/s", "ms/step");
  std::printf("%-12.3f %12d %12.1f %12.0f %12.3f\n", fill_seconds, epochs, steps / secs,
              static_cast<double>(images) / secs, 1000.0 * secs / steps);
  return 0;
}

}  // namespace pix2pix::cli
