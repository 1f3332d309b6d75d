// curves.png of a run directory: validation PSNR (or, under --es-metric accuracy, the recognition
// accuracy of G(A)) raw and smoothed against the epoch (the early-stopping curve of Lupión et al.
// 2022, Fig. 4, with the best epoch and the stop marked) above the losses, drawn from metrics.csv
// by the program itself (See Note [curves drawn by the program]). Drawing is a convenience for the
// people watching a run: it never fails one. It returns what went wrong, and the trainer logs that once.
#pragma once

#include <cstdint>
#include <string>

namespace pix2pix::metrics {

struct CurveMarks {
  std::int64_t best_epoch = -1;  // < 0: none yet
  std::int64_t stop_epoch = -1;  // < 0: still running
};

// Draws DIR/curves.png from DIR/metrics.csv (read beneath DIR: no link followed, bounded) through a
// fresh temporary file renamed over it. Returns "" when drawn, else why not (no metrics.csv or not
// ours, the folder not writable, a full disk); a previous curves.png then stays as it was.
std::string draw_curves(const std::string& run_dir, const CurveMarks& marks);

}  // namespace pix2pix::metrics
