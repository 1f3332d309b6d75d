// The one range check and message of numeric options (common/option_range.hpp).
#include "pix2pix/common/option_range.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "pix2pix/common/error.hpp"

using pix2pix::Range;

namespace {

std::string problem(const std::string& option, double value, const Range& range) {
  try {
    pix2pix::check_option_value(option, value, range);
  } catch (const pix2pix::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OptionRange, EachFormContainsItsValuesAndSaysSo) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(Range::above(0).contains(1e-300));
  EXPECT_FALSE(Range::above(0).contains(0));
  EXPECT_TRUE(Range::at_least(0).contains(0));
  EXPECT_FALSE(Range::right_open(0, 1).contains(1));
  EXPECT_TRUE(Range::left_open(0, 1).contains(1));
  EXPECT_FALSE(Range::at_least(0).contains(inf));
  EXPECT_FALSE(Range::closed(0, 1).contains(std::nan("")));
  EXPECT_TRUE(Range::counts(1, 10).contains(10));
  EXPECT_FALSE(Range::counts(1, 10).contains(2.5)) << "a count is whole";
  EXPECT_EQ(Range::above(0).describe(), "> 0");
  EXPECT_EQ(Range::at_least(1).describe(), ">= 1");
  EXPECT_EQ(Range::right_open(0, 1).describe(), "in [0, 1)");
  EXPECT_EQ(Range::left_open(0, 0.5).describe(), "in (0, 0.5]");
  EXPECT_EQ(Range::counts(1, 1000000).describe(), "in 1..1000000") << "as typed, not 1e+06";
  EXPECT_EQ(Range::counts(0, inf).describe(), ">= 0");
  EXPECT_EQ(Range{}.describe(), "finite");
}

TEST(OptionRange, AValueOutsideIsAUsageErrorNamingTheOptionAndTheValue) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(problem("lr", 0.5, Range::above(0)), "");
  EXPECT_EQ(problem("lr", inf, Range::above(0)), "--lr must be finite and > 0, got inf");
  EXPECT_EQ(problem("lr", 0.00020000000000000001, Range::above(0.0003)), "--lr must be > 0.0003, got 0.0002");
  EXPECT_EQ(problem("beta1", 1, Range::right_open(0, 1)), "--beta1 must be in [0, 1), got 1");
  EXPECT_EQ(problem("pool-size", 1.5, Range::counts(0, inf)), "--pool-size must be a whole number >= 0, got 1.5");
  EXPECT_EQ(problem("compression", 10, Range::counts(0, 9)), "--compression must be in 0..9, got 10");
  EXPECT_EQ(problem("epochs", 3000000, Range::counts(1, 1000000)), "--epochs must be in 1..1000000, got 3000000");
}
