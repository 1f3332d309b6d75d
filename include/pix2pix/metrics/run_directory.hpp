// The run directory people read: config.cfg, metrics.csv/metrics.jsonl (one row per epoch),
// samples/epoch_NNNN.png, train.log, summary.json, checkpoints/. Only rank 0 writes it.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace pix2pix::metrics {

struct EpochMetrics {
  std::int64_t epoch = 0;
  std::int64_t step = 0;  // global optimizer steps so far
  double lr = 0;
  double loss_d = 0, loss_g_gan = 0, loss_g_l1 = 0;                      // means over the epoch and all ranks
  double val_psnr = 0, val_psnr_smoothed = 0, val_ssim = 0, val_l1 = 0;  // NaN when not validated
  double images_per_s = 0;                                               // global: all ranks
  double data_s = 0, compute_s = 0, sync_s = 0;                          // rank 0's time in each part
  double scale_g = 1, scale_d = 1;                                       // loss scales at the end of the epoch
  std::int64_t skipped_steps = 0;                                        // non-finite gradients, both networks
  // --aux-classifier (NaN without): W·CE of G's objective, and the classifier's top-1 accuracy on
  // G(A) of the val split (NaN when not validated).
  double loss_g_aux = 0, val_recognition = 0;
  double val_recognition_smoothed = 0;  // with --es-metric accuracy (val_psnr_smoothed is then NaN)
};

class RunDirectory {
 public:
  // Everything a run writes at the top of its directory (folders included).
  static constexpr const char* kEntries[] = {"checkpoints",   "samples",   "logs",         "config.cfg", "metrics.csv",
                                             "metrics.jsonl", "train.log", "summary.json", "curves.png"};

  // Creates DIR, DIR/checkpoints, DIR/samples. With `resume_after_epoch` >= 0 the existing
  // metrics are kept up to that epoch (rows of later epochs, from a run that died before its
  // next checkpoint, are dropped); otherwise they start empty.
  RunDirectory(std::string dir, std::int64_t resume_after_epoch);

  const std::string& path() const { return dir_; }
  std::string checkpoint_path(const std::string& name) const;  // DIR/checkpoints/NAME
  std::string sample_path(std::int64_t epoch) const;

  void write_config(const std::string& ini_text) const;
  void append_metrics(const EpochMetrics& m);
  void log(const std::string& line);  // appends to train.log (with a timestamp)
  void write_summary(const std::string& json) const;
  // Writes a uint8 image [H, W, C] (C = 1 or 3, RGB) as PNG.
  void write_sample(std::int64_t epoch, const torch::Tensor& image) const;

 private:
  std::string dir_;
  std::ofstream csv_, jsonl_, log_;
};

// "null" for NaN/inf (JSON has no NaN), else the shortest exact decimal.
std::string json_number(double value);
std::string json_string(const std::string& text);

}  // namespace pix2pix::metrics
