// Time to quality (See Note [time to quality]): the run's clocks continue over sessions, and the
// first epoch each target was reached is read from metrics.csv by column name.
#include "pix2pix/metrics/time_to_quality.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "pix2pix/common/error.hpp"

namespace pix2pix::metrics {
namespace {

MetricsTable table(const std::string& text) {
  return parse_metrics_table(text, "metrics.csv");
}

// Three epochs of a run, the middle one not validated; a resumed session's rows continue the clocks.
const char* kRows =
    "epoch,step,val_psnr_smoothed,val_fid_smoothed,train_s,wall_s\n"
    "0,10,14.5,90,2.5,4\n"
    "1,20,,,5,6.5\n"
    "2,30,17.25,40,7.5,9\n"
    "3,40,16.5,30,10,13\n";

TEST(TimeToQuality, EachTargetIsTheFirstRowThatReachedIt) {
  const auto reached = first_reached(table(kRows), "val_psnr_smoothed", {14, 17, 16.5, 18}, false);
  ASSERT_EQ(reached.size(), 4u);
  EXPECT_EQ(reached[0].epoch, 0);
  EXPECT_DOUBLE_EQ(reached[0].train_s, 2.5);
  EXPECT_DOUBLE_EQ(reached[0].wall_s, 4);
  EXPECT_EQ(reached[1].epoch, 2) << "epoch 1 was not validated: an empty value reaches nothing";
  EXPECT_DOUBLE_EQ(reached[1].train_s, 7.5);
  EXPECT_EQ(reached[2].epoch, 2) << "the first row, not the last one at the target";
  EXPECT_DOUBLE_EQ(reached[2].target, 16.5);
  EXPECT_EQ(reached[3].epoch, -1);
  EXPECT_TRUE(std::isnan(reached[3].train_s) && std::isnan(reached[3].wall_s));
}

TEST(TimeToQuality, LowerIsBetterForFidAndAColumnNotThereReachesNothing) {
  const auto fid = first_reached(table(kRows), "val_fid_smoothed", {50, 30, 10}, true);
  EXPECT_EQ(fid[0].epoch, 2);
  EXPECT_EQ(fid[1].epoch, 3);
  EXPECT_EQ(fid[2].epoch, -1);
  EXPECT_EQ(first_reached(table(kRows), "val_kid_smoothed", {0}, true)[0].epoch, -1);
  // metrics.csv of before the clocks were kept: the epoch is known, the times are not.
  const auto old = first_reached(table("epoch,val_psnr_smoothed\n0,12\n1,15\n"), "val_psnr_smoothed", {14}, false);
  EXPECT_EQ(old[0].epoch, 1);
  EXPECT_TRUE(std::isnan(old[0].train_s));
}

TEST(TimeToQuality, TheClocksAtAnEpoch) {
  const QualityReached best = at_epoch(table(kRows), 2);
  EXPECT_EQ(best.epoch, 2);
  EXPECT_DOUBLE_EQ(best.wall_s, 9);
  EXPECT_EQ(at_epoch(table(kRows), 7).epoch, -1);
  EXPECT_EQ(at_epoch(table(kRows), -1).epoch, -1) << "no best epoch";
}

TEST(TimeToQuality, TheClocksContinueFromTheEarlierSessions) {
  RunClock fresh;
  fresh.start();
  RunClock resumed;
  resumed.continue_from(100, 250);
  resumed.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double train = fresh.train_seconds();
  EXPECT_GE(train, 0.02);
  EXPECT_LT(train, 60);
  EXPECT_GE(fresh.wall_seconds(), train) << "the process started before the loop";
  EXPECT_NEAR(fresh.wall_seconds(), process_seconds(), 1);
  EXPECT_GE(resumed.train_seconds(), 100.02);
  EXPECT_NEAR(resumed.train_seconds() - 100, fresh.train_seconds(), 1);
  EXPECT_NEAR(resumed.wall_seconds() - 250, process_seconds(), 1);
  // A checkpoint that did not keep them: unknown, not zero.
  RunClock unknown;
  unknown.continue_from(NAN, NAN);
  EXPECT_TRUE(std::isnan(unknown.train_seconds()) && std::isnan(unknown.wall_seconds()));
}

TEST(TimeToQuality, TargetsAreCheckedNumbers) {
  EXPECT_EQ(parse_quality_targets(""), std::vector<double>{});
  EXPECT_EQ(parse_quality_targets("16, 17.5,-3"), (std::vector<double>{16, 17.5, -3}));
  for (const char* bad : {"16,,17", "16,x", "nan", "16,", "1e999", "16, "}) {
    try {
      parse_quality_targets(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--quality-targets"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace pix2pix::metrics
