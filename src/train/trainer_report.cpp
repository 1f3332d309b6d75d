// What rank 0 tells people that only the Trainer knows: the start-up table, the resumed lines,
// summary.json's members and what the RunReport (metrics/run_report.hpp) needs of this run.
#include <cstdio>
#include <limits>
#include <sstream>

#include "pix2pix/data/format.hpp"
#include "pix2pix/dist/cuda_device.hpp"
#include "pix2pix/dist/fused_activation.hpp"
#include "pix2pix/dist/library_versions.hpp"
#include "pix2pix/nets/batch_norm_warning.hpp"
#include "pix2pix/train/trainer.hpp"

namespace pix2pix::train {

void Trainer::print_resumed(const checkpoint::TrainingState& s, const std::string& path) const {
  if (comm_.rank() != 0) return;
  // A stop in the first epoch leaves no epoch done (s.epoch is -1).
  std::printf("resumed from %s: ", path.c_str());
  if (s.epoch >= 0) std::printf("epoch %lld done%s", static_cast<long long>(s.epoch), s.step_in_epoch > 0 ? ", " : "");
  const bool same_batch = s.global_batch == global_batch_;
  if (s.step_in_epoch > 0) {
    std::printf("epoch %lld stopped after step %lld", static_cast<long long>(s.epoch + 1),
                static_cast<long long>(s.step_in_epoch));
    // The old world's steps an epoch are not the new one's: "of its" only where they agree.
    if (same_batch) std::printf(" of its %lld", static_cast<long long>(loader_->steps_per_epoch()));
  }
  std::printf(", global step %lld\n", static_cast<long long>(s.global_step));
  if (!same_batch) {
    std::printf("note: the global batch changed from %lld (%lld ranks) to %lld (%lld ranks)",
                static_cast<long long>(s.global_batch), static_cast<long long>(s.world),
                static_cast<long long>(global_batch_), static_cast<long long>(comm_.world()));
    if (s.step_in_epoch > 0)
      std::printf("; epoch %lld counts %lld of its %lld steps as done, the nearest to the %lld samples seen",
                  static_cast<long long>(s.epoch + 1), static_cast<long long>(resume_step_),
                  static_cast<long long>(loader_->steps_per_epoch()),
                  static_cast<long long>(s.step_in_epoch * s.global_batch));
    std::printf("\n");
  } else if (s.world != comm_.world()) {
    // The same global batch on another world: the same steps an epoch and the same step to
    // continue at, but each rank's shard is other samples (docs/distributed.md, "Resuming with
    // another world size"), so a user comparing with the old world's figures is told why they part.
    std::printf(
        "note: the world changed from %lld rank%s to %d with the global batch of %lld kept: the same steps, "
        "each over this world's shards (other samples than %lld rank%s would take)\n",
        static_cast<long long>(s.world), s.world == 1 ? "" : "s", comm_.world(), static_cast<long long>(global_batch_),
        static_cast<long long>(s.world), s.world == 1 ? "" : "s");
  }
}

void Trainer::print_startup() const {
  if (comm_.rank() != 0) return;
  const auto& train = dataset_->split(data::format::kTrain);
  std::printf("pix2pix train: %s\n", data_.data.c_str());
  std::printf("  %-22s %s\n", "device", device_.str().c_str());
  std::printf("  %-22s LibTorch %s\n", "libraries", dist::libtorch_summary().c_str());
  if (dist::cuda_compiled()) std::printf("  %-22s CUDA/NCCL %s\n", "", dist::cuda_nccl_summary().c_str());
  std::printf("  %-22s %d (%s)\n", "ranks", comm_.world(), comm_.name().c_str());
  for (const auto& line : run_.rank_table) std::printf("    %s\n", line.c_str());
  if (!run_.threads.empty()) std::printf("  %-22s %s\n", "threads", run_.threads.c_str());
  const auto counted = [](const data::SplitInfo& split) {
    return split.paired
               ? std::to_string(split.count) + " pairs"
               : std::to_string(split.count) + " A + " + std::to_string(split.count_b) + " B images (unpaired)";
  };
  std::printf("  %-22s %s %lldx%lld, A %lld ch, B %lld ch; val %s\n", "data", counted(train).c_str(),
              static_cast<long long>(train.height), static_cast<long long>(train.width),
              static_cast<long long>(train.channels_a), static_cast<long long>(train.channels_b),
              counted(dataset_->split(data::format::kVal)).c_str());
  std::printf("  %-22s %lld per rank, %lld global; %lld steps/epoch; cache %s (%.1f MiB)\n", "batch",
              static_cast<long long>(data_.loader.batch_size), static_cast<long long>(global_batch_),
              static_cast<long long>(loader_->steps_per_epoch()), data::to_string(loader_->cache_mode()).c_str(),
              static_cast<double>(loader_->cache_bytes()) / (1 << 20));
  std::printf("  %-22s %s\n", "model", model_->shape().c_str());
  std::printf("  %-22s %s\n", "batch norm", batch_norm_line().c_str());
  // See Note [batch norm over too few images]
  const std::int64_t images = sync_bn_ ? global_batch_ : data_.loader.batch_size;
  const std::string warning =
      nets::few_images_warning(model_options_.norm, images, loop_.val_mode == nets::ValMode::eval,
                               std::string(comm_.world() > 1 && !sync_bn_ ? "--sync-bn on, " : "") +
                                   "a larger --batch-size, --norm instance or --val-mode train");
  if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
  std::string parameters;
  for (const gan::NamedNetwork& network : model_->networks())
    parameters += (parameters.empty() ? "" : ", ") + network.label + " " +
                  std::to_string(nets::count_parameters(*network.module));
  std::printf("  %-22s %s\n", "parameters", parameters.c_str());
  std::printf("  %-22s %s\n", "updates", optim::describe_updates(model_options_.update, device_).c_str());
  std::printf("  %-22s %s\n", "step", describe_cuda_graph(loop_.cuda_graph, captured_ != nullptr).c_str());
  std::printf("  %-22s %s\n", "fused kernels",
              dist::describe_fused_kernels(loop_.fused_kernels, fused_kernels_).c_str());
  if (ema_) std::printf("  %-22s %s\n", "moving average", ema_->describe().c_str());
  const data::SplitInfo& stored = dataset_->split(data::format::kTrain);
  if (!stored.samples_a.is_byte_default() || !stored.samples_b.is_byte_default()) {
    // The PSNR's peak, said: a dB figure on [0, 65535] means something else than one on [0, 255].
    std::printf("  %-22s A %s, B %s; val PSNR and SSIM on B's values (peak %g)\n", "values",
                data::to_string(stored.samples_a).c_str(), data::to_string(stored.samples_b).c_str(),
                stored.samples_b.range.peak());
  }
  std::printf("  %-22s %.3g (rule %s from %.3g at batch %lld)\n", "learning rate", loop_.lr.scaled_lr(),
              to_string(loop_.lr.scaling).c_str(), loop_.lr.lr, static_cast<long long>(loop_.lr.base_batch));
  const EarlyStoppingOptions& es = stop_.rule().options();
  std::string why;
  if (loop_.es_metric == EsMetric::psnr && !stop_on_content_)
    why = " of G(A) against B (the val split is paired)";
  else if (loop_.es_metric == EsMetric::psnr)
    why = content_->why_unpaired;
  std::printf("  %-22s %s%s; window %lld, patience %lld%s\n", "early stopping on", es.metric.c_str(), why.c_str(),
              static_cast<long long>(es.window), static_cast<long long>(es.patience), es.enabled ? "" : " (off)");
  if (content_ && !stop_on_content_)
    std::printf("  %-22s the %s PSNR is reported beside it (val_%s_psnr)\n", "", content_->reported.c_str(),
                content_->name.c_str());
  if (validator_->paired())
    std::printf("  %-22s %.3f dB (predicting the mean training image)\n", "baseline val PSNR", baseline_psnr_);
  if (val_features_) {
    const metrics::FeatureFacts& f = val_features_->facts();
    std::printf("  %-22s %s%s%s with %s (%s, input %s, sha256 %.12s); KID over %lld subsets of at most %lld\n",
                "val FID/KID", loop_.val_fid ? "FID" : "", loop_.val_fid && loop_.val_kid ? " and " : "",
                loop_.val_kid ? "KID" : "", f.file.c_str(), f.kind.c_str(), metrics::to_string(f.input).c_str(),
                f.sha256.c_str(), static_cast<long long>(loop_.kid_subsets),
                static_cast<long long>(loop_.kid_subset_size));
  }
  if (recognition_) {
    const checkpoint::SavedClassifier& c = recognition_->classifier();
    std::printf("  %-22s %s, weight %g: %s (epoch %lld, val accuracy %.4f)\n", "aux classifier", c.path.c_str(),
                recognition_->weight(), nets::describe(c.network->options()).c_str(),
                static_cast<long long>(c.record.epoch), c.record.val_accuracy);
    std::printf("  %-22s %.4f (the classifier on the real val B images)\n", "recognition ceiling", real_recognition_);
  }
  std::printf("  %-22s %s\n", "run directory", run_.run_dir.c_str());
  std::printf("  options:\n");
  std::istringstream lines(run_.effective_config);
  for (std::string line; std::getline(lines, line);) std::printf("    %s\n", line.c_str());
  std::fflush(stdout);
}

std::string Trainer::batch_norm_line() const {
  const std::string choice = "--sync-bn " + nets::to_string(loop_.sync_bn);
  if (model_options_.norm != nets::Norm::batch)
    return "none (--norm " + nets::to_string(model_options_.norm) + ")" +
           (loop_.sync_bn == nets::SyncBn::on ? "; " + choice + " has nothing to synchronise" : "");
  if (sync_bn_)
    return "over the global batch of " + std::to_string(global_batch_) + " (" + choice +
           (loop_.sync_bn == nets::SyncBn::automatic
                ? ": on, so that " + std::to_string(comm_.world()) + " ranks x " +
                      std::to_string(data_.loader.batch_size) + " train the model one process of the global batch would"
                : "") +
           ")";
  if (loop_.sync_bn == nets::SyncBn::automatic && comm_.world() > 1)
    return "over each rank's batch of " + std::to_string(data_.loader.batch_size) + " (" + choice +
           ": off, since the " + comm_.name() +
           " communicator cannot be called from the GPU threads backward runs on; --comm nccl can)";
  if (comm_.world() == 1)
    return "over the batch of " + std::to_string(global_batch_) + " (one rank: " + choice + " changes nothing)";
  return "over each rank's batch of " + std::to_string(data_.loader.batch_size) + " (" + choice +
         ": the model changes with the rank count)";
}

metrics::ReportOptions Trainer::report_options(std::int64_t resumed_epoch) const {
  metrics::ReportOptions r;
  r.run_dir = run_.run_dir;
  r.resumed_epoch = resumed_epoch;
  r.config = run_.effective_config;
  r.tensorboard = run_.tensorboard;
  r.watched = "val_" + watched_name() + "_smoothed";
  r.lower_is_better = stop_.rule().options().lower_is_better;
  r.quality_targets = loop_.quality_targets;
  r.unpaired_val = stop_on_content_;
  r.recognition = recognition_ != nullptr;
  return r;
}

// summary.json's "es_metric": "psnr", "accuracy", "fid", "kid", or the content score an unpaired
// val split is watched by with psnr ("<its name>_psnr"); its smoothed column is
// val_<watched_name()>_smoothed.
std::string Trainer::es_metric_name() const {
  return loop_.es_metric == EsMetric::accuracy ? to_string(loop_.es_metric) : watched_name();
}
std::string Trainer::watched_name() const {
  return train::watched_name(loop_.es_metric, stop_on_content_ ? content_->name : "");
}

void Trainer::write_summary(const RunResult& result) {
  std::ostringstream json;
  json << "\"stop_reason\": " << metrics::json_string(result.stop_reason)
       << ",\n  \"best_epoch\": " << result.best_epoch
       << ",\n  \"es_metric\": " << metrics::json_string(es_metric_name()) << ",\n  \"best_" << watched_name()
       << "_smoothed\": " << metrics::json_number(result.best_smoothed)
       << ",\n  \"baseline_psnr_mean_image\": " << metrics::json_number(result.baseline_psnr)
       << ",\n  \"last_epoch\": " << result.last_epoch
       << ",\n  \"wall_seconds\": " << metrics::json_number(result.wall_seconds)
       << ",\n  \"images_per_second\": " << metrics::json_number(result.images_per_second)
       << ",\n  \"world\": " << comm_.world() << ",\n  \"global_batch\": " << global_batch_
       << ",\n  \"lr_scaling\": " << metrics::json_string(to_string(loop_.lr.scaling))
       << ",\n  \"lr\": " << metrics::json_number(loop_.lr.scaled_lr())
       << ",\n  \"device\": " << metrics::json_string(device_.str())
       << ",\n  \"precision\": " << metrics::json_string(to_string(model_options_.update.precision))
       << ",\n  \"ema_decay\": " << metrics::json_number(loop_.ema_decay)
       << ",\n  \"validated_weights\": " << metrics::json_string(ema_ ? "ema" : "raw");
  if (recognition_)
    json << ",\n  \"aux_classifier\": " << metrics::json_string(recognition_->classifier().path)
         << ",\n  \"lambda_aux\": " << metrics::json_number(recognition_->weight())
         << ",\n  \"best_recognition\": " << metrics::json_number(result.best_recognition)
         << ",\n  \"real_recognition\": " << metrics::json_number(result.real_recognition);
  report_->summary(json.str(), result.best_epoch, clock_, result.stop_reason);
}

metrics::EpochMetrics Trainer::epoch_metrics(std::int64_t epoch, double lr, const EpochSums& global) const {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  metrics::EpochMetrics m;
  m.epoch = epoch;
  m.step = global_step_;
  m.lr = lr;
  const double n = static_cast<double>(std::max<std::int64_t>(global.steps, 1));
  const auto& names = model_->loss_names();
  for (std::size_t i = 0; i < names.size(); ++i)
    m.losses.emplace_back(names[i], i < global.losses.size() ? global.losses[i] / n : kNaN);
  for (const optim::UpdateGroup* group : model_->update_groups())
    m.scales.emplace_back("scale_" + group->label(), group->scaler().scale());
  m.skipped_steps = global.skipped;
  m.val_psnr = m.val_psnr_smoothed = m.val_ssim = m.val_l1 = kNaN;
  m.content = content_ ? content_->name : "";
  m.val_content_psnr = m.val_content_psnr_smoothed = kNaN;
  m.val_recognition = m.val_recognition_smoothed = kNaN;
  m.fid = loop_.val_fid, m.kid = loop_.val_kid;
  m.val_fid = m.val_fid_smoothed = m.val_kid = m.val_kid_smoothed = kNaN;
  return m;
}

}  // namespace pix2pix::train
