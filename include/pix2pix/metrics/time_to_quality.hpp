// Time to quality (issue 48): the run's two clocks, kept over every session of a resumed run, and
// when its watched validation value first reached given targets.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "pix2pix/metrics/metrics_table.hpp"

namespace pix2pix::metrics {

// Seconds since this process started (the kernel's record of its start where /proc has it, else
// since this library was initialised, before main).
double process_seconds();

// Note [time to quality]: a scaling study asks how long N ranks take to a model as good as it gets
// (the paper's Table 1 judged runs by the stop epoch's PSNR, not by images/s). Two clocks answer,
// each continued across resumes from the checkpoint the session started from:
// - train_s: the run loop's time, from the start of its first epoch (what N ranks change);
// - wall_s: each session's time from its process's start, set-up included (data read into the
//   cache, networks built, the communicator made): what the user waits for.
// A session that resumed a checkpoint written before they were kept cannot know its earlier time:
// both clocks are then NaN ("null" in the files), never a figure that leaves time out.
class RunClock {
 public:
  // A resumed run: the seconds of the sessions before this one (the checkpoint's train_seconds and
  // wall_seconds; a new run's are 0).
  void continue_from(double earlier_train_s, double earlier_wall_s);
  void start();  // at the start of the run loop: train_seconds counts from here
  double train_seconds() const;
  double wall_seconds() const;

 private:
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  double earlier_train_ = 0, earlier_wall_ = 0;
};

// When a watched value first reached a target: the epoch and both clocks at that epoch's row, or
// epoch -1 and NaN when no row did.
struct QualityReached {
  double target = std::numeric_limits<double>::quiet_NaN();
  std::int64_t epoch = -1;
  double train_s = std::numeric_limits<double>::quiet_NaN();
  double wall_s = std::numeric_limits<double>::quiet_NaN();
};

// For each target, the first row of `table` (in file order) whose `column` is at least the target,
// or at most it with `lower_is_better` (FID, KID). Rows whose value is empty (not validated) never
// reach one.
std::vector<QualityReached> first_reached(const MetricsTable& table, const std::string& column,
                                          const std::vector<double>& targets, bool lower_is_better);

// The clocks at `epoch`'s row (the best epoch's, say); epoch -1 when the table has no such row.
QualityReached at_epoch(const MetricsTable& table, std::int64_t epoch);

// --quality-targets: comma-separated finite numbers ("16,17,18"); UsageError naming the option.
std::vector<double> parse_quality_targets(const std::string& text);

}  // namespace pix2pix::metrics
