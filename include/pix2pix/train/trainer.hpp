// The run loop every model shares (gan_model.hpp): data → the model's step (which averages its
// gradients and steps its optimisers), then rank 0 validates what the model translates, applies
// early stopping, writes the run directory and checkpoints, and the decision reaches every rank
// through the Communicator. It knows the model only through GanModel: its networks, update
// groups, loss names and shape.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "pix2pix/checkpoint/checkpoint.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/gan/gan_model.hpp"
#include "pix2pix/gan/model_registry.hpp"
#include "pix2pix/gan/recognition_loss.hpp"
#include "pix2pix/gan/step_phases.hpp"
#include "pix2pix/metrics/run_report.hpp"
#include "pix2pix/metrics/time_to_quality.hpp"
#include "pix2pix/train/captured_step.hpp"
#include "pix2pix/train/epoch_sums.hpp"
#include "pix2pix/train/generator_ema.hpp"
#include "pix2pix/train/run_checkpoints.hpp"
#include "pix2pix/train/stop_protocol.hpp"
#include "pix2pix/train/test_faults.hpp"
#include "pix2pix/train/train_options.hpp"
#include "pix2pix/train/validator.hpp"

namespace pix2pix::train {

// How a run ended; its exit_code is 0, or kExitInterrupted (stop_protocol.hpp) after a signal
// (docs/training.md lists `pix2pix train`'s exit statuses).
struct RunResult {
  std::string stop_reason;
  int exit_code = 0;
  std::int64_t last_epoch = -1;
  std::int64_t best_epoch = -1;
  double best_smoothed = 0;  // the best smoothed value of what --es-metric watches
  double wall_seconds = 0;
  double images_per_second = 0;
  double baseline_psnr = 0;  // val PSNR of predicting the mean training image (rank 0; NaN: unpaired val)
  std::string watched;       // what early stopping watched ("validation PSNR", ...)
  // With --aux-classifier (rank 0; NaN without): the classifier's accuracy on G(A) of the val
  // split at the best epoch, and on the real B images (the ceiling).
  double best_recognition = std::numeric_limits<double>::quiet_NaN();
  double real_recognition = std::numeric_limits<double>::quiet_NaN();
};

class Trainer {
 public:
  // `faults`: a test's (See Note [test fault injection]); none in production.
  Trainer(const TrainOptions& options, torch::Device device, dist::Communicator& comm,
          std::shared_ptr<const FaultHook> faults = nullptr);
  ~Trainer();

  RunResult run();
  // One optimisation step on a batch (public so that tests and benchmarks can drive it).
  gan::StepLosses step(const data::Batch& batch);

  gan::GanModel& model() { return *model_; }
  GeneratorEma* ema() { return ema_.get(); }  // --ema-decay's average (null without)
  const data::BatchLoader& loader() const { return *loader_; }
  data::BatchLoader& loader() { return *loader_; }  // benchmarks drive step() themselves
  // Time spent averaging gradients, all update groups (reset at each epoch of run()).
  double sync_seconds() const;
  // Charge each phase of every later step to `phases` (nullptr: stop); bench --phases. UsageError
  // with --cuda-graph on (a replay has no phases).
  void set_phases(gan::StepPhases* phases);
  const CapturedStep* captured_step() const { return captured_.get(); }  // --cuda-graph on (else null)
  bool fused_kernels() const { return fused_kernels_; }                  // --fused-kernels as resolved for this run
  std::int64_t global_batch() const { return global_batch_; }
  checkpoint::TrainedOn trained_on() const;  // what inference needs: the trained image size, the val mode
  // Checksums of every parameter agree on all ranks; Error naming the first that differs.
  void verify_replicas();

 private:
  // The phases of construction, in order: the file and its checks against the model, this rank's
  // loader and the global batch; --val-features and --aux-classifier, on every rank; batch norm
  // over ranks, the fused kernels, the model, --ema-decay's average and --cuda-graph's step; rank
  // 0's validator, its baselines and the run's report.
  void open_data();
  void load_scoring_networks();
  void build_model();
  void prepare_validation(std::int64_t resumed_epoch);
  void set_learning_rate(double lr);
  // The model's networks and, with --ema-decay, the averages: what ranks broadcast and check.
  std::vector<gan::NamedNetwork> all_networks();
  // What validation runs and best_generator.pt holds: the average with --ema-decay, else the model's.
  nets::Generator& validated_translator() { return ema_ ? ema_->translator() : model_->translator(); }
  // trainer_guards.cpp: error naming the memory budget when it cannot hold the training state
  // (See Note [training memory floor]).
  void require_training_memory() const;
  // The data against the model: pairs for a model that learns from pairs, and what scores the val
  // split (content_, stop_on_content_). UsageError naming the file otherwise (trainer_guards.cpp).
  void check_data_for_model();
  // trainer_guards.cpp: rank 0's progress bar and every rank's stop check while the loader fills its cache.
  std::function<void(std::int64_t, std::int64_t)> cache_progress() const;
  // trainer_guards.cpp: Error (after rank 0 logs the epoch) when an update group received no
  // update in a whole epoch; `skipped`: this epoch's skipped updates per group.
  void fail_if_nothing_learned(std::int64_t epoch, std::int64_t steps, const std::vector<std::int64_t>& skipped,
                               const metrics::EpochMetrics& m);
  // trainer_guards.cpp: Error (after rank 0 logs the epoch) when a loss of the epoch is NaN or
  // infinite outside the loss scaler's skipped steps, or when the validation's watched value is
  // (`val_not_finite`, rank 0's word). See Note [non-finite values stop a run].
  void fail_if_not_finite(std::int64_t epoch, const std::vector<std::int64_t>& skipped, bool val_not_finite,
                          const metrics::EpochMetrics& m);
  // The loop's part of a checkpoint (its counters, early stopping, clocks, what it trained on), at
  // the end of epoch start_epoch_ - 1; checkpoints_ adds the model's.
  checkpoint::TrainingState state() const;
  void save_interrupted(const EpochSums& global_sums);  // every rank; rank 0 writes last.pt mid-epoch
  // --resume: the model's parts through checkpoints_, the loop's counters here.
  void resume_if_asked();
  void print_resumed(const checkpoint::TrainingState& s, const std::string& path) const;  // trainer_report.cpp
  // Exit 75 with "stopped by signal S <where>" (logged by rank 0); last.pt is written.
  RunResult stopped_by_signal(RunResult result, int signal, const std::string& where) const;
  // The phases of run() (See Note [the run loop on one page]).
  struct EpochSteps {
    EpochSums sums{0};                  // this rank's; global() sums every rank's
    std::int64_t first_step = 0;        // > 0: the epoch continued an interrupted one from this step
    std::vector<std::int64_t> skipped;  // per update group: this process's steps that left it unchanged
    double data_s = 0, step_s = 0, seconds = 0;
    int signal = 0;  // not 0: a stop signal reached some rank, and the steps stopped there
  };
  // The epoch's steps, continuing an interrupted one; they stop early at a stop signal.
  EpochSteps train_epoch(std::int64_t epoch);
  // The epoch's throughput and times into `m`; the images it trained on, all ranks.
  std::int64_t add_epoch_times(metrics::EpochMetrics& m, const EpochSteps& steps, std::int64_t global_steps);
  // Rank 0 validates (its scores into `m`) and updates early stopping; every rank gets its decision.
  Decision validate_epoch(std::int64_t epoch, metrics::EpochMetrics& m);
  // Rank 0: the epoch's metrics row and line, best.pt when it improved, last.pt, --keep-last, curves.
  void write_epoch(metrics::EpochMetrics& m, bool validated, const Decision& d);
  // The end of a run that reached its last epoch or the stop rule: the summary, and the final model
  // as the best where no best was found.
  RunResult finish(RunResult result);
  void print_startup() const;                   // trainer_report.cpp
  std::string batch_norm_line() const;          // trainer_report.cpp: what the batch norm layers normalise over
  void write_summary(const RunResult& result);  // trainer_report.cpp: summary.json, train.log
  std::string es_metric_name() const;           // summary.json's "es_metric" (trainer_report.cpp)
  std::string watched_name() const;             // the X of the watched column val_X_smoothed
  // trainer_report.cpp: what report_ needs to know of this run (rank 0).
  metrics::ReportOptions report_options(std::int64_t resumed_epoch) const;
  // The metrics of an epoch before validation: its losses, scales and times.
  metrics::EpochMetrics epoch_metrics(std::int64_t epoch, double lr, const EpochSums& global) const;

  // The options, by the part of the run that reads them (train_options.hpp); the model's go to it.
  DataOptions data_;
  LoopOptions loop_;
  RunOptions run_;
  gan::ModelOptions model_options_;
  std::shared_ptr<const FaultHook> faults_;
  torch::Device device_;
  dist::Communicator& comm_;
  std::shared_ptr<const data::PairedDataset> dataset_;
  std::unique_ptr<data::BatchLoader> loader_;
  std::int64_t global_batch_ = 1;
  std::unique_ptr<gan::RecognitionLoss> recognition_;  // --aux-classifier, on every rank (before model_: it uses it)
  std::unique_ptr<metrics::FeatureNetwork> val_features_;  // --val-features, loaded on every rank, run on rank 0
  std::unique_ptr<gan::GanModel> model_;
  std::unique_ptr<GeneratorEma> ema_;            // --ema-decay, on every rank
  std::unique_ptr<CapturedStep> captured_;       // --cuda-graph on: the model's step as a CUDA graph
  std::unique_ptr<RunCheckpoints> checkpoints_;  // the model's parts in checkpoint files (after model_, ema_)
  StopProtocol stop_;                     // stop signals and rank 0's early stopping (See Note [one stop protocol])
  std::unique_ptr<Validator> validator_;  // rank 0 only
  std::unique_ptr<metrics::RunReport> report_;  // rank 0 only: the run directory, TensorBoard, the epoch line
  std::int64_t start_epoch_ = 0;
  std::int64_t global_step_ = 0;
  std::int64_t resume_step_ = 0;       // > 0: the first epoch continues an interrupted one here
  std::vector<double> resume_losses_;  // and its loss sums so far (EpochSums::global ones)
  std::int64_t resume_skipped_ = 0;
  double baseline_psnr_ = std::numeric_limits<double>::quiet_NaN();  // rank 0, when the val split is paired
  std::optional<gan::ContentScore> content_;  // the model's score beside G(A) against B (none: null)
  bool stop_on_content_ = false;              // the val split is unpaired: early stopping watches content_
  double real_recognition_ = std::numeric_limits<double>::quiet_NaN();  // rank 0, with recognition_
  double best_recognition_ = std::numeric_limits<double>::quiet_NaN();  // G(A)'s at the best epoch so far
  double last_recognition_ = std::numeric_limits<double>::quiet_NaN();  // and at the last validation
  // --sync-bn as decided for this run (See Note [synchronised batch norm]), and whether rank 0 is
  // validating alone, when the batch-norm sums stay on this rank.
  bool sync_bn_ = false;
  bool fused_kernels_ = false;  // --fused-kernels resolved (dist/fused_activation.hpp)
  bool validating_ = false;
  gan::StepPhases* phases_ = nullptr;  // bench --phases: where the batch-norm sums' time goes
  // What checkpoints record of the options (TrainingState::options): the effective config and
  // the data file's fingerprint; "" when the caller gave no effective config.
  std::string recorded_options_;
  metrics::RunClock clock_;  // the run's time over all its sessions (See Note [time to quality])
};

}  // namespace pix2pix::train
