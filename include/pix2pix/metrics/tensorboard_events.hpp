// TensorBoard event files (`train --tensorboard`): each epoch's metrics.csv values as scalars and
// each validation's sample sheet as an image, in RUN_DIR/tensorboard/, for `tensorboard --logdir
// RUN_DIR` (TensorBoard itself is not needed to write them). See Note [TensorBoard's file format].
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pix2pix/metrics/run_directory.hpp"

namespace pix2pix::metrics {

// CRC-32C (Castagnoli), and TensorFlow's masked form of it that frames every record.
std::uint32_t crc32c(const void* data, size_t n);
std::uint32_t masked_crc32c(const void* data, size_t n);

class TensorBoardEvents {
 public:
  // Starts a new event file in `dir` (created). `resumed_at` >= 0: the run resumes with that
  // epoch, and a SessionLog START at it tells TensorBoard to drop what earlier files hold from it on.
  TensorBoardEvents(const std::string& dir, std::int64_t resumed_at = -1);
  const std::string& path() const { return path_; }

  // One scalar per name at `step` (NaN values are left out); names become tags by their prefix:
  // loss_* -> "loss/", val_* -> "val/", the rest "train/".
  void scalars(std::int64_t step, const std::vector<std::string>& names, const std::vector<double>& values);
  // metrics.csv's row as scalars at its epoch, less the epoch and step columns themselves.
  void epoch(const EpochMetrics& m);
  // uint8 [H, W, C] (C = 1 or 3) as a PNG under `tag`.
  void image(std::int64_t step, const std::string& tag, const torch::Tensor& hwc);

 private:
  void write(const std::string& event);  // one framed record, appended whole
  std::string path_;
};

}  // namespace pix2pix::metrics
