// RunReport, rank 0's reporter: the epoch line shows the smoothed value beside whatever early
// stopping watches, an epoch goes to metrics.csv, train.log and TensorBoard at once, curves.png's
// failure is said once, and summary.json measures time to quality on the watched column.
#include "pix2pix/metrics/run_report.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/fixtures.hpp"

using namespace pix2pix;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;

namespace {

metrics::EpochMetrics report_row(std::int64_t epoch) {
  metrics::EpochMetrics m;
  m.epoch = epoch;
  m.step = 10 * (epoch + 1);
  m.losses = {{"loss_D", 0.5}, {"loss_G", 1.25}};
  m.val_psnr = 12 + static_cast<double>(epoch);
  m.val_psnr_smoothed = 11.5 + static_cast<double>(epoch);
  m.val_ssim = 0.25;
  m.val_l1 = 0.1;
  m.val_recognition = m.val_recognition_smoothed = std::nan("");
  m.images_per_s = 100;
  return m;
}

std::string text_of(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

metrics::ReportOptions options(const fs::path& dir, const std::string& watched) {
  metrics::ReportOptions o;
  o.run_dir = dir.string();
  o.config = "lr = 0.0002\n";
  o.watched = watched;
  return o;
}

}  // namespace

TEST(RunReport, TheEpochLineShowsTheSmoothedValueBesideTheWatchedOne) {
  TempDir dir;
  const auto columns = report_row(0).columns();
  {
    metrics::RunReport psnr(options(dir / "a", "val_psnr_smoothed"), columns);
    EXPECT_EQ(psnr.epoch_line(report_row(0)),
              "epoch 0: loss_D 0.5000 loss_G 1.2500 | val PSNR 12.000 (smoothed 11.500) SSIM 0.2500 | 100 img/s");
  }
  {
    metrics::EpochMetrics m = report_row(0);
    m.fid = true;
    m.val_fid = 3;
    m.val_fid_smoothed = 2.5;
    metrics::RunReport fid(options(dir / "b", "val_fid_smoothed"), m.columns());
    EXPECT_EQ(fid.epoch_line(m),
              "epoch 0: loss_D 0.5000 loss_G 1.2500 | val PSNR 12.000 SSIM 0.2500 FID 3.0000 (smoothed 2.5000) | 100 "
              "img/s");
  }
  {
    metrics::EpochMetrics m = report_row(0);
    m.content = "cycle";
    m.val_content_psnr = 9;
    m.val_content_psnr_smoothed = 8;
    auto o = options(dir / "c", "val_cycle_psnr_smoothed");
    o.unpaired_val = true;
    metrics::RunReport cycle(o, m.columns());
    EXPECT_EQ(cycle.epoch_line(m),
              "epoch 0: loss_D 0.5000 loss_G 1.2500 | val cycle PSNR 9.000 (smoothed 8.000) | 100 img/s");
  }
}

TEST(RunReport, WritesEachEpochEverywhereAndTimeToQualityOnTheWatchedColumn) {
  TempDir dir;
  auto o = options(dir / "run", "val_psnr_smoothed");
  o.tensorboard = true;
  o.quality_targets = {12, 100};
  {
    metrics::RunReport report(o, report_row(0).columns());
    testing::internal::CaptureStdout();
    for (int e = 0; e < 3; ++e) report.epoch(report_row(e));
    const std::string printed = testing::internal::GetCapturedStdout();
    EXPECT_NE(printed.find("epoch 2: loss_D"), std::string::npos) << printed;
    metrics::RunClock clock;
    report.summary("\"stop_reason\": \"done\"", 2, clock, "done");
  }
  const std::string config = text_of(dir / "run/config.cfg");
  EXPECT_EQ(config.substr(config.find('\n') + 1), "lr = 0.0002\n") << config;
  std::ifstream csv(dir / "run/metrics.csv");
  int rows = 0;
  for (std::string line; std::getline(csv, line);) ++rows;
  EXPECT_EQ(rows, 4);
  const std::string log = text_of(dir / "run/train.log");
  EXPECT_NE(log.find("epoch 1: loss_D"), std::string::npos) << log;
  EXPECT_NE(log.find("stopped: done"), std::string::npos) << log;
  ASSERT_TRUE(fs::is_directory(dir / "run/tensorboard"));
  EXPECT_FALSE(fs::is_empty(dir / "run/tensorboard"));
  const std::string summary = text_of(dir / "run/summary.json");
  EXPECT_EQ(
      summary.rfind("{\n  \"stop_reason\": \"done\",\n  \"time_to_quality\": {\"column\": \"val_psnr_smoothed\"", 0),
      0u)
      << summary;
  // The smoothed PSNR is 11.5, 12.5, 13.5: 12 is first reached at epoch 1, 100 never.
  EXPECT_NE(summary.find("{\"target\": 12, \"epoch\": 1,"), std::string::npos) << summary;
  EXPECT_NE(summary.find("{\"target\": 100, \"epoch\": null,"), std::string::npos) << summary;
}

TEST(RunReport, ACurvesFailureIsSaidOnceAndTheRunGoesOn) {
  TempDir dir;
  metrics::RunReport report(options(dir / "run", "val_psnr_smoothed"), report_row(0).columns());
  // No rows yet is fine; a metrics.csv that is not ours is a reason.
  std::ofstream(dir / "run/metrics.csv") << "a,b\n1,2\n";
  testing::internal::CaptureStderr();
  report.curves(-1, -1);
  report.curves(-1, -1);
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_EQ(said.find("no curves.png"), said.rfind("no curves.png")) << said;
  EXPECT_NE(said.find("warning: no curves.png: "), std::string::npos) << said;
  EXPECT_NE(text_of(dir / "run/train.log").find("no curves.png"), std::string::npos);
}
