// What the trainer writes to and reads from checkpoints: its state at an epoch boundary or at a
// graceful stop mid-epoch, and `--resume` (with the fall-back over damaged checkpoints).
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "pix2pix/common/error.hpp"
#include "pix2pix/train/checkpoint_seal.hpp"
#include "pix2pix/train/trainer.hpp"

namespace pix2pix::train {

void EpochSums::add(const StepLosses& losses) {
  ++steps;
  // Note [no host reads in the step]
  unread = unread.defined() ? unread.add_(losses.values) : losses.values.clone();
  skipped += (losses.skipped_d ? 1 : 0) + (losses.skipped_g ? 1 : 0);
}

EpochSums EpochSums::global(dist::Communicator& comm) const {
  auto t = torch::tensor({loss_d, loss_g_gan, loss_g_l1, loss_g_aux, static_cast<double>(skipped)}, torch::kFloat64);
  if (unread.defined()) t.narrow(0, 0, 4).add_(unread.to(torch::kCPU));
  comm.allreduce_sum(t);
  const double world = comm.world();
  EpochSums g;
  g.steps = steps;  // the same on every rank
  g.loss_d = t[0].item<double>() / world;
  g.loss_g_gan = t[1].item<double>() / world;
  g.loss_g_l1 = t[2].item<double>() / world;
  g.loss_g_aux = t[3].item<double>() / world;
  // Every rank skips the same updates (the decision follows averaged gradients): the count is
  // the same on every rank, and their mean is it.
  g.skipped = std::llround(t[4].item<double>() / world);
  return g;
}

// [loss_d, loss_g_gan, loss_g_l1, skipped, loss_g_aux]: loss_g_aux last, so that checkpoints
// written before it (4 values) still resume.
std::vector<double> EpochSums::to_checkpoint() const {
  if (unread.defined()) throw Error("EpochSums::to_checkpoint: sums not read yet (checkpoint global() ones)");
  return {loss_d, loss_g_gan, loss_g_l1, static_cast<double>(skipped), loss_g_aux};
}

EpochSums EpochSums::from_checkpoint(const std::vector<double>& saved, std::int64_t steps) {
  if (saved.size() != 4 && saved.size() != 5)
    throw Error("checkpoint: epoch_sums holds " + std::to_string(saved.size()) + " values, not 5");
  // Every rank continues from the rank mean, so the mean at the end of the epoch is the same as
  // without the stop; the skipped count is the same on every rank (see global()).
  EpochSums s;
  s.steps = steps;
  s.loss_d = saved[0];
  s.loss_g_gan = saved[1];
  s.loss_g_l1 = saved[2];
  s.skipped = static_cast<std::int64_t>(saved[3]);
  if (saved.size() == 5) s.loss_g_aux = saved[4];
  return s;
}

TrainingState Trainer::state() const {
  TrainingState s;
  s.epoch = start_epoch_ - 1;
  s.global_step = global_step_;
  s.model_shape = model_shape();
  s.early_stopping = early_stopping_.serialize();
  s.scaler_g = scaler_g_.state();
  s.scaler_d = scaler_d_.state();
  s.world = comm_.world();
  s.global_batch = global_batch_;
  s.trained_on = trained_on();
  s.recognition = recognition_ ? recognition_->identity() : "";
  s.best_recognition = best_recognition_;
  s.es_metric = to_string(options_.es_metric);
  return s;
}

void Trainer::save(const std::string& name, const TrainingState& state) {
  const std::string path = run_dir_->checkpoint_path(name);
  // last.pt is what --resume auto takes; its predecessor stays as last.prev.pt in case the new
  // one is later found damaged.
  if (name == "last.pt") keep_previous_checkpoint(path);
  if (name == "last.pt" && state.epoch == options_.fail_in_checkpoint) {
    // Test fault injection: killed with half a checkpoint written, as a node failure would.
    write_atomically(path, [&](const std::string& tmp) {
      save_checkpoint(tmp, *generator_, *discriminator_, *opt_g_, *opt_d_, state);
      std::filesystem::resize_file(tmp, std::filesystem::file_size(tmp) / 2);
      std::fprintf(stderr, "--fail-in-checkpoint %lld: killed while writing %s (test fault injection)\n",
                   static_cast<long long>(state.epoch), path.c_str());
      std::fflush(stderr);
      std::raise(SIGKILL);
    });
  }
  save_checkpoint(path, *generator_, *discriminator_, *opt_g_, *opt_d_, state);
}

void Trainer::save_interrupted(const EpochSums& global_sums) {
  if (comm_.rank() != 0) return;
  TrainingState s = state();
  s.step_in_epoch = global_sums.steps;
  s.epoch_sums = global_sums.to_checkpoint();
  save("last.pt", s);
}

std::string Trainer::pick_resume_checkpoint() {
  if (options_.resume != "auto") return options_.resume;
  std::string chosen, damaged;
  if (comm_.rank() == 0) {
    const auto folder = (std::filesystem::path(options_.run_dir) / "checkpoints").string();
    for (const std::string& path : resume_candidates(folder)) {
      const auto damage = check_seal(path);
      if (!damage) {
        chosen = path;
        break;
      }
      std::fprintf(stderr, "warning: checkpoint %s is damaged (%s); trying an older one\n", path.c_str(),
                   damage->c_str());
      damaged += "\n  " + path + ": " + *damage;
    }
    if (chosen.empty() && !damaged.empty())
      throw Error("--resume auto: every checkpoint in " + folder + " is damaged:" + damaged);
  }
  return comm_.broadcast_string(chosen, 0);  // empty: nothing to continue, a fresh start
}

void Trainer::resume_if_asked() {
  const std::string path = pick_resume_checkpoint();
  if (path.empty()) return;
  const TrainingState s = load_checkpoint(path, *generator_, *discriminator_, *opt_g_, *opt_d_, model_shape());
  // The objective must be the one the checkpoint trained with; the identity leaves out the path,
  // so a moved classifier file is still the same one.
  const std::string recognition = recognition_ ? recognition_->identity() : "";
  if (s.recognition != recognition) {
    const auto said = [](const std::string& identity) { return identity.empty() ? "none" : identity; };
    throw UsageError("--resume " + path + ": the checkpoint was trained with auxiliary classifier " +
                     said(s.recognition) + ", this run has " + said(recognition) +
                     "; pass the same --aux-classifier and --lambda-aux");
  }
  if (s.es_metric != to_string(options_.es_metric))
    throw UsageError("--resume " + path + ": its early stopping watched " + s.es_metric + ", this run --es-metric " +
                     to_string(options_.es_metric) + "; the smoothed history of one is no use to the other");
  best_recognition_ = s.best_recognition;
  start_epoch_ = s.epoch + 1;
  global_step_ = s.global_step;
  early_stopping_.restore(s.early_stopping);
  scaler_g_.restore(s.scaler_g);
  scaler_d_.restore(s.scaler_d);
  resume_step_ = s.step_in_epoch;
  resume_sums_ = s.epoch_sums;
  if (s.step_in_epoch > 0 && s.global_batch != global_batch_) {
    // Same samples seen, counted in the new global batch: the nearest step, not an exact match.
    resume_step_ = std::min(loader_->steps_per_epoch(), s.step_in_epoch * s.global_batch / global_batch_);
  }
  if (comm_.rank() == 0) {
    std::printf("resumed from %s: epoch %lld done", path.c_str(), static_cast<long long>(s.epoch));
    if (s.step_in_epoch > 0)
      std::printf(", epoch %lld stopped after step %lld of its %lld", static_cast<long long>(s.epoch + 1),
                  static_cast<long long>(s.step_in_epoch), static_cast<long long>(loader_->steps_per_epoch()));
    std::printf(", global step %lld\n", static_cast<long long>(s.global_step));
    if (s.global_batch != global_batch_)
      std::printf("note: the global batch changed from %lld (%lld ranks) to %lld (%lld ranks)%s\n",
                  static_cast<long long>(s.global_batch), static_cast<long long>(s.world),
                  static_cast<long long>(global_batch_), static_cast<long long>(comm_.world()),
                  s.step_in_epoch > 0 ? "; the interrupted epoch continues at the step nearest to its samples" : "");
  }
}

}  // namespace pix2pix::train
