#include "pix2pix/metrics/metrics_table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/file_beneath.hpp"
#include "pix2pix/metrics/run_directory.hpp"

namespace pix2pix::metrics {
namespace {

// A whole field as a number; NaN when empty or not entirely one ("1e5x", "nan" stays NaN).
double number(const std::string& field) {
  if (field.empty()) return NAN;
  char* end = nullptr;
  const double value = std::strtod(field.c_str(), &end);
  return end == field.c_str() + field.size() ? value : NAN;
}

}  // namespace

bool MetricsTable::has(const std::string& column) const {
  return std::find(columns.begin(), columns.end(), column) != columns.end();
}

std::vector<std::pair<double, double>> MetricsTable::series(const std::string& column) const {
  std::vector<std::pair<double, double>> points;
  const auto at = static_cast<std::size_t>(std::find(columns.begin(), columns.end(), column) - columns.begin());
  if (at >= columns.size() || columns.empty()) return points;
  for (const auto& row : rows)
    if (std::isfinite(row[0]) && std::isfinite(row[at])) points.emplace_back(row[0], row[at]);
  return points;
}

std::int64_t MetricsTable::last_epoch() const {
  for (auto row = rows.rbegin(); row != rows.rend(); ++row)
    if (std::abs((*row)[0]) < 1e15) return static_cast<std::int64_t>((*row)[0]);
  return -1;
}

MetricsTable parse_metrics_table(const std::string& text, const std::string& shown) {
  MetricsTable table;
  std::istringstream lines(text);
  std::string line;
  if (!std::getline(lines, line) || line.empty()) throw Error(shown + ": no header line");
  table.columns = csv_fields(line);
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const auto fields = csv_fields(line);
    std::vector<double> row(table.columns.size(), NAN);
    for (std::size_t i = 0; i < fields.size() && i < row.size(); ++i) row[i] = number(fields[i]);
    table.rows.push_back(std::move(row));
  }
  return table;
}

MetricsTable read_metrics_table(const std::string& run_dir) {
  return parse_metrics_table(*read_beneath(run_dir, "metrics.csv", kMetricsFileLimit), run_dir + "/metrics.csv");
}

}  // namespace pix2pix::metrics
