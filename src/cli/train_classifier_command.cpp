// `pix2pix train-classifier`: the recognition network of the auxiliary loss (docs/training.md,
// "Recognition network"), trained on the B images and labels of a dataset file, under the same
// launchers as `train`.
#include <cstdio>
#include <filesystem>

#include <unistd.h>  // environ

#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/compute_options.hpp"
#include "pix2pix/cli/loader_options.hpp"
#include "pix2pix/cli/rank_agreement.hpp"
#include "pix2pix/cli/thread_options.hpp"
#include "pix2pix/cli/train_setup.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/heap.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/dist/device.hpp"
#include "pix2pix/dist/mpi_session.hpp"
#include "pix2pix/train/classifier_trainer.hpp"
#include "pix2pix/train/trainer.hpp"

namespace pix2pix::cli {
namespace {

po::options_description classifier_option_descriptions() {
  po::options_description run("Run");
  run.add_options()("data", po::value<std::string>()->value_name("FILE"),
                    "pix2pix-h5 dataset with labels (pix2pix prepare --labels)")(
      "out", po::value<std::string>()->value_name("FILE"), "the classifier file to write (classifier.pt)")(
      "metrics", po::value<std::string>()->value_name("FILE"),
      "per-epoch CSV (default: --out with the extension .csv)")("overwrite", po::bool_switch(),
                                                                "replace existing --out and --metrics files")(
      "device", po::value<std::string>()->default_value("auto"), "auto | cpu | cuda")(
      "progress", po::value<std::string>()->default_value("auto"), "auto | bar | lines | none: rank 0's progress");
  po::options_description net("Network");
  net.add_options()("classes", po::value<long>()->default_value(0), "classes (0: the largest train label + 1)")(
      "filters", po::value<long>()->default_value(32), "channels of the first stage (doubled per stage, at most 8x)")(
      "blocks", po::value<long>()->default_value(0),
      "stages of two 3x3 convolutions and a 2x2 pool (0: from the size)")(
      "norm", po::value<std::string>()->default_value("batch"), "batch | instance | none");
  po::options_description optim("Optimisation and early stopping");
  optim.add_options()("lr", po::value<double>()->default_value(1e-3), "Adam learning rate")(
      "beta1", po::value<double>()->default_value(0.9), "Adam beta1")(
      "beta2", po::value<double>()->default_value(0.999), "Adam beta2")(
      "weight-decay", po::value<double>()->default_value(0.0), "Adam weight decay")(
      "max-epochs", po::value<long>()->default_value(30), "hard bound on epochs")(
      "patience", po::value<long>()->default_value(5),
      "epochs without a better val accuracy before stopping (0: none)")(
      "min-delta", po::value<double>()->default_value(0.0), "the smallest val accuracy gain that counts")(
      "val-batch-size", po::value<long>()->default_value(256), "images per validation forward pass")(
      "bucket-mb", po::value<double>()->default_value(25.0), "gradient all-reduce bucket size (MiB)");
  po::options_description all;
  // 32 images a rank: with batch norm and eval-mode validation, single images made running
  // statistics the network never trained with (See Note [batch norm over too few images]).
  all.add(run)
      .add(net)
      .add(optim)
      .add(loader_option_descriptions(/*default_batch_size=*/32))
      .add(compute_option_description())
      .add(thread_option_description());
  return all;
}

train::ClassifierTrainOptions classifier_options_from(const po::variables_map& vm) {
  train::ClassifierTrainOptions o;
  for (const char* required : {"data", "out"})
    if (!vm.count(required)) throw UsageError(std::string("missing --") + required);
  o.data = vm["data"].as<std::string>();
  o.out = vm["out"].as<std::string>();
  o.metrics_csv = vm.count("metrics") ? vm["metrics"].as<std::string>()
                                      : std::filesystem::path(o.out).replace_extension(".csv").string();
  o.h5_driver = h5_driver_from(vm);
  o.loader = loader_options_from(vm);
  o.classes = integer_option(vm, "classes", 0, data::format::kMaxClasses);
  if (o.classes == 1) throw UsageError("--classes must be 0 (from the labels) or at least 2, got 1");
  o.filters = integer_option(vm, "filters", 1, 1024);
  o.blocks = integer_option(vm, "blocks", 0, 12);
  o.norm = nets::parse_norm(vm["norm"].as<std::string>());
  o.lr = real_option(vm, "lr", Range::above(0));
  o.beta1 = real_option(vm, "beta1", Range::right_open(0, 1));
  o.beta2 = real_option(vm, "beta2", Range::right_open(0, 1));
  o.weight_decay = real_option(vm, "weight-decay", Range::at_least(0));
  o.max_epochs = integer_option(vm, "max-epochs", 1, 1000000);
  o.patience = integer_option(vm, "patience", 0, 1000000);
  o.min_delta = real_option(vm, "min-delta", Range::right_open(0, 1));
  o.val_batch_size = integer_option(vm, "val-batch-size", 1, 1 << 20);
  o.bucket_bytes = static_cast<std::int64_t>(real_option(vm, "bucket-mb", Range::left_open(0, 1 << 16)) * (1 << 20));
  o.progress = parse_progress_style(vm["progress"].as<std::string>());
  return o;
}

}  // namespace

int run_train_classifier(int argc, char** argv) {
  const CommandSpec spec{
      "train-classifier", "pix2pix train-classifier --data FILE.h5 --out classifier.pt [options]",
      "Trains a recognition network (the paper's auxiliary-loss classifier) on the B images of the\n"
      "train split and their labels: top-1 accuracy on the val split after every epoch, the best epoch's\n"
      "network kept in --out (written whole or not at all), early stopping after --patience epochs without\n"
      "a better accuracy. Runs under mpirun/srun like train: every rank its shard, gradients averaged.\n"
      "Exit status: 0 done, 1 error, 2 usage, 75 stopped by SIGINT/SIGTERM/SIGUSR1 (--out keeps the best\n"
      "epoch so far)."};
  const auto parsed =
      parse_command(spec, classifier_option_descriptions(), po::positional_options_description(), argc, argv);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  retain_freed_memory(environ);  // See Note [freed memory stays in the heap]: before MPI and torch allocate
  dist::MpiSession mpi(&argc, &argv);
  install_interrupt_handlers();
  return run_training_job("train-classifier", mpi, "; nothing was written", [&] {
    train::ClassifierTrainOptions options = classifier_options_from(vm);
    // See Note [ranks that agree]: before the first collective.
    AgreedFields agreed =
        options_to_agree(vm, classifier_option_descriptions(),
                         {"config", "device", "progress", "collective-timeout", "out", "metrics", "threads"});
    add_file(agreed, "--data", options.data);
    require_agreement(mpi, agreed);
    options.threads = settle_threads(vm, &mpi).describe();
    // Rank 0 checks the outputs (the folder is shared); every rank learns its verdict.
    std::string verdict;
    if (mpi.rank() == 0) {
      try {
        require_readable_file(options.data, "--data");
        std::vector<std::pair<std::string, std::string>> outputs = {{"--out", options.out}};
        if (!options.metrics_csv.empty()) outputs.emplace_back("--metrics", options.metrics_csv);
        std::vector<std::string> inputs = {options.data};
        if (vm.count("config")) inputs.push_back(vm["config"].as<std::string>());
        require_new_outputs(outputs, inputs, vm["overwrite"].as<bool>());
      } catch (const UsageError& e) {
        verdict = std::string("2") + e.what();
      } catch (const Error& e) {
        verdict = std::string("1") + e.what();
      }
    }
    const torch::Device device =
        dist::choose_device(vm["device"].as<std::string>(), mpi.local_rank(), mpi.local_size());
    const std::string kernels = dist::apply_convolution_settings(convolution_settings_from(vm), device);
    if (mpi.rank() == 0 && !kernels.empty()) std::printf("pix2pix train-classifier: %s\n", kernels.c_str());
    const auto comm = communicator_from(vm, device, mpi);
    verdict = comm->broadcast_string(verdict, 0);
    if (!verdict.empty()) {
      if (verdict[0] == '2') throw UsageError(verdict.substr(1));
      throw Error(verdict.substr(1));
    }
    options.ranks_per_node = mpi.local_size();
    train::ClassifierTrainer trainer(options, device, *comm);
    const train::ClassifierRunResult result = trainer.run();
    if (mpi.rank() == 0) {
      std::printf("stopped: %s\n", result.stop_reason.c_str());
      if (result.best_epoch >= 0)
        std::printf("best epoch %lld, val accuracy %.4f; classifier in %s, metrics in %s\n",
                    static_cast<long long>(result.best_epoch), result.best_accuracy, options.out.c_str(),
                    options.metrics_csv.c_str());
    }
    return result.exit_code;
  });
}

}  // namespace pix2pix::cli
