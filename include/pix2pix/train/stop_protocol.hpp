// How a run decides to stop, the same for `train` and `train-classifier`: the stop signals every
// rank polls at the same points, rank 0's early-stopping rule whose decision every rank follows
// (See Note [one stop protocol]), and what the GAN trainer's rule watches (--es-metric): its
// options, each validation's value and the metrics.csv column of its smoothed value.
#pragma once

#include <cstdint>
#include <functional>

#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/gan/content_score.hpp"
#include "pix2pix/metrics/run_directory.hpp"
#include "pix2pix/train/early_stopping.hpp"
#include "pix2pix/train/train_options.hpp"
#include "pix2pix/train/validator.hpp"

namespace pix2pix::train {

inline constexpr int kExitInterrupted = 75;  // graceful stop (SIGINT/SIGTERM/SIGUSR1); last.pt continues it

class StopProtocol {
 public:
  StopProtocol(dist::Communicator& comm, EarlyStoppingOptions rule);

  // Collective, polled by every rank at the same point: the stop signal any rank received (the
  // highest number), 0 when none. A signal that reached only some ranks stops all of them there.
  int signal_of_any_rank() const;
  // Collective, after a validation: rank 0 applies the rule to its `value` (the other ranks' is
  // ignored), and every rank returns rank 0's decision, its reason included. `smoothed` is the
  // value of rank 0's alone (the one that writes it).
  Decision decide(std::int64_t epoch, double value);
  // Collective, once a signal has stopped the run: runs `save_on_rank0` (may be empty: what the
  // stop keeps is already written) on rank 0 and returns on every rank only once it succeeded, so
  // that no rank exits 75 while last.pt is being written; rank 0's error otherwise, on every rank.
  // Then a further SIGTERM (a launcher ending the other ranks) exits 75 too.
  // See Note [a graceful stop ends together].
  void end_gracefully(const std::function<void()>& save_on_rank0) const;

  const EarlyStopping& rule() const { return rule_; }
  EarlyStopping& rule() { return rule_; }  // rank 0's state: checkpoints save and restore it

 private:
  dist::Communicator* comm_;
  EarlyStopping rule_;
};

// The early-stopping options with the name and unit of what is watched: --es-metric's, and with
// psnr the model's content score when the val split is unpaired (`content`, else null).
EarlyStoppingOptions watched(const LoopOptions& options, const gan::ContentScore* content);

// The value early stopping is given from validation `v`, and where in `m` its smoothed value goes;
// `content`: the val split is unpaired and psnr means the model's content score.
struct WatchedValue {
  double value;
  double* smoothed;
};
WatchedValue watched_value(EsMetric metric, bool content, const ValidationResult& v, metrics::EpochMetrics& m);
// The X of the metrics.csv column val_X_smoothed that watched_value's `smoothed` points to:
// recognition, fid, kid, psnr, or <content>_psnr where `unpaired_content` (the content score's
// name when the val split is unpaired, else "") stands for psnr.
std::string watched_name(EsMetric metric, const std::string& unpaired_content);

}  // namespace pix2pix::train
