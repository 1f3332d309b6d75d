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

// The options, bound to where their values go (See Note [an option is declared once]).
struct ClassifierCommandLine {
  train::ClassifierTrainOptions given;
  double bucket_mb = 25.0;
  bool overwrite = false;
  std::string device = "auto";
  ComputeChoices compute;
  long threads = 0;
  po::options_description options;

  ClassifierCommandLine() {
    train::ClassifierTrainOptions& o = given;
    OptionGroup run("Run");
    run.optional_text("data", o.data, "pix2pix-h5 dataset with labels (pix2pix prepare --labels)")
        .value_name("FILE")
        .input_file();
    run.optional_text("out", o.out, "the classifier file to write (classifier.pt)").value_name("FILE").rank_local();
    run.optional_text("metrics", o.metrics_csv, "per-epoch CSV (default: --out with the extension .csv)")
        .value_name("FILE")
        .rank_local();
    run.flag("overwrite", overwrite, "replace existing --out and --metrics files");
    run.text("device", device, "auto | cpu | cuda").rank_local();
    run.choice("progress", o.progress, "auto", parse_progress_style, "auto | bar | lines | none: rank 0's progress")
        .rank_local();
    OptionGroup net("Network");
    net.count("classes", o.classes, 0, data::format::kMaxClasses, "classes (0: the largest train label + 1)");
    net.count("filters", o.filters, 1, 1024, "channels of the first stage (doubled per stage, at most 8x)");
    net.count("blocks", o.blocks, 0, 12, "stages of two 3x3 convolutions and a 2x2 pool (0: from the size)");
    net.choice("norm", o.norm, "batch", nets::parse_norm, "batch | instance | none");
    OptionGroup optim("Optimisation and early stopping");
    optim.real("lr", o.lr, Range::above(0), "Adam learning rate");
    optim.real("beta1", o.beta1, Range::right_open(0, 1), "Adam beta1");
    optim.real("beta2", o.beta2, Range::right_open(0, 1), "Adam beta2");
    optim.real("weight-decay", o.weight_decay, Range::at_least(0), "Adam weight decay");
    optim.count("max-epochs", o.max_epochs, 1, 1000000, "hard bound on epochs");
    optim.count("patience", o.patience, 0, 1000000, "epochs without a better val accuracy before stopping (0: none)");
    optim.real("min-delta", o.min_delta, Range::right_open(0, 1), "the smallest val accuracy gain that counts");
    optim.count("val-batch-size", o.val_batch_size, 1, 1 << 20, "images per validation forward pass");
    optim.real("bucket-mb", bucket_mb, Range::left_open(0, 1 << 16), "gradient all-reduce bucket size (MiB)");
    // 32 images a rank: with batch norm and eval-mode validation, single images made running
    // statistics the network never trained with (See Note [batch norm over too few images]).
    o.loader.batch_size = 32;
    options.add(run.description())
        .add(net.description())
        .add(optim.description())
        .add(loader_options(o.loader, o.h5_driver).description())
        .add(compute_options(compute).description())
        .add(thread_options(threads).description());
  }

  // After parsing: the options checked against each other.
  train::ClassifierTrainOptions resolve() const {
    train::ClassifierTrainOptions o = given;
    if (o.data.empty()) throw UsageError("missing --data");
    if (o.out.empty()) throw UsageError("missing --out");
    if (o.metrics_csv.empty()) o.metrics_csv = std::filesystem::path(o.out).replace_extension(".csv").string();
    if (o.classes == 1) throw UsageError("--classes must be 0 (from the labels) or at least 2, got 1");
    o.bucket_bytes = static_cast<std::int64_t>(bucket_mb * (1 << 20));
    return o;
  }
};

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
  ClassifierCommandLine command_line;
  const auto parsed = parse_command(spec, command_line.options, po::positional_options_description(), argc, argv);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  retain_freed_memory(environ);  // See Note [freed memory stays in the heap]: before MPI and torch allocate
  dist::MpiSession mpi(&argc, &argv);
  install_interrupt_handlers();
  return run_training_job("train-classifier", mpi, "; nothing was written", [&] {
    train::ClassifierTrainOptions options = command_line.resolve();
    // See Note [ranks that agree]: before the first collective.
    AgreedFields agreed = options_to_agree(vm, command_line.options);
    for (const auto& [option, path] : input_files(vm, command_line.options)) add_file(agreed, option, path);
    require_agreement(mpi, agreed);
    options.threads = settle_threads(command_line.threads, &mpi).describe();
    // Rank 0 checks the outputs (the folder is shared); every rank learns its verdict.
    std::string verdict;
    if (mpi.rank() == 0) {
      try {
        require_readable_file(options.data, "--data");
        std::vector<std::pair<std::string, std::string>> outputs = {{"--out", options.out}};
        if (!options.metrics_csv.empty()) outputs.emplace_back("--metrics", options.metrics_csv);
        std::vector<std::string> inputs = {options.data};
        if (!config_file(vm).empty()) inputs.push_back(config_file(vm));
        require_new_outputs(outputs, inputs, command_line.overwrite);
      } catch (const UsageError& e) {
        verdict = std::string("2") + e.what();
      } catch (const Error& e) {
        verdict = std::string("1") + e.what();
      }
    }
    const torch::Device device = dist::choose_device(command_line.device, mpi.local_rank(), mpi.local_size());
    const std::string kernels = dist::apply_convolution_settings(command_line.compute.convolution, device);
    if (mpi.rank() == 0 && !kernels.empty()) std::printf("pix2pix train-classifier: %s\n", kernels.c_str());
    const auto comm = communicator_from(command_line.compute, device, mpi);
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
