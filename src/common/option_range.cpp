#include "pix2pix/common/option_range.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "pix2pix/common/error.hpp"

namespace pix2pix {
namespace {

// A count's bound as it is typed: 1000000, not 1e+06.
std::string bound_text(double value, bool whole) {
  if (!whole || std::abs(value) >= 1e15) return number_text(value);
  char text[24];
  std::snprintf(text, sizeof(text), "%.0f", value);
  return text;
}

}  // namespace

// Note [options as the exact values parsed]: a double is written as the shortest decimal that
// reads back to the same bits (0.0002 stays "0.0002"; 0.00020000001 is not rounded to it). Ranks
// compare these texts (See Note [ranks that agree]) and a resume compares them with the
// checkpoint's, so two values that differ in the last bit must never print alike: the default six
// digits made `--lr 0.0002` on one rank and `0.00020000001` on the other agree, and the replicas
// diverged.
std::string number_text(double value) {
  char text[40];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value || !std::isfinite(value)) break;
  }
  return text;
}

bool Range::contains(double value) const {
  if (!std::isfinite(value) || (whole && std::floor(value) != value)) return false;
  const bool above_low = low_open ? value > low : value >= low;
  const bool below_high = high_open ? value < high : value <= high;
  return above_low && below_high;
}

std::string Range::describe() const {
  const bool bounded_low = std::isfinite(low), bounded_high = std::isfinite(high);
  if (bounded_low && bounded_high && whole && !low_open && !high_open)
    return "in " + bound_text(low, true) + ".." + bound_text(high, true);
  if (bounded_low && bounded_high)
    return std::string("in ") + (low_open ? "(" : "[") + number_text(low) + ", " + number_text(high) +
           (high_open ? ")" : "]");
  if (bounded_low) return (low_open ? "> " : ">= ") + bound_text(low, whole);
  if (bounded_high) return (high_open ? "< " : "<= ") + bound_text(high, whole);
  return "finite";
}

void check_option_value(const std::string& option, double value, const Range& range) {
  if (range.contains(value)) return;
  const bool finite = std::isfinite(value);
  throw UsageError("--" + option + " must be " +
                   (range.whole && finite && std::floor(value) != value ? "a whole number " : "") +
                   (finite ? "" : "finite and ") + range.describe() + ", got " +
                   bound_text(value, range.whole && finite && std::floor(value) == value));
}

}  // namespace pix2pix
