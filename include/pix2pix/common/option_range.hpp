// The values a numeric option takes, and the one message for a value outside them: the command
// line's options (cli/options.hpp) and a model's own parameters (gan/model_registry.hpp) alike.
#pragma once

#include <limits>
#include <string>

namespace pix2pix {

// The interval a numeric option must lie in; ends may be open. Infinite ends mean "no bound".
struct Range {
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  bool low_open = false, high_open = false;
  bool whole = false;  // a count: whole numbers only, described as "in 1..10"

  static Range at_least(double low) { return {low, std::numeric_limits<double>::infinity(), false, false}; }
  static Range above(double low) { return {low, std::numeric_limits<double>::infinity(), true, false}; }
  static Range closed(double low, double high) { return {low, high, false, false}; }
  static Range right_open(double low, double high) { return {low, high, false, true}; }     // [low, high)
  static Range left_open(double low, double high) { return {low, high, true, false}; }      // (low, high]
  static Range counts(double low, double high) { return {low, high, false, false, true}; }  // low..high
  bool contains(double value) const;
  std::string describe() const;  // "> 0", ">= 1", "in [0, 1)", "in 1..10"
};

// UsageError unless `value` lies in `range`: "--lr must be finite and > 0, got inf",
// "--pool-size must be a whole number >= 0, got 1.5". `option` is the name without "--".
void check_option_value(const std::string& option, double value, const Range& range);

// The shortest decimal that reads back to the same double (See Note [options as the exact values parsed]).
std::string number_text(double value);

}  // namespace pix2pix
