// A run directory's metrics.csv as numbers, for the pictures drawn of it (curves.png, report.html).
// The file is read as input from someone else (See Note [a run directory is untrusted input]): its
// names are labels, never code, and its values are parsed, never pasted anywhere.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pix2pix::metrics {

struct MetricsTable {
  std::vector<std::string> columns;       // the header's names
  std::vector<std::vector<double>> rows;  // one value per column; NaN where a field is empty or not a number

  bool has(const std::string& column) const;
  // (epoch, value) of each row whose epoch and value are finite; empty for a column not in the header.
  std::vector<std::pair<double, double>> series(const std::string& column) const;
  std::int64_t last_epoch() const;  // -1 without rows
};

// RUN_DIR/metrics.csv, opened beneath RUN_DIR (no link followed, a regular file of at most
// kMetricsFileLimit bytes). Error naming the file when it cannot be read or has no header.
MetricsTable read_metrics_table(const std::string& run_dir);

// The same from the file's text (`shown` names it in errors).
MetricsTable parse_metrics_table(const std::string& text, const std::string& shown);

}  // namespace pix2pix::metrics
