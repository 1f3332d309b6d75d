// The run directory people read: config.cfg, metrics.csv/metrics.jsonl (one row per epoch),
// samples/epoch_NNNN.png, train.log, summary.json, checkpoints/. Only rank 0 writes it.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace pix2pix::metrics {

// A value with its column name.
using NamedValues = std::vector<std::pair<std::string, double>>;

struct EpochMetrics {
  std::int64_t epoch = 0;
  std::int64_t step = 0;  // global optimizer steps so far
  double lr = 0;
  NamedValues losses;  // the model's: means over the epoch and all ranks
  double val_psnr = 0, val_psnr_smoothed = 0, val_ssim = 0, val_l1 = 0;  // NaN when not validated
  // The unpaired models' content score, "cycle" (CycleGAN) or "deviation" (onesided); "" for
  // Pix2Pix: the columns val_<content>_psnr and its smoothed value (early stopping's when the val
  // split is unpaired; val_psnr* are then NaN).
  std::string content;
  double val_content_psnr = 0, val_content_psnr_smoothed = 0;
  double images_per_s = 0;                       // global: all ranks
  double data_s = 0, compute_s = 0, sync_s = 0;  // rank 0's time in each part
  // The run's clocks at the end of this epoch's validation, over all its sessions, NaN when a
  // session resumed a checkpoint that did not keep them: See Note [time to quality]
  double train_s = std::numeric_limits<double>::quiet_NaN(), wall_s = std::numeric_limits<double>::quiet_NaN();
  NamedValues scales;              // scale_<group>: each update group's loss scale at the end of the epoch
  std::int64_t skipped_steps = 0;  // updates skipped for non-finite gradients, all groups
  // --aux-classifier (NaN without): the classifier's top-1 accuracy on G(A) of the val split (NaN
  // when not validated), and its smoothed value with --es-metric accuracy (val_psnr_smoothed is
  // then NaN).
  double val_recognition = 0, val_recognition_smoothed = 0;
  // --val-metrics fid / kid: their columns (val_fid, val_fid_smoothed, val_kid, val_kid_smoothed)
  // come last; the smoothed one is filled only when --es-metric watches it.
  bool fid = false, kid = false;
  double val_fid = 0, val_fid_smoothed = 0, val_kid = 0, val_kid_smoothed = 0;

  // The metrics.csv header and a row: epoch, step, lr, the losses, val_* (val_<content>_psnr*
  // after val_l1 with a `content` score), throughput and time (train_s, wall_s last), the scales, skipped_steps,
  // val_recognition*, then val_fid* and val_kid* when asked for.
  std::vector<std::string> columns() const;
  std::vector<std::string> values() const;  // "null" for NaN
};

class RunDirectory {
 public:
  // Everything a run writes at the top of its directory (folders included).
  static constexpr const char* kEntries[] = {"checkpoints", "samples",       "logs",       "config.cfg",
                                             "metrics.csv", "metrics.jsonl", "train.log",  "summary.json",
                                             "curves.png",  "tensorboard",   "report.html"};

  // Creates DIR, DIR/checkpoints, DIR/samples; metrics.csv has `columns` (EpochMetrics::columns).
  // With `resume_after_epoch` >= 0 the existing metrics are kept up to that epoch (rows of later
  // epochs, from a run that died before its next checkpoint, are dropped; rows under another
  // header, from an older version, are rewritten under `columns` by name); otherwise they start
  // empty.
  RunDirectory(std::string dir, std::int64_t resume_after_epoch, std::vector<std::string> columns);

  const std::string& path() const { return dir_; }
  std::string sample_path(std::int64_t epoch) const;

  void write_config(const std::string& ini_text) const;
  void append_metrics(const EpochMetrics& m);  // Error for a row of other columns
  void log(const std::string& line);           // appends to train.log (with a timestamp)
  void write_summary(const std::string& json) const;
  // Writes a uint8 image [H, W, C] (C = 1 or 3, RGB) as PNG.
  void write_sample(std::int64_t epoch, const torch::Tensor& image) const;

 private:
  std::string dir_;
  std::vector<std::string> columns_;
};

// Error when a folder a run writes (checkpoints, samples, logs, tensorboard) is a symbolic link:
// what a run writes stays inside its directory (See Note [a run directory is untrusted input]).
void refuse_linked_folders(const std::string& dir);

// The fields of one metrics.csv line (a trailing empty field included).
std::vector<std::string> csv_fields(const std::string& line);

// "null" for NaN/inf (JSON has no NaN), else the shortest exact decimal.
std::string json_number(double value);
std::string json_string(const std::string& text);

}  // namespace pix2pix::metrics
