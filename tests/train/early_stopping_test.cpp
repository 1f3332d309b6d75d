// The paper's rule on synthetic PSNR sequences.
#include <gtest/gtest.h>

#include <cmath>

#include "pix2pix/common/error.hpp"
#include "pix2pix/train/early_stopping.hpp"

using namespace pix2pix::train;

namespace {
// Feeds `values` (evaluation i at epoch i) until the rule stops; returns the stopping epoch or -1.
std::int64_t stop_epoch(EarlyStopping& es, const std::vector<double>& values, Decision* last = nullptr) {
  for (size_t i = 0; i < values.size(); ++i) {
    Decision d = es.update(static_cast<std::int64_t>(i), values[i]);
    if (last) *last = d;
    if (d.stop) return static_cast<std::int64_t>(i);
  }
  return -1;
}
}  // namespace

TEST(EarlyStopping, RiseThenPlateauStopsExactlyAtBestPlusPatience) {
  std::vector<double> psnr;
  for (int i = 0; i < 30; ++i) psnr.push_back(10.0 + i);  // rising
  for (int i = 0; i < 100; ++i) psnr.push_back(39.0);     // flat at the last rising value
  EarlyStopping es({5, 7, 0.0, true});
  Decision last;
  // Smoothed = mean of the last 5: it keeps rising until evaluation 33 (window full of 39s).
  EXPECT_EQ(stop_epoch(es, psnr, &last), 33 + 7);
  EXPECT_EQ(last.best_epoch, 33);
  EXPECT_DOUBLE_EQ(last.best_smoothed, 39.0);
  EXPECT_NE(last.reason.find("did not improve for 7"), std::string::npos);
}

TEST(EarlyStopping, ADistanceToMinimiseStopsAfterItsLowestSmoothedValue) {
  // FID-like: falls to 5, then rises again; the same window and patience as above.
  std::vector<double> fid;
  for (int i = 0; i < 30; ++i) fid.push_back(34.0 - i);  // 34 .. 5
  for (int i = 0; i < 100; ++i) fid.push_back(5.0 + 0.5 * i);
  EarlyStoppingOptions options{5, 7, 0.0, true};
  options.lower_is_better = true;
  EarlyStopping es(options);
  Decision last;
  // Smoothed (window 5) around the turn: 7.0 at evaluation 29 (9 8 7 6 5), 6.2 at 30, 5.7 at 31,
  // 5.5 at 32 (6 5 5 5.5 6), then 5.6 at 33 and rising.
  EXPECT_EQ(stop_epoch(es, fid, &last), 32 + 7);
  EXPECT_EQ(last.best_epoch, 32);
  EXPECT_DOUBLE_EQ(last.best_smoothed, 5.5);
  // The same values watched as a score to maximise never find a best after the first window.
  EarlyStopping maximise({5, 7, 0.0, true});
  EXPECT_EQ(stop_epoch(maximise, fid, &last), 4 + 7);
  EXPECT_EQ(last.best_epoch, 4);
}

TEST(EarlyStopping, NoisyRiseKeepsGoingWhileTheAverageRises) {
  std::vector<double> psnr;
  for (int i = 0; i < 200; ++i) psnr.push_back(20.0 + 0.05 * i + ((i % 2) ? 1.5 : -1.5));
  EarlyStopping raw_rule({1, 1, 0.0, true});   // no smoothing: the zig-zag stops it at once
  EarlyStopping smoothed({10, 1, 0.0, true});  // an even window cancels the zig-zag
  EXPECT_GE(stop_epoch(raw_rule, psnr), 0);
  EXPECT_LT(stop_epoch(raw_rule, psnr), 10);
  EXPECT_EQ(stop_epoch(smoothed, psnr), -1);
}

TEST(EarlyStopping, MonotoneIncreaseNeverStopsAndFirstSmoothedComesAtTheWindow) {
  EarlyStopping es({4, 2, 0.0, true});
  for (int i = 0; i < 3; ++i) {
    const auto d = es.update(i, 10.0 + i);
    EXPECT_TRUE(std::isnan(d.smoothed));
    EXPECT_FALSE(d.improved);
  }
  const auto d = es.update(3, 13.0);
  EXPECT_DOUBLE_EQ(d.smoothed, 11.5);
  EXPECT_TRUE(d.improved);
  std::vector<double> rising(300);
  for (int i = 0; i < 300; ++i) rising[static_cast<size_t>(i)] = 0.01 * i;
  EarlyStopping long_run({50, 50, 0.0, true});
  EXPECT_EQ(stop_epoch(long_run, rising), -1);
}

TEST(EarlyStopping, NaNIsNoImprovementAndIsReported) {
  EarlyStopping es({1, 2, 0.0, true});
  EXPECT_TRUE(es.update(0, 10.0).improved);
  const auto nan = es.update(1, std::nan(""));
  EXPECT_TRUE(nan.non_finite);
  EXPECT_FALSE(nan.improved);
  EXPECT_FALSE(nan.stop);
  EXPECT_TRUE(es.update(2, std::numeric_limits<double>::infinity()).stop);
}

TEST(EarlyStopping, MinDeltaDisabledRuleAndExactStateRoundTrip) {
  EarlyStopping strict({1, 2, 0.5, true});
  strict.update(0, 10.0);
  EXPECT_FALSE(strict.update(1, 10.4).improved);
  EXPECT_TRUE(strict.update(2, 10.6).improved);
  EarlyStopping never({1, 1, 0.0, false});
  never.update(0, 5.0);
  EXPECT_FALSE(never.update(1, 1.0).stop);

  EarlyStopping a({3, 4, 0.0, true}), b({3, 4, 0.0, true});
  const std::vector<double> seq = {1.1, 2.2, 3.3, 2.9, 3.0, 3.1, 1.0, 0.5};
  for (size_t i = 0; i < 5; ++i) a.update(static_cast<std::int64_t>(i), seq[i]);
  b.restore(a.serialize());
  for (size_t i = 5; i < seq.size(); ++i) {
    const auto da = a.update(static_cast<std::int64_t>(i), seq[i]);
    const auto db = b.update(static_cast<std::int64_t>(i), seq[i]);
    EXPECT_EQ(da.stop, db.stop);
    EXPECT_EQ(da.smoothed, db.smoothed);  // bit-exact through the hex text form
    EXPECT_EQ(da.best_epoch, db.best_epoch);
  }
  EXPECT_THROW(b.restore("garbage"), pix2pix::Error);
  EXPECT_THROW(EarlyStopping({0, 1, 0.0, true}), pix2pix::Error);
}
