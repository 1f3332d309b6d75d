// Time to quality: the run's clocks and when its watched value first reached each target.
#include "pix2pix/metrics/time_to_quality.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>

#include <unistd.h>

#include "pix2pix/common/error.hpp"

namespace pix2pix::metrics {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// How long the process had run when this library was initialised: loading LibTorch and CUDA's
// libraries comes before (about a second), so the kernel's record of the start is read
// (/proc/self/stat's starttime, in clock ticks since boot, against CLOCK_BOOTTIME); 0 where it
// cannot be read.
double seconds_before_initialisation() {
  std::ifstream stat("/proc/self/stat");
  const std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto name_end = text.rfind(')');  // the command name may hold spaces and parentheses
  if (name_end == std::string::npos || name_end + 2 > text.size()) return 0;
  std::istringstream fields(text.substr(name_end + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) {
      timespec boot{};
      const long ticks = sysconf(_SC_CLK_TCK);
      if (ticks <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return 0;
      const double since = static_cast<double>(boot.tv_sec) + 1e-9 * static_cast<double>(boot.tv_nsec) -
                           std::strtod(field.c_str(), nullptr) / static_cast<double>(ticks);
      return since >= 0 && since < 3600 ? since : 0;
    }
  return 0;
}

// Set while the program's libraries are initialised, before main (MPI, the data and the networks
// all come after).
const Clock::time_point kInitialised = Clock::now();
const double kBeforeInitialisation = seconds_before_initialisation();

// The index of `column`, or columns.size() when the header lacks it.
std::size_t column_index(const MetricsTable& table, const std::string& column) {
  return static_cast<std::size_t>(std::find(table.columns.begin(), table.columns.end(), column) -
                                  table.columns.begin());
}

QualityReached from_row(const MetricsTable& table, const std::vector<double>& row, double target) {
  QualityReached reached;
  reached.target = target;
  reached.epoch = static_cast<std::int64_t>(row[0]);
  const std::size_t train = column_index(table, "train_s"), wall = column_index(table, "wall_s");
  if (train < row.size()) reached.train_s = row[train];
  if (wall < row.size()) reached.wall_s = row[wall];
  return reached;
}

bool is_epoch(double value) {
  return std::abs(value) < 1e15 && value >= 0;
}

}  // namespace

double process_seconds() {
  return kBeforeInitialisation + seconds_between(kInitialised, Clock::now());
}

void RunClock::continue_from(double earlier_train_s, double earlier_wall_s) {
  earlier_train_ = earlier_train_s;
  earlier_wall_ = earlier_wall_s;
}

void RunClock::start() {
  started_ = Clock::now();
}

double RunClock::train_seconds() const {
  return earlier_train_ + seconds_between(started_, Clock::now());
}

double RunClock::wall_seconds() const {
  return earlier_wall_ + process_seconds();
}

std::vector<QualityReached> first_reached(const MetricsTable& table, const std::string& column,
                                          const std::vector<double>& targets, bool lower_is_better) {
  std::vector<QualityReached> out;
  const std::size_t at = column_index(table, column);
  for (double target : targets) {
    QualityReached reached;
    reached.target = target;
    if (at < table.columns.size())
      for (const auto& row : table.rows) {
        const double value = row[at];
        if (!is_epoch(row[0]) || !std::isfinite(value)) continue;
        if (lower_is_better ? value <= target : value >= target) {
          reached = from_row(table, row, target);
          break;
        }
      }
    out.push_back(reached);
  }
  return out;
}

QualityReached at_epoch(const MetricsTable& table, std::int64_t epoch) {
  for (const auto& row : table.rows)
    if (is_epoch(row[0]) && static_cast<std::int64_t>(row[0]) == epoch) return from_row(table, row, NAN);
  return {};
}

std::vector<double> parse_quality_targets(const std::string& text) {
  std::vector<double> targets;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    char* end = nullptr;
    const double value = std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size() || !std::isfinite(value))
      throw UsageError("--quality-targets: '" + item + "' is not a number (give values such as 16,17,18)");
    targets.push_back(value);
  }
  if (!text.empty() && text.back() == ',')
    throw UsageError("--quality-targets: '" + text + "' ends in a comma (give values such as 16,17,18)");
  return targets;
}

}  // namespace pix2pix::metrics
