#include "pix2pix/train/classifier_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "pix2pix/checkpoint/checkpoint.hpp"
#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/cpu_convolutions.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/random.hpp"
#include "pix2pix/common/stopwatch.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/dist/device.hpp"
#include "pix2pix/gan/recognition_loss.hpp"
#include "pix2pix/nets/batch_norm_warning.hpp"
#include "pix2pix/train/replicas.hpp"
#include "pix2pix/train/shard_loader.hpp"
#include "pix2pix/train/stop_protocol.hpp"
#include "pix2pix/train/trainer.hpp"

namespace pix2pix::train {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

ClassifierTrainer::ClassifierTrainer(ClassifierTrainOptions options, torch::Device device, dist::Communicator& comm)
    : options_(std::move(options)),
      device_(device),
      comm_(comm),
      // The GAN trainer's rule over one evaluation per epoch: the accuracy as measured (a window of
      // one), --patience epochs without beating the best by more than --min-delta (0: never stop).
      stop_(comm, EarlyStoppingOptions{1, std::max<std::int64_t>(options_.patience, 1), options_.min_delta,
                                       options_.patience > 0, "val accuracy", ""}) {
  // See Note [oneDNN's wrong input gradients]. The commands have done it already (and say so among
  // the kernels: dist::apply_convolution_settings); this is for library callers. Once per process.
  if (device_.is_cpu()) prepare_cpu_convolutions();
  // The command line checks every option; these guard library callers.
  if (options_.max_epochs < 1) throw UsageError("--max-epochs must be at least 1");
  if (options_.patience < 0) throw UsageError("--patience must be at least 0");
  if (!(options_.lr > 0 && std::isfinite(options_.lr))) throw UsageError("--lr must be finite and > 0");
  if (options_.val_batch_size < 1) throw UsageError("--val-batch-size must be at least 1");
  throw_if_interrupted("starting up");
  dataset_ = data::PairedDataset::open(options_.data, options_.h5_driver);
  for (const char* split : {data::format::kTrain, data::format::kVal})
    if (!dataset_->has_split(split) || dataset_->split(split).count == 0)
      throw Error(options_.data + ": the " + split + " split is missing or empty; the classifier needs it");

  // Every rank reads the labels (4 bytes a pair), so every rank refuses bad ones alike.
  const auto [train_low, train_high] = dataset_->label_range(data::format::kTrain);
  const auto [val_low, val_high] = dataset_->label_range(data::format::kVal);
  if (std::min(train_low, val_low) < 0)
    throw Error(options_.data + ": negative label " + std::to_string(std::min(train_low, val_low)));
  std::int64_t classes = options_.classes;
  if (classes == 0) classes = std::int64_t{train_high} + 1;
  if (classes <= train_high)
    throw UsageError("--classes " + std::to_string(classes) + ", but the train split has label " +
                     std::to_string(train_high));
  if (classes < 2) throw Error(options_.data + ": the train split has one class only (label 0); nothing to tell apart");
  if (val_high >= classes)
    throw Error(options_.data + ": the val split has label " + std::to_string(val_high) + ", which the train split (" +
                std::to_string(classes) + " classes) never shows; pass --classes");
  throw_if_interrupted("reading the labels");

  data::LoaderOptions lo = options_.loader;
  lo.on_cache_progress = [](std::int64_t, std::int64_t) { throw_if_interrupted("caching the shard"); };
  loader_ = make_shard_loader(dataset_, lo, comm_, device_, options_.ranks_per_node);

  const auto& train = dataset_->split(data::format::kTrain);
  const auto& aug = loader_->augment();
  const bool cropped = aug.preprocess != data::Preprocess::none;
  nets::ClassifierOptions shape;
  shape.channels = train.channels_b;
  shape.height = cropped ? aug.crop_size : train.height;
  shape.width = cropped ? aug.crop_size : train.width;
  shape.classes = classes;
  shape.filters = options_.filters;
  shape.blocks = options_.blocks;
  shape.norm = options_.norm;
  // Identical networks on every rank (the same seed), and rank 0's to be sure.
  torch::manual_seed(options_.loader.seed);
  network_ = nets::Classifier(shape);
  network_->to(device_);
  broadcast_from_rank0(comm_, {{"C", "classifier", network_.get()}}, /*buffers_only=*/false);
  optimizer_ = std::make_unique<torch::optim::Adam>(network_->parameters(), torch::optim::AdamOptions(options_.lr)
                                                                                .betas({options_.beta1, options_.beta2})
                                                                                .weight_decay(options_.weight_decay));
  sync_ = std::make_unique<dist::GradientSync>(comm_, network_->parameters(), options_.bucket_bytes);
  throw_if_interrupted("building the network");
}

ClassifierTrainer::~ClassifierTrainer() = default;

torch::Tensor ClassifierTrainer::step(const data::Batch& batch) {
  if (!batch.labels.defined()) throw Error(options_.data + ": a train batch without labels");
  network_->train();
  sync_->zero_grad();
  // Each rank's mean over its B images; GradientSync's mean over ranks makes it the mean over
  // the global batch, as one process with N·B images computes it.
  const torch::Tensor loss = torch::nn::functional::cross_entropy(network_->forward(batch.b), batch.labels);
  loss.backward();
  sync_->average();
  optimizer_->step();
  sync_->release();  // See Note [gradients dropped after the update]
  return loss.detach();
}

double ClassifierTrainer::accuracy(const std::string& split) {
  const std::int64_t count = dataset_->split(split).count;
  torch::NoGradGuard no_grad;
  network_->eval();
  // Rank r scores images r, r + N, r + 2N, ...: all of them, each once, whatever N.
  double correct = 0;
  std::vector<std::int64_t> indices;
  for (std::int64_t first = comm_.rank(); first < count;) {
    indices.clear();
    for (; first < count && static_cast<std::int64_t>(indices.size()) < options_.val_batch_size; first += comm_.world())
      indices.push_back(first);
    const data::PairBatch pairs = dataset_->read(split, indices);
    const data::ValueRange& range = dataset_->split(split).samples_b.range;
    correct += gan::recognised_per_image(network_, data::to_model_input(pairs.b.to(device_), range), pairs.labels,
                                         device_, optim::Precision::fp32)
                   .sum()
                   .item<double>();
  }
  network_->train();
  return comm_.allreduce_sum(correct) / static_cast<double>(count);
}

void ClassifierTrainer::print_startup() const {
  const auto& train = dataset_->split(data::format::kTrain);
  std::printf("pix2pix train-classifier: %s\n", options_.data.c_str());
  std::printf("  %-16s %s\n", "device", device_.str().c_str());
  std::printf("  %-16s %d (%s)\n", "ranks", comm_.world(), comm_.name().c_str());
  if (!options_.threads.empty()) std::printf("  %-16s %s\n", "threads", options_.threads.c_str());
  std::printf("  %-16s %lld train B images, %lld val; %lld classes\n", "data", static_cast<long long>(train.count),
              static_cast<long long>(dataset_->split(data::format::kVal).count),
              static_cast<long long>(shape().classes));
  std::printf("  %-16s %s, %lld parameters\n", "network", nets::describe(shape()).c_str(),
              static_cast<long long>(nets::count_parameters(*network_)));
  std::printf("  %-16s %lld per rank, %lld global; %lld steps per epoch\n", "batch",
              static_cast<long long>(options_.loader.batch_size), static_cast<long long>(global_batch()),
              static_cast<long long>(loader_->steps_per_epoch()));
  std::printf("  %-16s Adam lr %g betas (%g, %g) weight decay %g\n", "optimiser", options_.lr, options_.beta1,
              options_.beta2, options_.weight_decay);
  std::printf("  %-16s best val accuracy, patience %lld, at most %lld epochs\n", "stopping",
              static_cast<long long>(options_.patience), static_cast<long long>(options_.max_epochs));
  std::printf("  %-16s %s\n", "output", options_.out.c_str());
  std::fflush(stdout);
  // See Note [batch norm over too few images]: validation here always runs in eval mode.
  const std::string warning =
      nets::few_images_warning(options_.norm, options_.loader.batch_size, /*eval_validation=*/true,
                               "a larger --batch-size (32, the default) or --norm instance");
  if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
}

void ClassifierTrainer::write_metrics_row(const std::string& row) {
  if (options_.metrics_csv.empty()) return;
  if (metrics_text_.empty()) metrics_text_ = "epoch,train_loss,val_accuracy,best_val_accuracy,images_per_s,seconds\n";
  metrics_text_ += row + "\n";
  // Whole or not at all: a reader never sees half a row.
  write_file_atomically(options_.metrics_csv, metrics_text_, /*durable=*/true);
}

ClassifierRunResult ClassifierTrainer::run() {
  if (comm_.rank() == 0) print_startup();
  ClassifierRunResult result;
  const auto run_start = Clock::now();
  std::int64_t images_seen = 0;
  double best = -1;
  for (std::int64_t epoch = 0; epoch < options_.max_epochs; ++epoch) {
    loader_->start_epoch(epoch);
    std::unique_ptr<Progress> bar;
    if (comm_.rank() == 0)
      bar = std::make_unique<Progress>("epoch " + std::to_string(epoch), loader_->steps_per_epoch(), stdout,
                                       options_.progress);
    torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions(torch::kFloat64).device(device_));
    std::int64_t steps = 0;
    const auto epoch_start = Clock::now();
    while (auto batch = loader_->next()) {
      const torch::Tensor loss = step(*batch);
      loss_sum += loss.to(torch::kFloat64);  // See Note [no host reads in the step] (trainer.hpp)
      ++steps;
      if (bar) {
        if (bar->draws_next()) {
          char status[48];
          std::snprintf(status, sizeof(status), "loss %.4f", loss.item<double>());
          bar->set_status(status);
        }
        bar->advance();
      }
      // See Note [one stop protocol]: every rank stops here, naming the signal.
      if (const int signal = stop_.signal_of_any_rank(); signal != 0) {
        if (bar) bar->finish();
        stop_.end_gracefully({});  // --out holds the best epoch so far, written when it was
        result.exit_code = kExitInterrupted;
        result.stop_reason = "stopped by signal " + std::to_string(signal) + " in epoch " + std::to_string(epoch) +
                             (result.best_epoch >= 0 ? "; " + options_.out + " holds the best epoch so far"
                                                     : "; no epoch completed, nothing was written");
        result.wall_seconds = seconds_since(run_start);
        return result;
      }
    }
    if (bar) bar->finish();
    const double epoch_seconds = seconds_since(epoch_start);
    const double train_loss =
        comm_.allreduce_mean(loss_sum.item<double>() / static_cast<double>(std::max<std::int64_t>(steps, 1)));
    if (!std::isfinite(train_loss))
      throw Error("epoch " + std::to_string(epoch) + ": the training loss is not finite; lower --lr");
    const std::int64_t epoch_images = steps * global_batch();
    images_seen += epoch_images;
    // Batch-norm running statistics drift apart (each rank saw its own images): rank 0's for all,
    // so that every rank scores with the network rank 0 saves.
    broadcast_from_rank0(comm_, {{"C", "classifier", network_.get()}}, /*buffers_only=*/true);
    const double val_accuracy = accuracy(data::format::kVal);
    // Rank 0 decides, as the GAN trainer's does; every rank follows its decision.
    const Decision d = stop_.decide(epoch, val_accuracy);
    const bool improved = d.improved;
    if (improved) {
      best = val_accuracy;
      result.best_epoch = epoch;
      result.best_accuracy = val_accuracy;
      if (comm_.rank() == 0) checkpoint::save_classifier(options_.out, *network_, {epoch, val_accuracy, options_.data});
    }
    result.last_epoch = epoch;
    if (comm_.rank() == 0) {
      char row[160];
      std::snprintf(row, sizeof(row), "%lld,%.6f,%.6f,%.6f,%.1f,%.3f", static_cast<long long>(epoch), train_loss,
                    val_accuracy, best, static_cast<double>(epoch_images) / epoch_seconds, epoch_seconds);
      write_metrics_row(row);
      std::printf("epoch %lld: loss %.4f | val accuracy %.4f (best %.4f at epoch %lld)%s | %.0f img/s\n",
                  static_cast<long long>(epoch), train_loss, val_accuracy, best,
                  static_cast<long long>(result.best_epoch), improved ? " saved" : "",
                  static_cast<double>(epoch_images) / epoch_seconds);
      std::fflush(stdout);
    }
    if (d.stop) {
      result.stop_reason = d.reason;
      break;
    }
  }
  if (result.stop_reason.empty()) result.stop_reason = "reached --max-epochs " + std::to_string(options_.max_epochs);
  result.wall_seconds = seconds_since(run_start);
  result.images_per_second = static_cast<double>(images_seen) / std::max(result.wall_seconds, 1e-9);
  return result;
}

}  // namespace pix2pix::train
