// What rank 0 writes and says of a training run as it goes: the run directory's files (config.cfg,
// metrics.csv and train.log rows, samples, summary.json), TensorBoard's events, curves.png, and
// the epoch line on stdout. The Trainer's one collaborator for reporting: it decides when, this
// decides what and where (See Note [the run loop on one page]).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "pix2pix/metrics/run_directory.hpp"
#include "pix2pix/metrics/tensorboard_events.hpp"
#include "pix2pix/metrics/time_to_quality.hpp"

namespace pix2pix::metrics {

struct ReportOptions {
  std::string run_dir;
  std::int64_t resumed_epoch = -1;  // >= 0: the run continues after this epoch (its rows are kept)
  std::string config;               // config.cfg's text
  bool tensorboard = false;         // --tensorboard
  // The metrics.csv column of the smoothed value early stopping watches (val_psnr_smoothed,
  // val_cycle_psnr_smoothed, val_recognition_smoothed, val_fid_smoothed, ...): the epoch line
  // shows it, and summary.json's time to quality is measured on it.
  std::string watched;
  bool lower_is_better = false;         // of the watched value (FID, KID)
  std::vector<double> quality_targets;  // --quality-targets
  bool unpaired_val = false;            // the val split is unpaired: the content score stands where val PSNR would
  bool recognition = false;             // --aux-classifier: the line shows its accuracy on G(A)
};

class RunReport {
 public:
  // Creates the run directory's files (RunDirectory), writes config.cfg, and with --tensorboard
  // starts an event file; `columns`: metrics.csv's (EpochMetrics::columns).
  RunReport(ReportOptions options, std::vector<std::string> columns);
  ~RunReport();

  const std::string& path() const { return dir_.path(); }
  // The epoch's row (metrics.csv, metrics.jsonl, TensorBoard's scalars) and its line, printed and
  // appended to train.log.
  void epoch(const EpochMetrics& m);
  // The row of an epoch that ends the run with an error, and the error in train.log.
  void failed_epoch(const EpochMetrics& m, const std::string& message);
  // The validation's sample sheet: samples/epoch_NNNN.png and TensorBoard's image.
  void samples(std::int64_t epoch, const torch::Tensor& grid);
  // curves.png from metrics.csv, marking the best and the stop epoch (-1: none). A failure is said
  // once (stderr and train.log) and never thrown: the run goes on.
  void curves(std::int64_t best_epoch, std::int64_t stop_epoch);
  // summary.json: `members` (JSON members, "\"a\": 1,\n  \"b\": 2") and "time_to_quality", then
  // "stopped: <reason>" in train.log.
  void summary(const std::string& members, std::int64_t best_epoch, const RunClock& clock,
               const std::string& stop_reason);
  void log(const std::string& line) { dir_.log(line); }

  // "epoch E: losses | validation | throughput", the smoothed value beside the watched one.
  std::string epoch_line(const EpochMetrics& m) const;
  // One line (report.html's summary table shows a line a row): the run's clocks at its end, at the
  // best epoch, and at the first epoch each quality target was reached, from metrics.csv, which
  // holds every session's rows (See Note [time to quality]).
  std::string time_to_quality_json(std::int64_t best_epoch, const RunClock& clock) const;

 private:
  ReportOptions options_;
  RunDirectory dir_;
  std::unique_ptr<TensorBoardEvents> tensorboard_;
  bool curves_failed_ = false;  // said why once; later failures are quiet
};

}  // namespace pix2pix::metrics
