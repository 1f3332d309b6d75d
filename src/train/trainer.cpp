// Trainer: construction (data, the model), the epoch loop, and the loop's part of checkpoints. The
// model's parts of checkpoints and --resume's choice and checks live in RunCheckpoints
// (run_checkpoints.cpp), the stop signals and rank 0's decision in StopProtocol
// (stop_protocol.cpp), the epoch's row, line, samples and curves in metrics::RunReport
// (metrics/run_report.cpp), the start-up table and summary in trainer_report.cpp, what stops a run
// before it could mislead (set-up signals, the memory floor, a run that cannot learn) in
// trainer_guards.cpp; the model's step in its own class (gan/, picked by the registry).
#include "pix2pix/train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "pix2pix/common/cpu_convolutions.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/progress.hpp"
#include "pix2pix/common/random.hpp"
#include "pix2pix/common/stopwatch.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/dist/device.hpp"
#include "pix2pix/dist/fused_activation.hpp"
#include "pix2pix/dist/recording_communicator.hpp"
#include "pix2pix/dist/step_graph.hpp"
#include "pix2pix/gan/model_registry.hpp"
#include "pix2pix/nets/sync_batch_norm.hpp"
#include "pix2pix/optim/update_group.hpp"
#include "pix2pix/train/replicas.hpp"
#include "pix2pix/train/shard_loader.hpp"
#include "pix2pix/train/stop_protocol.hpp"

namespace pix2pix::train {
namespace {

using Clock = std::chrono::steady_clock;

// Dropout draws: seeded per (step, rank) rather than carried in an RNG state, so a run resumed at
// any step, on any number of ranks, draws what an uninterrupted one would.
constexpr std::uint64_t kDropoutStream = 0x64726f70;  // "drop"
}  // namespace

Trainer::Trainer(const TrainOptions& options, torch::Device device, dist::Communicator& comm,
                 std::shared_ptr<const FaultHook> faults)
    : data_(options),
      loop_(options),
      run_(options),
      model_options_(options.model_options()),
      faults_(std::move(faults)),
      device_(device),
      comm_(comm),
      stop_(comm, watched(loop_, nullptr)) {
  optim::check_precision_supported(model_options_.update.precision, device_);
  // See Note [oneDNN's wrong input gradients]. The commands have done it already (and say so among
  // the kernels: dist::apply_convolution_settings); this is for library callers. Once per process.
  if (device_.is_cpu()) prepare_cpu_convolutions();
  // The command line checks every option (cli/options.hpp); these guard library callers.
  if (loop_.max_epochs < 1) throw UsageError("--max-epochs must be at least 1");
  if (loop_.val_every < 1) throw UsageError("--val-every must be at least 1");
  // Set-up can take minutes (opening the file, caching the shard): a stop request is honoured
  // between its phases and between cache blocks, not only at the first step.
  throw_if_interrupted("starting up");
  open_data();
  load_scoring_networks();
  build_model();
  throw_if_interrupted("building the networks");
  require_training_memory();
  // Dropout masks differ between ranks, as their data does.
  torch::manual_seed(mix_seed(data_.loader.seed, static_cast<std::uint64_t>(comm_.rank()) + 1));

  if (!run_.effective_config.empty())
    recorded_options_ = run_.effective_config + "data-contents = " + file_fingerprint(data_.data) + "\n";
  checkpoints_ = std::make_unique<RunCheckpoints>(run_, *model_, ema_.get(), device_, comm_, faults_.get());
  std::int64_t resumed_epoch = -1;
  if (!run_.resume.empty()) {
    resume_if_asked();
    resumed_epoch = start_epoch_ - 1;
  }
  throw_if_interrupted("resuming");
  // Replicas start identical: rank 0's state everywhere (initialised or resumed), then checked.
  broadcast_from_rank0(comm_, all_networks(), /*buffers_only=*/false);
  verify_replicas();
  if (comm_.rank() == 0) prepare_validation(resumed_epoch);
}

void Trainer::open_data() {
  dataset_ = data::PairedDataset::open(data_.data, data_.h5_driver);
  if (!dataset_->has_split(data::format::kVal) || dataset_->split(data::format::kVal).count == 0)
    throw Error(data_.data + ": the val split is missing or empty; validation and early stopping need it");
  check_data_for_model();
  stop_ = StopProtocol(comm_, watched(loop_, stop_on_content_ ? &*content_ : nullptr));
  throw_if_interrupted("opening " + data_.data);

  data::LoaderOptions lo = data_.loader;
  lo.on_cache_progress = cache_progress();
  lo.memory_format = optim::parameter_memory_format(model_options_.update, device_);
  loader_ = make_shard_loader(dataset_, lo, comm_, device_, run_.ranks_per_node);
  global_batch_ = lo.batch_size * comm_.world();
  loop_.lr.global_batch = global_batch_;
  loop_.lr.validate();
}

void Trainer::load_scoring_networks() {
  if (loop_.es_metric == EsMetric::accuracy && loop_.aux_classifier.empty())
    throw UsageError("--es-metric accuracy stops on the recognition accuracy of the --aux-classifier; give one");
  check_feature_options(loop_);
  if (!loop_.val_features.file.empty()) {
    // Every rank loads and checks it, as the classifier below: a file that is not a feature network
    // stops every rank before training. Only rank 0 runs it (it validates).
    val_features_ = std::make_unique<metrics::FeatureNetwork>(loop_.val_features, device_);
    throw_if_interrupted("loading " + loop_.val_features.file);
  }
  if (!loop_.aux_classifier.empty()) {
    // Every rank loads and checks it, so that every rank refuses a classifier that does not fit.
    if (!(loop_.lambda_aux >= 0 && std::isfinite(loop_.lambda_aux)))
      throw UsageError("--lambda-aux must be finite and >= 0");
    const checkpoint::TrainedOn size = trained_on();
    recognition_ = std::make_unique<gan::RecognitionLoss>(loop_.aux_classifier, loop_.lambda_aux, *dataset_,
                                                          size.height, size.width, device_);
    throw_if_interrupted("loading " + loop_.aux_classifier);
  }
}

void Trainer::build_model() {
  const auto& aug = loader_->augment();
  const auto& train_info = dataset_->split(data::format::kTrain);
  const auto& val_info = dataset_->split(data::format::kVal);
  gan::ModelInputs inputs;
  inputs.channels_a = train_info.channels_a;
  inputs.channels_b = train_info.channels_b;
  inputs.train_side =
      aug.preprocess == data::Preprocess::none ? std::min(train_info.height, train_info.width) : aug.crop_size;
  inputs.val_height = val_info.height;
  inputs.val_width = val_info.width;
  // On GPUs backward, and batch norm's sums with it, runs on LibTorch's device threads.
  sync_bn_ = nets::resolve_sync_bn(loop_.sync_bn, model_options_.norm == nets::Norm::batch, comm_.world(),
                                   device_.is_cpu() || comm_.device_collectives_from_any_thread(), comm_.name());
  if (sync_bn_)
    inputs.batch_stats_sum = [this](torch::Tensor& sums) {
      // Validation runs on rank 0 alone (in --val-mode train too): it normalises with its own batch.
      if (validating_) return;
      const auto start = Clock::now();
      comm_.allreduce_sum(sums);
      if (phases_) phases_->carve_bn_sync(seconds_since(start));
    };
  fused_kernels_ = dist::resolve_fused_kernels(
      loop_.fused_kernels, device_,
      optim::parameter_memory_format(model_options_.update, device_) == torch::MemoryFormat::ChannelsLast);
  inputs.fused_kernels = fused_kernels_;
  // Identical networks on every rank: the same seed before construction and initialisation.
  torch::manual_seed(data_.loader.seed);
  model_options_.update.lr = loop_.lr.lr_at(0);  // the first epoch's, with the global batch known now
  model_ = gan::make_gan_model(model_options_, inputs, device_, comm_, recognition_.get());
  if (loop_.ema_decay > 0) ema_ = std::make_unique<GeneratorEma>(*model_, loop_.ema_decay);
  CaptureConditions capture{dist::cuda_graph_unavailable(device_), true, model_->capture_refusal(),
                            dynamic_cast<dist::RecordingCommunicator*>(&comm_) != nullptr, false};
  for (optim::UpdateGroup* group : model_->update_groups())
    capture.updates_on_device = capture.updates_on_device && group->decides_on_device();
  if (resolve_cuda_graph(loop_.cuda_graph, capture))
    captured_ = std::make_unique<CapturedStep>(*model_, comm_, dist::make_cuda_step_graph(device_));
}

void Trainer::prepare_validation(std::int64_t resumed_epoch) {
  validator_ = std::make_unique<Validator>(*dataset_, loop_.val_batch_size, loop_.sample_count, device_,
                                           model_options_.update.precision, recognition_.get());
  if (recognition_) real_recognition_ = validator_->real_recognition();
  if (val_features_)
    validator_->measure_features(*val_features_, loop_.kid_subsets, loop_.kid_subset_size, data_.loader.seed);
  if (validator_->paired())
    baseline_psnr_ = validator_->baseline_psnr(metrics::mean_target_image(*dataset_, data::format::kTrain, 10000));
  throw_if_interrupted("reading the val split");
  report_ =
      std::make_unique<metrics::RunReport>(report_options(resumed_epoch), epoch_metrics(0, 0, EpochSums(0)).columns());
}

Trainer::~Trainer() = default;

checkpoint::TrainedOn Trainer::trained_on() const {
  const auto& info = dataset_->split(data::format::kTrain);
  const auto& aug = loader_->augment();
  checkpoint::TrainedOn t;
  t.height = aug.preprocess == data::Preprocess::none ? info.height : aug.crop_size;
  t.width = aug.preprocess == data::Preprocess::none ? info.width : aug.crop_size;
  t.val_mode = loop_.val_mode;
  t.samples_a = info.samples_a;
  t.samples_b = info.samples_b;
  return t;
}

void Trainer::set_learning_rate(double lr) {
  if (captured_) return captured_->set_learning_rate(lr);
  for (optim::UpdateGroup* group : model_->update_groups()) group->set_learning_rate(lr);
}

double Trainer::sync_seconds() const {
  double seconds = 0;
  for (optim::UpdateGroup* group : model_->update_groups()) seconds += group->sync_seconds();
  return seconds;
}

std::vector<gan::NamedNetwork> Trainer::all_networks() {
  std::vector<gan::NamedNetwork> networks = model_->networks();
  if (ema_)
    for (const gan::NamedNetwork& average : ema_->networks()) networks.push_back(average);
  return networks;
}

void Trainer::verify_replicas() {
  train::verify_replicas(comm_, all_networks(), global_step_);
}

void Trainer::set_phases(gan::StepPhases* phases) {
  if (phases != nullptr && captured_)
    throw UsageError("--cuda-graph on: " + cuda_graph_refusal({"", true, "", false, true}));
  phases_ = phases;
  model_->set_phases(phases);
}

gan::StepLosses Trainer::step(const data::Batch& batch) {
  gan::StepLosses losses = captured_ ? captured_->step(batch) : model_->step(batch);
  if (ema_) ema_->update();
  ++global_step_;
  return losses;
}

RunResult Trainer::stopped_by_signal(RunResult result, int signal, const std::string& where) const {
  result.stop_reason = "stopped by signal " + std::to_string(signal) + " " + where +
                       "; checkpoints/last.pt holds it, continue with --resume auto";
  result.exit_code = kExitInterrupted;
  if (comm_.rank() == 0) report_->log(result.stop_reason);
  return result;
}

// Note [the run loop on one page]: run() reads as the loop it is — an epoch's steps, its metrics,
// validation and the stop decision, the epoch's files — and each phase is a function of its own
// below it, so that what happens in which order is seen at once.
RunResult Trainer::run() {
  print_startup();
  RunResult result;
  result.last_epoch = start_epoch_ - 1;  // a resumed run that is already past --max-epochs trains none
  const auto run_start = Clock::now();
  clock_.start();
  std::int64_t images_seen = 0;
  Decision decision;  // the last validation's: its best epoch is the run's
  const auto stopped = [&](int signal, const std::string& where) {
    result.best_epoch = decision.best_epoch;
    result.best_smoothed = decision.best_smoothed;
    result.wall_seconds = seconds_since(run_start);
    return stopped_by_signal(result, signal, where);
  };
  for (std::int64_t epoch = start_epoch_; epoch < loop_.max_epochs; ++epoch) {
    const double lr = loop_.lr.lr_at(epoch);
    set_learning_rate(lr);
    const EpochSteps steps = train_epoch(epoch);
    if (steps.signal != 0) {
      save_interrupted(steps.sums.global(comm_));
      result.last_epoch = epoch - 1;
      return stopped(steps.signal,
                     "after step " + std::to_string(steps.sums.steps) + " of epoch " + std::to_string(epoch));
    }
    const EpochSums global = steps.sums.global(comm_);
    metrics::EpochMetrics m = epoch_metrics(epoch, lr, global);
    images_seen += add_epoch_times(m, steps, global.steps);
    fail_if_nothing_learned(epoch, global.steps - steps.first_step, steps.skipped, m);
    start_epoch_ = epoch + 1;  // this epoch is complete: what a checkpoint written now continues from

    // Batch-norm running statistics drift apart (each rank saw its own data): rank 0's, which it
    // is about to validate and save, become everyone's.
    broadcast_from_rank0(comm_, all_networks(), /*buffers_only=*/true);
    const bool validate = (epoch + 1) % loop_.val_every == 0 || epoch + 1 == loop_.max_epochs;
    const Decision d = validate ? validate_epoch(epoch, m) : Decision{};
    if (validate) decision = d;
    fail_if_not_finite(epoch, steps.skipped, validate && d.non_finite, m);
    checkpoints_->gather_pools();  // every rank: the checkpoints below keep them
    if (comm_.rank() == 0) write_epoch(m, validate, d);
    result.last_epoch = epoch;
    if (d.stop) {
      result.stop_reason = d.reason;
      break;
    }
    // Note [a stop between epochs]: a signal that came during validation or a checkpoint (the
    // step loop polls only between steps) stops the run here, after the epoch's checkpoint,
    // rather than one step into the next epoch; a run whose end this was ends as finished.
    if (epoch + 1 < loop_.max_epochs)
      if (const int signal = stop_.signal_of_any_rank(); signal != 0) {
        stop_.end_gracefully({});  // the epoch's last.pt is written
        return stopped(signal, "after epoch " + std::to_string(epoch));
      }
  }
  result.best_epoch = decision.best_epoch;
  result.best_smoothed = decision.best_smoothed;
  result.wall_seconds = seconds_since(run_start);
  result.images_per_second = static_cast<double>(images_seen) / std::max(result.wall_seconds, 1e-9);
  return finish(result);
}

Trainer::EpochSteps Trainer::train_epoch(std::int64_t epoch) {
  EpochSteps e;
  e.sums = EpochSums(model_->loss_names().size());
  // An epoch interrupted by a graceful stop continues where it stopped, with its sums so far.
  if (epoch == start_epoch_ && resume_step_ > 0) {
    e.sums = EpochSums::resumed(resume_losses_, resume_skipped_, resume_step_, model_->loss_names().size());
    resume_step_ = 0;
  }
  e.first_step = e.sums.steps;
  loader_->start_epoch(epoch, e.first_step);
  for (optim::UpdateGroup* group : model_->update_groups()) group->reset_sync_seconds();
  std::unique_ptr<Progress> bar;
  if (comm_.rank() == 0) {
    bar = std::make_unique<Progress>("epoch " + std::to_string(epoch), loader_->steps_per_epoch(), stdout,
                                     loop_.progress);
    bar->advance(e.first_step);
  }
  const auto epoch_start = Clock::now();
  for (;;) {
    auto t = Clock::now();
    auto batch = loader_->next();
    e.data_s += seconds_since(t);
    if (!batch) break;
    if (faults_) faults_->at(RunMoment::before_step, global_step_, comm_.rank(), {});  // a test's
    torch::manual_seed(mix_seed(data_.loader.seed ^ kDropoutStream, static_cast<std::uint64_t>(global_step_),
                                static_cast<std::uint64_t>(comm_.rank())));
    t = Clock::now();
    const gan::StepLosses losses = step(*batch);
    e.step_s += seconds_since(t);
    e.sums.add(losses);
    if (bar) {
      // See Note [no host reads in the step]: read only what is shown
      if (bar->draws_next()) bar->set_status(model_->progress_status(losses.host()));
      bar->advance();
    }
    if (loop_.check_replicas_every > 0 && global_step_ % loop_.check_replicas_every == 0) verify_replicas();
    // See Note [one stop protocol]: every rank polls at the same step boundary.
    if ((e.signal = stop_.signal_of_any_rank()) != 0) break;
  }
  if (bar) bar->finish();
  e.seconds = seconds_since(epoch_start);
  e.skipped = e.sums.skipped_by_group(model_->update_groups().size());
  return e;
}

std::int64_t Trainer::add_epoch_times(metrics::EpochMetrics& m, const EpochSteps& steps, std::int64_t global_steps) {
  const std::int64_t images = (global_steps - steps.first_step) * data_.loader.batch_size * comm_.world();
  m.images_per_s = static_cast<double>(images) / steps.seconds;
  m.data_s = steps.data_s;
  m.sync_s = sync_seconds();
  m.compute_s = steps.step_s - m.sync_s;
  return images;
}

Decision Trainer::validate_epoch(std::int64_t epoch, metrics::EpochMetrics& m) {
  if (faults_) faults_->at(RunMoment::validation, epoch, comm_.rank(), {});
  ValidationResult v;
  WatchedValue es_value{0, nullptr};
  if (comm_.rank() == 0) {
    validating_ = true;  // rank 0 alone: synchronised batch norm must not wait for the others
    v = validator_->run(validated_translator(), ema_ ? ema_->reverse_translator() : model_->reverse_translator(),
                        loop_.val_mode, content_ ? &*content_ : nullptr);
    validating_ = false;
    m.val_psnr = v.psnr, m.val_ssim = v.ssim, m.val_l1 = v.l1;
    m.val_content_psnr = v.content_psnr;
    m.val_fid = v.fid, m.val_kid = v.kid;
    m.val_recognition = last_recognition_ = v.recognition;
    es_value = watched_value(loop_.es_metric, stop_on_content_, v, m);
  }
  const Decision d = stop_.decide(epoch, es_value.value);
  if (comm_.rank() == 0) {
    *es_value.smoothed = d.smoothed;
    if (d.improved) best_recognition_ = v.recognition;
    if (v.sample_grid.defined()) report_->samples(epoch, v.sample_grid);
  }
  return d;
}

void Trainer::write_epoch(metrics::EpochMetrics& m, bool validated, const Decision& d) {
  m.train_s = clock_.train_seconds();
  m.wall_s = clock_.wall_seconds();
  report_->epoch(m);
  checkpoints_->save_epoch(state(), validated && d.improved);
  // After the checkpoints: a preemption while the curves are drawn must not cost the epoch.
  if (validated) report_->curves(d.best_epoch, -1);
}

checkpoint::TrainingState Trainer::state() const {
  checkpoint::TrainingState s;
  s.epoch = start_epoch_ - 1;
  s.global_step = global_step_;
  s.early_stopping = stop_.rule().serialize();
  s.world = comm_.world();
  s.global_batch = global_batch_;
  s.train_seconds = clock_.train_seconds();
  s.wall_seconds = clock_.wall_seconds();
  s.trained_on = trained_on();
  s.recognition = recognition_ ? recognition_->identity() : "";
  s.best_recognition = best_recognition_;
  s.es_metric = to_string(loop_.es_metric);
  s.options = recorded_options_;
  return s;
}

void Trainer::save_interrupted(const EpochSums& global_sums) {
  checkpoints_->gather_pools();
  stop_.end_gracefully([&] {
    checkpoint::TrainingState s = state();
    s.step_in_epoch = global_sums.steps;
    if (global_sums.unread.defined()) throw Error("save_interrupted: sums not read yet (checkpoint global() ones)");
    s.epoch_losses = global_sums.losses;
    s.epoch_skipped = global_sums.skipped;
    checkpoints_->save("last.pt", s);
  });
}

void Trainer::resume_if_asked() {
  std::string path;
  const auto s = checkpoints_->resume(state(), path);
  if (!s) return;
  best_recognition_ = s->best_recognition;
  clock_.continue_from(s->train_seconds, s->wall_seconds);
  start_epoch_ = s->epoch + 1;
  global_step_ = s->global_step;
  stop_.rule().restore(s->early_stopping);
  resume_step_ = s->step_in_epoch;
  resume_losses_ = s->epoch_losses;
  resume_skipped_ = s->epoch_skipped;
  // Same samples seen, counted in another global batch: the nearest step, not an exact match.
  if (s->step_in_epoch > 0 && s->global_batch != global_batch_)
    resume_step_ = std::min(loader_->steps_per_epoch(), s->step_in_epoch * s->global_batch / global_batch_);
  print_resumed(*s, path);
}

RunResult Trainer::finish(RunResult result) {
  if (result.stop_reason.empty()) result.stop_reason = "reached --max-epochs " + std::to_string(loop_.max_epochs);
  result.baseline_psnr = baseline_psnr_;
  result.watched = stop_.rule().options().metric;
  result.best_recognition = best_recognition_;
  result.real_recognition = real_recognition_;
  if (comm_.rank() == 0 && result.best_epoch < 0 && result.last_epoch >= 0) {
    // Fewer evaluations than --es-window: no smoothed PSNR, so no best. Users still expect a
    // model to deploy; the final one is the only candidate, and the summary says so.
    best_recognition_ = result.best_recognition = last_recognition_;
    checkpoints_->save_best(state());
    result.stop_reason += "; fewer evaluations than --es-window, so best_generator.pt is the final model";
  }
  if (comm_.rank() == 0) {
    write_summary(result);
    report_->curves(result.best_epoch, result.last_epoch);
  }
  return result;
}

}  // namespace pix2pix::train
