// The run directory's metrics files: columns follow the model, rows of epochs a resumed run will
// redo are dropped, and a metrics.csv an older version wrote is rewritten under the new header.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pix2pix/common/error.hpp"
#include "pix2pix/metrics/run_directory.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using pix2pix::fixtures::TempDir;

namespace {

metrics::EpochMetrics row(std::int64_t epoch) {
  metrics::EpochMetrics m;
  m.epoch = epoch;
  m.step = 10 * (epoch + 1);
  m.lr = 0.5;
  m.losses = {{"loss_A", 1.5}, {"loss_B", 2.5}};
  m.val_psnr = 20;
  m.val_psnr_smoothed = m.val_ssim = m.val_l1 = std::nan("");
  m.scales = {{"scale_X", 4}};
  m.val_recognition = m.val_recognition_smoothed = std::nan("");
  return m;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST(RunDirectory, ColumnsFollowTheModelAndResumeKeepsEarlierEpochs) {
  TempDir dir;
  const auto columns = row(0).columns();
  EXPECT_EQ(columns, (std::vector<std::string>{"epoch", "step", "lr", "loss_A", "loss_B", "val_psnr",
                                               "val_psnr_smoothed", "val_ssim", "val_l1", "images_per_s", "data_s",
                                               "compute_s", "sync_s", "train_s", "wall_s", "scale_X", "skipped_steps",
                                               "val_recognition", "val_recognition_smoothed"}));
  {
    metrics::RunDirectory run(dir / "run", -1, columns);
    for (int e = 0; e < 3; ++e) run.append_metrics(row(e));
    metrics::EpochMetrics other = row(3);
    other.losses.pop_back();
    EXPECT_THROW(run.append_metrics(other), Error) << "a row of other columns";
  }
  const auto written = lines_of(dir / "run/metrics.csv");
  ASSERT_EQ(written.size(), 4u);
  EXPECT_EQ(written[1], "0,10,0.5,1.5,2.5,20,,,,0,0,0,0,,,4,0,,") << "clocks not kept: empty, not 0";
  EXPECT_EQ(lines_of(dir / "run/metrics.jsonl").size(), 3u);
  { metrics::RunDirectory resumed(dir / "run", 1, columns); }
  EXPECT_EQ(lines_of(dir / "run/metrics.csv").size(), 3u) << "epoch 2 is redone by the resumed run";
  EXPECT_EQ(lines_of(dir / "run/metrics.jsonl").size(), 2u);
}

TEST(RunDirectory, AnOlderHeaderIsRewrittenByColumnName) {
  TempDir dir;
  std::filesystem::create_directories(dir / "run");
  // The layout of before models named their losses: loss_G_aux after skipped_steps.
  std::ofstream(dir / "run/metrics.csv")
      << "epoch,step,lr,loss_D,loss_G_gan,loss_G_l1,val_psnr,val_psnr_smoothed,val_ssim,val_l1,images_per_s,data_s,"
         "compute_s,sync_s,scale_G,scale_D,skipped_steps,loss_G_aux,val_recognition,val_recognition_smoothed\n"
      << "0,5,0.1,0.7,0.8,9,15,,0.5,0.2,100,1,2,3,1,1,0,0.25,0.5,\n"
      << "1,10,0.1,0.6,0.9,8,16,,0.6,0.2,100,1,2,3,1,1,0,0.125,0.625,\n";
  const std::vector<std::string> columns = {"epoch",
                                            "step",
                                            "lr",
                                            "loss_D",
                                            "loss_G_gan",
                                            "loss_G_l1",
                                            "loss_G_aux",
                                            "val_psnr",
                                            "val_psnr_smoothed",
                                            "val_ssim",
                                            "val_l1",
                                            "images_per_s",
                                            "data_s",
                                            "compute_s",
                                            "sync_s",
                                            "scale_G",
                                            "scale_D",
                                            "skipped_steps",
                                            "val_recognition",
                                            "val_recognition_smoothed",
                                            "val_new"};
  { metrics::RunDirectory resumed(dir / "run", 0, columns); }
  const auto lines = lines_of(dir / "run/metrics.csv");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0],
            "epoch,step,lr,loss_D,loss_G_gan,loss_G_l1,loss_G_aux,val_psnr,val_psnr_smoothed,val_ssim,val_l1,"
            "images_per_s,data_s,compute_s,sync_s,scale_G,scale_D,skipped_steps,val_recognition,"
            "val_recognition_smoothed,val_new");
  EXPECT_EQ(lines[1], "0,5,0.1,0.7,0.8,9,0.25,15,,0.5,0.2,100,1,2,3,1,1,0,0.5,,");
}
