// `pix2pix train-classifier`: the recognition network of the auxiliary loss, trained on the B
// images of the train split and their labels, on the same engine as `train`: every rank its own
// shard in its cache (data::BatchLoader), gradients averaged through dist::GradientSync, top-1
// accuracy on the val split (each rank scores its share, one sum), the best network kept in one
// sealed file written atomically, early stopping on accuracy with a patience, and a signal
// honoured at a step boundary on every rank.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "pix2pix/checkpoint/classifier_file.hpp"
#include "pix2pix/common/progress.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/dist/gradient_sync.hpp"
#include "pix2pix/nets/classifier.hpp"
#include "pix2pix/train/stop_protocol.hpp"

namespace pix2pix::train {

struct ClassifierTrainOptions {
  std::string data;
  std::string out;          // the classifier file (the best epoch's network)
  std::string metrics_csv;  // rank 0 rewrites it whole after each epoch ("" : none)
  data::H5Driver h5_driver = data::H5Driver::serial;
  data::LoaderOptions loader;  // split, world and rank are set from the communicator
  std::int64_t classes = 0;    // 0: the largest train label + 1
  std::int64_t filters = 32;
  std::int64_t blocks = 0;  // 0: model::classifier_blocks_for the image
  nets::Norm norm = nets::Norm::batch;
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, weight_decay = 0;
  std::int64_t max_epochs = 30;
  std::int64_t patience = 5;  // epochs without a better val accuracy before stopping (0: never stop early)
  double min_delta = 0;       // what counts as better
  std::int64_t val_batch_size = 256;
  std::int64_t bucket_bytes = 25 << 20;
  int ranks_per_node = 1;
  std::string threads;  // rank 0's thread budget, described, for start-up
  std::optional<ProgressStyle> progress;
};

struct ClassifierRunResult {
  std::string stop_reason;
  int exit_code = 0;  // 0, or kExitInterrupted (stop_protocol.hpp) after a signal
  std::int64_t last_epoch = -1;
  std::int64_t best_epoch = -1;  // -1: no epoch completed, nothing written
  double best_accuracy = 0;
  double images_per_second = 0;
  double wall_seconds = 0;
};

class ClassifierTrainer {
 public:
  ClassifierTrainer(ClassifierTrainOptions options, torch::Device device, dist::Communicator& comm);
  ~ClassifierTrainer();

  ClassifierRunResult run();
  // One optimisation step on a batch's B images and labels; this rank's mean loss (on the device).
  torch::Tensor step(const data::Batch& batch);
  // Collective: top-1 accuracy (eval mode) over a split, every image scored once by one rank.
  double accuracy(const std::string& split);

  nets::Classifier& network() { return network_; }
  const nets::ClassifierOptions& shape() const { return network_->options(); }
  std::int64_t global_batch() const { return options_.loader.batch_size * comm_.world(); }

 private:
  void print_startup() const;
  void write_metrics_row(const std::string& row);

  ClassifierTrainOptions options_;
  torch::Device device_;
  dist::Communicator& comm_;
  std::shared_ptr<const data::PairedDataset> dataset_;
  std::unique_ptr<data::BatchLoader> loader_;
  nets::Classifier network_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  std::unique_ptr<dist::GradientSync> sync_;
  std::string metrics_text_;  // the CSV so far (rank 0)
  StopProtocol stop_;         // stop signals and rank 0's early stopping (See Note [one stop protocol])
};

}  // namespace pix2pix::train
