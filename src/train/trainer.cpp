// Trainer: construction (data, networks, optimisers), the step, and the epoch loop.
// Checkpoints and resuming live in trainer_checkpoint.cpp, replica broadcast/checks in
// trainer_replicas.cpp, the start-up table and summary in trainer_report.cpp, what stops a run
// before it could mislead (set-up signals, the memory floor, a run that cannot learn) in
// trainer_guards.cpp.
#include "pix2pix/train/trainer.hpp"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/progress.hpp"
#include "pix2pix/common/random.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/dist/device.hpp"
#include "pix2pix/model/model_shape.hpp"
#include "pix2pix/model/reference_state_dict.hpp"
#include "pix2pix/train/fused_adam.hpp"
#include "pix2pix/train/shard_loader.hpp"
#include "pix2pix/train/torch_compat.hpp"

namespace pix2pix::train {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void set_requires_grad(torch::nn::Module& module, bool flag) {
  for (auto& p : module.parameters()) p.set_requires_grad(flag);
}

// Dropout draws: seeded per (step, rank) rather than carried in an RNG state, so a run resumed at
// any step, on any number of ranks, draws what an uninterrupted one would.
constexpr std::uint64_t kDropoutStream = 0x64726f70;  // "drop"

// The early-stopping options with the name and unit of what --es-metric watches.
EarlyStoppingOptions watched(const TrainOptions& o) {
  EarlyStoppingOptions e = o.early_stopping;
  if (o.es_metric == EsMetric::accuracy) {
    e.metric = "recognition accuracy of G(A)";
    e.unit = "";
  }
  return e;
}

// Decision from rank 0 to every rank: [stop, improved, best_epoch, best_smoothed].
torch::Tensor encode(const Decision& d) {
  return torch::tensor({d.stop ? 1.0 : 0.0, d.improved ? 1.0 : 0.0, static_cast<double>(d.best_epoch), d.best_smoothed},
                       torch::kFloat64);
}

}  // namespace

namespace {
const Choices<ValMode> kValModeChoices = {{"eval", ValMode::eval}, {"train", ValMode::train}};
const Choices<EsMetric> kEsMetricChoices = {{"psnr", EsMetric::psnr}, {"accuracy", EsMetric::accuracy}};
}  // namespace

EsMetric parse_es_metric(const std::string& text) {
  return parse_choice(text, "--es-metric", kEsMetricChoices);
}
std::string to_string(EsMetric value) {
  return choice_name(value, kEsMetricChoices);
}

ValMode parse_val_mode(const std::string& text) {
  return parse_choice(text, "--val-mode", kValModeChoices);
}
std::string to_string(ValMode value) {
  return choice_name(value, kValModeChoices);
}

Trainer::Trainer(TrainOptions options, torch::Device device, dist::Communicator& comm)
    : options_(std::move(options)),
      device_(device),
      comm_(comm),
      scaler_g_({options_.precision == Precision::fp16 || options_.force_loss_scaling}),
      scaler_d_({options_.precision == Precision::fp16 || options_.force_loss_scaling}),
      early_stopping_(watched(options_)) {
  check_precision_supported(options_.precision, device_);
  // Note [oneDNN's padded channels]: CPU training on LibTorch 2.x needs it for finite gradients.
  if (device_.is_cpu()) compat::zero_fill_cpu_allocations();
  // The command line checks every option (cli/options.hpp); these guard library callers.
  if (options_.max_epochs < 1) throw UsageError("--max-epochs must be at least 1");
  if (options_.val_every < 1) throw UsageError("--val-every must be at least 1");
  if (!(options_.lambda_l1 >= 0 && std::isfinite(options_.lambda_l1)))
    throw UsageError("--lambda-l1 must be finite and >= 0");
  // Set-up can take minutes (opening the file, caching the shard): a stop request is honoured
  // between its phases and between cache blocks, not only at the first step.
  throw_if_interrupted("starting up");
  dataset_ = data::PairedDataset::open(options_.data, options_.h5_driver);
  const auto& train_info = dataset_->split(data::format::kTrain);
  if (!dataset_->has_split(data::format::kVal) || dataset_->split(data::format::kVal).count == 0)
    throw Error(options_.data + ": the val split is missing or empty; validation and early stopping need it");
  throw_if_interrupted("opening " + options_.data);

  data::LoaderOptions lo = options_.loader;
  lo.on_cache_progress = cache_progress();
  loader_ = make_shard_loader(dataset_, lo, comm_, device_, options_.ranks_per_node);
  global_batch_ = lo.batch_size * comm_.world();
  options_.lr.global_batch = global_batch_;
  options_.lr.validate();
  if (options_.es_metric == EsMetric::accuracy && options_.aux_classifier.empty())
    throw UsageError("--es-metric accuracy stops on the recognition accuracy of the --aux-classifier; give one");
  if (!options_.aux_classifier.empty()) {
    // Every rank loads and checks it, so that every rank refuses a classifier that does not fit.
    if (!(options_.lambda_aux >= 0 && std::isfinite(options_.lambda_aux)))
      throw UsageError("--lambda-aux must be finite and >= 0");
    const TrainedOn size = trained_on();
    recognition_ = std::make_unique<RecognitionLoss>(options_.aux_classifier, options_.lambda_aux, *dataset_,
                                                     size.height, size.width, device_);
    throw_if_interrupted("loading " + options_.aux_classifier);
  }

  const auto& aug = loader_->augment();
  const std::int64_t side =
      aug.preprocess == data::Preprocess::none ? std::min(train_info.height, train_info.width) : aug.crop_size;
  if (options_.num_downs == 0) options_.num_downs = model::unet_depth_for(side);
  model::patch_output_side(side, options_.n_layers_d);
  const std::int64_t multiple = std::int64_t{1} << options_.num_downs;
  const auto& val_info = dataset_->split(data::format::kVal);
  if (val_info.height % multiple != 0 || val_info.width % multiple != 0)
    throw Error("val images are " + std::to_string(val_info.height) + "x" + std::to_string(val_info.width) +
                ", not a multiple of 2^" + std::to_string(options_.num_downs) + " that the generator needs");

  // Identical networks on every rank: the same seed before construction and initialisation.
  torch::manual_seed(options_.loader.seed);
  generator_ = model::UnetGenerator(model::GeneratorOptions{
      train_info.channels_a, train_info.channels_b, options_.num_downs, options_.ngf, options_.norm, options_.dropout});
  discriminator_ = model::PatchDiscriminator(model::DiscriminatorOptions{
      train_info.channels_a + train_info.channels_b, options_.ndf, options_.n_layers_d, options_.norm});
  model::init_weights(*generator_);
  model::init_weights(*discriminator_);
  // --init-generator/--init-discriminator (e.g. weights the PyTorch reference trained): every rank
  // reads the file, so a bad one fails every rank alike; a resumed run then replaces them.
  const auto& init_g = options_.init_generator;
  const auto& init_d = options_.init_discriminator;
  if (!init_g.empty()) model::load_state_dict(*generator_, model::read_torch_state_dict(init_g), init_g);
  if (!init_d.empty()) model::load_state_dict(*discriminator_, model::read_torch_state_dict(init_d), init_d);
  generator_->to(device_);
  discriminator_->to(device_);
  throw_if_interrupted("building the networks");
  require_training_memory();
  // Dropout masks differ between ranks, as their data does.
  torch::manual_seed(mix_seed(options_.loader.seed, static_cast<std::uint64_t>(comm_.rank()) + 1));

  const auto adam = torch::optim::AdamOptions(options_.lr.lr_at(0)).betas({options_.beta1, options_.beta2});
  opt_g_ = std::make_unique<FusedAdam>(generator_->parameters(), adam);
  opt_d_ = std::make_unique<FusedAdam>(discriminator_->parameters(), adam);
  const bool overlap = options_.overlap_grad_sync.value_or(device_.is_cuda());
  sync_g_ = std::make_unique<dist::GradientSync>(comm_, generator_->parameters(), options_.bucket_bytes, overlap,
                                                 options_.grad_wire_dtype);
  sync_d_ = std::make_unique<dist::GradientSync>(comm_, discriminator_->parameters(), options_.bucket_bytes, overlap,
                                                 options_.grad_wire_dtype);

  std::int64_t resumed_epoch = -1;
  if (!options_.resume.empty()) {
    resume_if_asked();
    resumed_epoch = start_epoch_ - 1;
  }
  throw_if_interrupted("resuming");
  // Replicas start identical: rank 0's state everywhere (initialised or resumed), then checked.
  broadcast_model(/*buffers_only=*/false);
  verify_replicas();
  if (comm_.rank() == 0) {
    validator_ = std::make_unique<Validator>(*dataset_, options_.val_batch_size, options_.sample_count, device_,
                                             options_.precision, recognition_.get());
    if (recognition_) real_recognition_ = validator_->real_recognition();
    baseline_psnr_ = validator_->baseline_psnr(mean_target_image(*dataset_, data::format::kTrain, 10000));
    throw_if_interrupted("reading the val split");
    run_dir_ = std::make_unique<metrics::RunDirectory>(options_.run_dir, resumed_epoch);
    run_dir_->write_config(options_.effective_config);
  }
}

Trainer::~Trainer() = default;

std::string Trainer::model_shape() const {
  return model::describe_model_shape(generator_->options(), discriminator_->options());
}

TrainedOn Trainer::trained_on() const {
  const auto& info = dataset_->split(data::format::kTrain);
  const auto& aug = loader_->augment();
  TrainedOn t;
  t.height = aug.preprocess == data::Preprocess::none ? info.height : aug.crop_size;
  t.width = aug.preprocess == data::Preprocess::none ? info.width : aug.crop_size;
  t.val_mode = options_.val_mode;
  return t;
}

void Trainer::set_learning_rate(double lr) {
  for (auto* opt : {opt_g_.get(), opt_d_.get()})
    for (auto& group : opt->param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
}

void Trainer::end_phase(StepPhase phase) {
  if (phases_ != nullptr) phases_->end(phase);
}

StepLosses Trainer::step(const data::Batch& batch) {
  StepLosses out;
  const auto& a = batch.a;
  const auto& b = batch.b;
  if (phases_ != nullptr) phases_->begin();
  torch::Tensor fake_b;
  {
    AutocastGuard autocast(device_, options_.precision);
    fake_b = generator_->forward(a);
  }
  end_phase(StepPhase::forward_g);

  // D: real pairs towards 1, generated pairs towards 0.
  set_requires_grad(*discriminator_, true);
  sync_d_->zero_grad();
  torch::Tensor pred_fake, pred_real;
  {
    AutocastGuard autocast(device_, options_.precision);
    pred_fake = discriminator_->forward(torch::cat({a, fake_b.detach()}, 1));
    pred_real = discriminator_->forward(torch::cat({a, b}, 1));
  }
  const auto loss_d =
      0.5 * (gan_loss(pred_fake, false, options_.gan_mode) + gan_loss(pred_real, true, options_.gan_mode));
  (loss_d * scaler_d_.scale()).backward();
  end_phase(StepPhase::d_step);
  auto sync_start = Clock::now();
  sync_d_->average();
  sync_seconds_ += seconds_since(sync_start);
  end_phase(StepPhase::d_sync);
  const bool bad_d = unscale_and_check(discriminator_->parameters(), scaler_d_.scale());
  out.skipped_d = !scaler_d_.update(bad_d);
  if (!out.skipped_d) opt_d_->step();
  end_phase(StepPhase::d_optimizer);

  // G: fool D, and stay close to B in L1.
  set_requires_grad(*discriminator_, false);
  sync_g_->zero_grad();
  torch::Tensor pred;
  {
    AutocastGuard autocast(device_, options_.precision);
    pred = discriminator_->forward(torch::cat({a, fake_b}, 1));
  }
  const auto loss_g_gan = gan_loss(pred, true, options_.gan_mode);
  const auto loss_g_l1 = pixel_l1_loss(fake_b, b) * options_.lambda_l1;
  torch::Tensor loss_g = loss_g_gan + loss_g_l1, loss_g_aux;
  if (recognition_) {
    if (!batch.labels.defined()) throw Error(options_.data + ": a train batch without labels");
    loss_g_aux =
        (*recognition_)(fake_b, batch.labels, options_.precision);  // Note [recognition loss over the global batch]
    loss_g = loss_g + loss_g_aux;
  } else {
    loss_g_aux = torch::zeros({}, loss_g_l1.options());
  }
  (loss_g * scaler_g_.scale()).backward();
  end_phase(StepPhase::g_step);
  sync_start = Clock::now();
  sync_g_->average();
  sync_seconds_ += seconds_since(sync_start);
  end_phase(StepPhase::g_sync);
  const bool bad_g = unscale_and_check(generator_->parameters(), scaler_g_.scale());
  out.skipped_g = !scaler_g_.update(bad_g);
  if (!out.skipped_g) opt_g_->step();
  set_requires_grad(*discriminator_, true);
  end_phase(StepPhase::g_optimizer);

  // Note [no host reads in the step]
  out.values = torch::stack({loss_d.detach().to(torch::kFloat64), loss_g_gan.detach().to(torch::kFloat64),
                             loss_g_l1.detach().to(torch::kFloat64), loss_g_aux.detach().to(torch::kFloat64)});
  ++global_step_;
  return out;
}

void Trainer::inject_test_faults() const {
  if (comm_.rank() != options_.fail_rank) return;
  if (global_step_ == options_.fail_at_step) {
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::fprintf(stderr, "rank %d: --fail-at-step %lld: dying now (test fault injection) at unix time %.3f\n",
                 comm_.rank(), static_cast<long long>(global_step_), now);
    std::fflush(stderr);
    std::raise(SIGKILL);
  }
  if (global_step_ == options_.signal_at_step) std::raise(SIGUSR1);  // as `scancel --signal=USR1` would
}

RunResult Trainer::run() {
  print_startup();
  RunResult result;
  result.last_epoch = start_epoch_ - 1;  // a resumed run that is already past --max-epochs trains none
  const auto run_start = Clock::now();
  std::int64_t images_seen = 0;
  Decision decision;
  double last_recognition = kNaN;  // G(A)'s at the last validation (--aux-classifier)
  for (std::int64_t epoch = start_epoch_; epoch < options_.max_epochs; ++epoch) {
    const double lr = options_.lr.lr_at(epoch);
    set_learning_rate(lr);
    // An epoch interrupted by a graceful stop continues where it stopped, with its sums so far.
    EpochSums sums;
    if (epoch == start_epoch_ && resume_step_ > 0) {
      sums = EpochSums::from_checkpoint(resume_sums_, resume_step_);
      resume_step_ = 0;
    }
    const std::int64_t first_step = sums.steps;
    std::int64_t skipped_d = 0, skipped_g = 0;  // this process's steps of the epoch that left a network unchanged
    loader_->start_epoch(epoch, first_step);
    sync_seconds_ = 0;
    double data_s = 0, step_s = 0;
    std::unique_ptr<Progress> bar;
    if (comm_.rank() == 0) {
      bar = std::make_unique<Progress>("epoch " + std::to_string(epoch), loader_->steps_per_epoch(), stdout,
                                       options_.progress);
      bar->advance(first_step);
    }
    const auto epoch_start = Clock::now();
    for (;;) {
      auto t = Clock::now();
      auto batch = loader_->next();
      data_s += seconds_since(t);
      if (!batch) break;
      inject_test_faults();
      torch::manual_seed(mix_seed(options_.loader.seed ^ kDropoutStream, static_cast<std::uint64_t>(global_step_),
                                  static_cast<std::uint64_t>(comm_.rank())));
      t = Clock::now();
      const StepLosses losses = step(*batch);
      step_s += seconds_since(t);
      sums.add(losses);
      skipped_d += losses.skipped_d ? 1 : 0;
      skipped_g += losses.skipped_g ? 1 : 0;
      if (bar) {
        if (bar->draws_next()) {  // Note [no host reads in the step]: read only what is shown
          const auto shown = losses.values.to(torch::kCPU);
          const double* value = shown.data_ptr<double>();
          char status[128];
          std::snprintf(status, sizeof(status), "D %.3f G %.3f L1 %.3f", value[0], value[1], value[2]);
          bar->set_status(status);
        }
        bar->advance();
      }
      if (options_.check_replicas_every > 0 && global_step_ % options_.check_replicas_every == 0) verify_replicas();
      // Every rank polls its flag at the same step boundary; one max all-reduce makes the stop
      // collective, so a signal that reached only some ranks stops all of them here.
      if (comm_.any(interrupt_requested())) {
        if (bar) bar->finish();
        save_interrupted(sums.global(comm_));
        result.stop_reason = "stopped by signal " + std::to_string(interrupt_signal()) + " after step " +
                             std::to_string(sums.steps) + " of epoch " + std::to_string(epoch) +
                             "; checkpoints/last.pt holds it, continue with --resume auto";
        result.exit_code = kExitInterrupted;
        result.last_epoch = epoch - 1;
        result.best_epoch = decision.best_epoch;
        result.best_smoothed = decision.best_smoothed;
        result.wall_seconds = seconds_since(run_start);
        if (comm_.rank() == 0) run_dir_->log(result.stop_reason);
        return result;
      }
    }
    if (bar) bar->finish();
    const double epoch_s = seconds_since(epoch_start);
    const EpochSums global = sums.global(comm_);
    const double n = static_cast<double>(std::max<std::int64_t>(global.steps, 1));
    metrics::EpochMetrics m;
    m.epoch = epoch;
    m.step = global_step_;
    m.lr = lr;
    m.loss_d = global.loss_d / n;
    m.loss_g_gan = global.loss_g_gan / n;
    m.loss_g_l1 = global.loss_g_l1 / n;
    m.loss_g_aux = recognition_ ? global.loss_g_aux / n : kNaN;
    m.skipped_steps = global.skipped;
    const std::int64_t epoch_images = (global.steps - first_step) * options_.loader.batch_size * comm_.world();
    images_seen += epoch_images;
    m.images_per_s = static_cast<double>(epoch_images) / epoch_s;
    m.data_s = data_s;
    m.sync_s = sync_seconds_;
    m.compute_s = step_s - sync_seconds_;
    m.scale_g = scaler_g_.scale();
    m.scale_d = scaler_d_.scale();
    m.val_psnr = m.val_psnr_smoothed = m.val_ssim = m.val_l1 = kNaN;
    m.val_recognition = m.val_recognition_smoothed = kNaN;
    fail_if_nothing_learned(epoch, global.steps - first_step, skipped_d, skipped_g, m);
    start_epoch_ = epoch + 1;  // this epoch is complete: what a checkpoint written now continues from

    // Batch-norm running statistics drift apart (each rank saw its own data): rank 0's, which it
    // is about to validate and save, become everyone's.
    broadcast_model(/*buffers_only=*/true);
    const bool validate = (epoch + 1) % options_.val_every == 0 || epoch + 1 == options_.max_epochs;
    Decision d;
    if (validate && comm_.rank() == 0) {
      const ValidationResult v = validator_->run(generator_, options_.val_mode);
      const bool on_accuracy = options_.es_metric == EsMetric::accuracy;
      d = early_stopping_.update(epoch, on_accuracy ? v.recognition : v.psnr);
      m.val_psnr = v.psnr;
      (on_accuracy ? m.val_recognition_smoothed : m.val_psnr_smoothed) = d.smoothed;
      m.val_ssim = v.ssim;
      m.val_l1 = v.l1;
      m.val_recognition = last_recognition = v.recognition;
      if (d.improved) best_recognition_ = v.recognition;
      if (v.sample_grid.defined()) run_dir_->write_sample(epoch, v.sample_grid);
      if (d.non_finite) run_dir_->log("epoch " + std::to_string(epoch) + ": validation PSNR is not finite");
    }
    if (validate) {
      auto message = encode(d);
      comm_.broadcast(message, 0);
      d.stop = message[0].item<double>() > 0;
      d.improved = message[1].item<double>() > 0;
      d.best_epoch = static_cast<std::int64_t>(message[2].item<double>());
      d.best_smoothed = message[3].item<double>();
      decision = d;
    }
    if (comm_.rank() == 0) {
      run_dir_->append_metrics(m);
      const std::string line = epoch_line(m);
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      run_dir_->log(line);
      if (validate && d.improved) {
        save("best.pt", state());
        save_generator(run_dir_->checkpoint_path("best_generator.pt"), *generator_, model_shape(), trained_on(),
                       state().epoch);
      }
      save("last.pt", state());
      if (options_.keep_last > 0) {
        char name[32];
        std::snprintf(name, sizeof(name), "epoch_%04lld.pt", static_cast<long long>(epoch));
        save(name, state());
        char old[32];
        std::snprintf(old, sizeof(old), "epoch_%04lld.pt", static_cast<long long>(epoch - options_.keep_last));
        std::error_code ec;
        std::filesystem::remove(run_dir_->checkpoint_path(old), ec);
      }
      // After the checkpoints: a preemption while gnuplot runs must not cost the epoch.
      if (validate) draw_curves(decision.best_epoch, -1);
    }
    result.last_epoch = epoch;
    if (d.stop) {
      result.stop_reason = d.reason.empty() ? "early stopping (decided on rank 0)" : d.reason;
      break;
    }
  }
  if (result.stop_reason.empty()) result.stop_reason = "reached --max-epochs " + std::to_string(options_.max_epochs);
  result.best_epoch = decision.best_epoch;
  result.best_smoothed = decision.best_smoothed;
  result.baseline_psnr = baseline_psnr_;
  result.best_recognition = best_recognition_;
  result.real_recognition = real_recognition_;
  result.wall_seconds = seconds_since(run_start);
  result.images_per_second = static_cast<double>(images_seen) / std::max(result.wall_seconds, 1e-9);
  if (comm_.rank() == 0 && result.best_epoch < 0 && result.last_epoch >= 0) {
    // Fewer evaluations than --es-window: no smoothed PSNR, so no best. Users still expect a
    // model to deploy; the final one is the only candidate, and the summary says so.
    best_recognition_ = result.best_recognition = last_recognition;
    save("best.pt", state());
    save_generator(run_dir_->checkpoint_path("best_generator.pt"), *generator_, model_shape(), trained_on(),
                   state().epoch);
    result.stop_reason += "; fewer evaluations than --es-window, so best_generator.pt is the final model";
  }
  if (comm_.rank() == 0) {
    write_summary(result);
    draw_curves(result.best_epoch, result.last_epoch);
  }
  return result;
}

}  // namespace pix2pix::train
