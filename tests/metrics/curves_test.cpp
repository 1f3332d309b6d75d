// curves.png (metrics/curves.hpp): drawn from metrics.csv by gnuplot into place, and when it
// cannot be drawn, a reason and nothing half-written, never an exception.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "pix2pix/metrics/curves.hpp"
#include "support/fixtures.hpp"

namespace fs = std::filesystem;
using pix2pix::fixtures::TempDir;
using pix2pix::metrics::draw_curves;

namespace {

void write_metrics(const TempDir& dir, const std::string& rows) {
  std::ofstream(dir / "metrics.csv")
      << "epoch,step,lr,loss_D,loss_G_gan,loss_G_l1,val_psnr,val_psnr_smoothed,val_ssim,val_l1,images_per_s,data_s,"
         "compute_s,sync_s,scale_G,scale_D,skipped_steps\n"
      << rows;
}

bool is_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, sizeof(magic));
  return in && std::string(magic, 8) == "\x89PNG\r\n\x1a\n";
}

// Only curves.png and metrics.csv: no temporary file left behind.
std::vector<std::string> entries(const TempDir& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

const char* kRows =
    "0,9,0.0002,0.7,0.9,30.1,12.5,,0.3,0.2,100,0.1,1,0,1,1,0\n"
    "1,18,0.0002,0.6,1.0,25.1,13.5,13.0,0.35,0.18,100,0.1,1,0,1,1,0\n"
    "2,27,0.0002,0.5,1.1,20.1,,,,,100,0.1,1,0,1,1,0\n"
    "3,36,0.0002,0.5,1.2,18.1,14.5,14.0,0.4,0.15,100,0.1,1,0,1,1,0\n";

}  // namespace

TEST(Curves, DrawsAPngFromMetricsWithMarksAndLeavesNothingElse) {
  TempDir dir;
  write_metrics(dir, kRows);  // epoch 2 not validated: empty fields
  EXPECT_EQ(draw_curves(dir.path().string(), {3, 3}), "");
  EXPECT_TRUE(is_png(dir / "curves.png"));
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"curves.png", "metrics.csv"}));
  // Redrawn in place, with a trailing slash in the folder name.
  EXPECT_EQ(draw_curves(dir.path().string() + "/", {}), "");
  EXPECT_TRUE(is_png(dir / "curves.png"));
}

// The loss panel follows the model's columns: CycleGAN's eight losses draw as Pix2Pix's three do
// (a fixed list of Pix2Pix's columns made gnuplot fail here).
TEST(Curves, DrawsTheLossesAModelWrote) {
  TempDir dir;
  std::ofstream(dir / "metrics.csv")
      << "epoch,step,lr,loss_D_A,loss_G_A,loss_cycle_A,loss_idt_A,loss_D_B,loss_G_B,loss_cycle_B,loss_idt_B,"
         "val_psnr,val_psnr_smoothed,val_ssim,val_l1,images_per_s,data_s,compute_s,sync_s,scale_G,scale_D,"
         "skipped_steps,val_recognition,val_recognition_smoothed\n"
      << "0,9,0.0002,0.3,0.7,5.4,3.0,0.3,0.9,6.0,2.7,7.5,7.5,0.01,0.5,100,0.1,1,0,1,1,0,,\n"
      << "1,18,0.0002,0.2,0.5,4.1,2.3,0.1,0.8,5.1,2.1,7.6,7.6,0.02,0.5,100,0.1,1,0,1,1,0,,\n";
  EXPECT_EQ(draw_curves(dir.path().string(), {1, 1}), "");
  EXPECT_TRUE(is_png(dir / "curves.png"));
}

// An unpaired val split: val_psnr is empty in every row and the cycle PSNR is what stopping
// watched, before its first smoothed value too (plotting the empty val_psnr made gnuplot fail:
// "x range is invalid").
TEST(Curves, DrawsTheContentPsnrOfAnUnpairedValSplit) {
  TempDir dir;
  std::ofstream(dir / "metrics.csv")
      << "epoch,step,lr,loss_D_A,loss_G_A,loss_cycle_A,loss_idt_A,loss_D_B,loss_G_B,loss_cycle_B,loss_idt_B,"
         "val_psnr,val_psnr_smoothed,val_ssim,val_l1,val_cycle_psnr,val_cycle_psnr_smoothed,images_per_s,data_s,"
         "compute_s,sync_s,scale_G,scale_D,skipped_steps,val_recognition,val_recognition_smoothed\n"
      << "0,9,0.0002,0.3,0.7,5.4,3.0,0.3,0.9,6.0,2.7,,,,,10.2,,100,0.1,1,0,1,1,0,,\n";
  EXPECT_EQ(draw_curves(dir.path().string(), {-1, -1}), "");
  EXPECT_TRUE(is_png(dir / "curves.png"));
  // onesided's: the deviation PSNR (val_psnr empty, as above).
  fs::remove(dir / "curves.png");
  std::ofstream(dir / "metrics.csv")
      << "epoch,step,lr,loss_D,loss_G,loss_G_dev,val_psnr,val_psnr_smoothed,val_ssim,val_l1,val_deviation_psnr,"
         "val_deviation_psnr_smoothed,images_per_s,data_s,compute_s,sync_s,scale_G,scale_D,skipped_steps,"
         "val_recognition,val_recognition_smoothed\n"
      << "0,9,0.0002,0.3,0.7,5.4,,,,,14.2,,100,0.1,1,0,1,1,0,,\n";
  EXPECT_EQ(draw_curves(dir.path().string(), {-1, -1}), "");
  EXPECT_TRUE(is_png(dir / "curves.png"));
}

TEST(Curves, WhatCannotBeDrawnIsAReasonNotAHalfImage) {
  TempDir dir;
  EXPECT_NE(draw_curves(dir.path().string(), {}).find("metrics.csv does not exist"), std::string::npos);

  write_metrics(dir, kRows);
  ASSERT_EQ(draw_curves(dir.path().string(), {}), "");
  const auto good_size = fs::file_size(dir / "curves.png");
  // Not our columns: gnuplot fails, and the previous curves.png stays as it was.
  std::ofstream(dir / "metrics.csv") << "a,b\n1,2\n";
  const std::string failed = draw_curves(dir.path().string(), {});
  EXPECT_NE(failed.find("gnuplot failed"), std::string::npos) << failed;
  EXPECT_EQ(fs::file_size(dir / "curves.png"), good_size);
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"curves.png", "metrics.csv"}));

  // No gnuplot on PATH (a cluster node without it): a reason that says how to get it.
  const std::string path = std::getenv("PATH");
  setenv("PATH", (dir / "no-bin").c_str(), 1);
  write_metrics(dir, kRows);
  const std::string missing = draw_curves(dir.path().string(), {});
  setenv("PATH", path.c_str(), 1);
  EXPECT_NE(missing.find("gnuplot not found (apt-get install gnuplot-nox)"), std::string::npos) << missing;
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"curves.png", "metrics.csv"}));
}
