// The early-stopping rule of Lupión et al. (2022): validation PSNR (or, with --es-metric accuracy,
// the recognition accuracy of G(A); with fid or kid, a distance to minimise) smoothed by a moving
// average over the last `window` evaluations; stop when `patience` evaluations pass without the
// smoothed value beating its best by more than `min_delta` (beating: above it, or below it when
// `lower_is_better`). Pure: no I/O, state serialisable.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

namespace pix2pix::train {

struct EarlyStoppingOptions {
  std::int64_t window = 50;      // raw values averaged; the first smoothed value comes at evaluation `window`
  std::int64_t patience = 50;    // evaluations without improvement before stopping
  double min_delta = 0.0;        // an improvement must exceed the best by more than this
  bool enabled = true;           // false: track the best, never stop
  std::string metric = "validation PSNR", unit = " dB";  // what is watched, for the stop reason
  bool lower_is_better = false;  // FID, KID: the best is the smallest smoothed value
};

// What rank 0 decided after an evaluation; small so that it can be broadcast to every rank.
struct Decision {
  bool stop = false;
  std::string reason;            // why it stopped ("" while continuing)
  bool improved = false;         // the smoothed value reached a new best at this evaluation
  std::int64_t best_epoch = -1;  // epoch of the best smoothed value, -1 before the first
  double best_smoothed = 0.0;    // best smoothed value (NaN before the first)
  double smoothed = 0.0;         // this evaluation's smoothed value (NaN before `window` evaluations)
  bool non_finite = false;       // this evaluation's raw value was NaN/inf (counted as no improvement)
};

class EarlyStopping {
 public:
  explicit EarlyStopping(EarlyStoppingOptions options);
  Decision update(std::int64_t epoch, double raw);

  std::int64_t evaluations() const { return evaluations_; }
  std::int64_t evaluations_since_best() const { return since_best_; }
  const EarlyStoppingOptions& options() const { return options_; }

  // Exact text form of the state (hex floats), for checkpoints.
  std::string serialize() const;
  void restore(const std::string& text);  // Error when the text is not a serialized state

 private:
  EarlyStoppingOptions options_;
  std::deque<double> recent_;
  double best_smoothed_;
  std::int64_t best_epoch_ = -1;
  std::int64_t since_best_ = 0;
  std::int64_t evaluations_ = 0;
};

}  // namespace pix2pix::train
