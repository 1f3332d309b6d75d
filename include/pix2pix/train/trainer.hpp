// The training loop every later issue reuses: data → step (D then G) → gradient sync → Adam,
// then rank 0 validates, applies early stopping, writes the run directory and checkpoints, and
// the decision reaches every rank through the Communicator.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/dist/gradient_sync.hpp"
#include "pix2pix/metrics/run_directory.hpp"
#include "pix2pix/model/networks.hpp"
#include "pix2pix/train/checkpoint.hpp"
#include "pix2pix/train/early_stopping.hpp"
#include "pix2pix/train/recognition_loss.hpp"
#include "pix2pix/train/step_phases.hpp"
#include "pix2pix/train/train_options.hpp"
#include "pix2pix/train/validator.hpp"

namespace pix2pix::train {

// Note [no host reads in the step]: reading a loss on the host (.item()) waits for the device to
// finish everything queued before it, so on GPUs each read empties the queue that lets the host
// run ahead of the device. A step leaves its losses on the device; the epoch loop sums them
// there and reads them where it reports: when the progress bar redraws and at the end of an
// epoch (or a graceful stop). The non-finite check (one read per network and step, since the
// optimizer must know whether to step) and the collective stop poll stay.
struct StepLosses {
  torch::Tensor values;  // float64 [loss_D, loss_G_gan, loss_G_l1, loss_G_aux], detached, on the device
  bool skipped_d = false, skipped_g = false;  // non-finite gradients: the step was not applied
  // Host copies (a device sync each): this rank's losses, unscaled; L1 already times lambda.
  double loss_d() const { return values[0].item<double>(); }
  double loss_g_gan() const { return values[1].item<double>(); }
  double loss_g_l1() const { return values[2].item<double>(); }
  double loss_g_aux() const { return values[3].item<double>(); }  // already times lambda_aux; 0 without
};

// One epoch's loss sums on this rank so far.
struct EpochSums {
  std::int64_t steps = 0;
  double loss_d = 0, loss_g_gan = 0, loss_g_l1 = 0, loss_g_aux = 0;  // read so far (a resumed epoch's, global())
  std::int64_t skipped = 0;
  torch::Tensor unread;  // float64 [4]: the sums of the steps add() took since, on their device

  void add(const StepLosses& losses);  // no host read
  // Collective: rank means of the loss sums (one host read) and the total of skipped steps.
  EpochSums global(dist::Communicator& comm) const;
  std::vector<double> to_checkpoint() const;
  static EpochSums from_checkpoint(const std::vector<double>& saved, std::int64_t steps);
};

// Exit statuses of `pix2pix train` (docs/training.md).
inline constexpr int kExitInterrupted = 75;  // graceful stop (SIGINT/SIGTERM/SIGUSR1); last.pt continues it

struct RunResult {
  std::string stop_reason;
  int exit_code = 0;
  std::int64_t last_epoch = -1;
  std::int64_t best_epoch = -1;
  double best_smoothed = 0;  // the best smoothed value of what --es-metric watches
  double wall_seconds = 0;
  double images_per_second = 0;
  double baseline_psnr = 0;  // val PSNR of predicting the mean training image (rank 0)
  // With --aux-classifier (rank 0; NaN without): the classifier's accuracy on G(A) of the val
  // split at the best epoch, and on the real B images (the ceiling).
  double best_recognition = std::numeric_limits<double>::quiet_NaN();
  double real_recognition = std::numeric_limits<double>::quiet_NaN();
};

class Trainer {
 public:
  Trainer(TrainOptions options, torch::Device device, dist::Communicator& comm);
  ~Trainer();

  RunResult run();
  // One optimisation step on a batch (public so that tests can drive it).
  StepLosses step(const data::Batch& batch);

  model::UnetGenerator& generator() { return generator_; }
  model::PatchDiscriminator& discriminator() { return discriminator_; }
  const data::BatchLoader& loader() const { return *loader_; }
  data::BatchLoader& loader() { return *loader_; }  // benchmarks drive step() themselves
  double sync_seconds() const { return sync_seconds_; }
  // Charge each phase of every later step to `phases` (nullptr: stop); bench --phases.
  void set_phases(StepPhases* phases) { phases_ = phases; }
  std::int64_t global_batch() const { return global_batch_; }
  std::string model_shape() const;
  TrainedOn trained_on() const;  // what inference needs: the trained image size, the val mode
  // Checksums of every parameter agree on all ranks; Error naming the first that differs.
  void verify_replicas();

 private:
  void set_learning_rate(double lr);
  void end_phase(StepPhase phase);
  // Error naming the memory budget when it cannot hold the training state (Note [training memory floor]).
  void require_training_memory() const;
  // Rank 0's progress bar and every rank's stop check while the loader fills its cache.
  std::function<void(std::int64_t, std::int64_t)> cache_progress() const;
  // Error (after rank 0 logs the epoch) when a network received no update in a whole epoch.
  void fail_if_nothing_learned(std::int64_t epoch, std::int64_t steps, std::int64_t skipped_d, std::int64_t skipped_g,
                               const metrics::EpochMetrics& m);
  // trainer_checkpoint.cpp
  TrainingState state() const;  // at the end of epoch start_epoch_ - 1
  void save(const std::string& name, const TrainingState& state);
  void save_interrupted(const EpochSums& global_sums);  // rank 0: last.pt in the middle of an epoch
  std::string pick_resume_checkpoint();                 // --resume auto: the newest undamaged one
  void resume_if_asked();
  void inject_test_faults() const;              // hidden --fail-at-step / --signal-at-step
  void print_startup() const;                   // trainer_report.cpp
  void write_summary(const RunResult& result);  // trainer_report.cpp: summary.json, train.log
  // trainer_report.cpp: "epoch E: losses | validation | throughput", the smoothed value beside what
  // --es-metric watches.
  std::string epoch_line(const metrics::EpochMetrics& m) const;
  // Rank 0: curves.png from metrics.csv (metrics/curves.hpp); a failure is logged once, never thrown.
  void draw_curves(std::int64_t best_epoch, std::int64_t stop_epoch);  // trainer_report.cpp
  // Rank 0's parameters (unless buffers_only) and buffers to every rank.
  void broadcast_model(bool buffers_only);

  TrainOptions options_;
  torch::Device device_;
  dist::Communicator& comm_;
  std::shared_ptr<const data::PairedDataset> dataset_;
  std::unique_ptr<data::BatchLoader> loader_;
  std::int64_t global_batch_ = 1;
  model::UnetGenerator generator_{nullptr};
  model::PatchDiscriminator discriminator_{nullptr};
  std::unique_ptr<torch::optim::Adam> opt_g_, opt_d_;
  std::unique_ptr<dist::GradientSync> sync_g_, sync_d_;
  LossScaler scaler_g_, scaler_d_;
  EarlyStopping early_stopping_;
  std::unique_ptr<RecognitionLoss> recognition_;    // --aux-classifier, on every rank
  std::unique_ptr<Validator> validator_;            // rank 0 only
  std::unique_ptr<metrics::RunDirectory> run_dir_;  // rank 0 only
  std::int64_t start_epoch_ = 0;
  std::int64_t global_step_ = 0;
  std::int64_t resume_step_ = 0;     // > 0: the first epoch continues an interrupted one here
  std::vector<double> resume_sums_;  // and its loss sums so far (EpochSums::to_checkpoint)
  double sync_seconds_ = 0;          // time spent in gradient averaging (reset at each epoch of run())
  StepPhases* phases_ = nullptr;     // bench --phases
  double baseline_psnr_ = 0;
  double real_recognition_ = std::numeric_limits<double>::quiet_NaN();  // rank 0, with recognition_
  double best_recognition_ = std::numeric_limits<double>::quiet_NaN();  // G(A)'s at the best epoch so far
  bool curves_failed_ = false;                                          // said why once; later failures are quiet
};

}  // namespace pix2pix::train
