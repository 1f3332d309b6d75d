// `report RUN_DIR --html`: one self-contained page a person reads (RUN_DIR/report.html): the
// summary, the curves of metrics.csv drawn as inline SVG, the best and last epochs' sample sheets,
// the evaluations found in the run directory, the run's options and the library versions, every
// image embedded, so the file can be mailed or attached to a ticket alone.
#pragma once

#include <string>

namespace pix2pix::metrics {

// Writes RUN_DIR/report.html whole (atomic_file) and returns its path. `versions`: the library
// versions to show (what `pix2pix --version` prints). Error naming the file when the run directory
// has no metrics.csv or the page cannot be written.
std::string write_html_report(const std::string& run_dir, const std::string& versions);

}  // namespace pix2pix::metrics
