// curves.png (metrics/curves.hpp): drawn from metrics.csv by the program into place, and when it
// cannot be drawn, a reason and nothing half-written, never an exception. metrics.csv is input
// from someone else (See Note [a run directory is untrusted input]): its names never reach an
// interpreter, no link is followed to read it or write the picture.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "pix2pix/metrics/curves.hpp"
#include "support/fixtures.hpp"

namespace fs = std::filesystem;
using pix2pix::fixtures::TempDir;
using pix2pix::metrics::draw_curves;

namespace {

const char* kHeader =
    "epoch,step,lr,loss_D,loss_G_gan,loss_G_l1,val_psnr,val_psnr_smoothed,val_ssim,val_l1,images_per_s,data_s,"
    "compute_s,sync_s,scale_G,scale_D,skipped_steps\n";

void write_metrics(const TempDir& dir, const std::string& rows, const std::string& header = kHeader) {
  std::ofstream(dir / "metrics.csv") << header << rows;
}

// Only these entries in the folder: no temporary file left behind.
std::vector<std::string> entries(const TempDir& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// Pixels of curves.png in the colour of the first series (BGR 180,119,31): a line was drawn.
int first_series_pixels(const std::string& png) {
  const cv::Mat image = cv::imread(png, cv::IMREAD_COLOR);
  if (image.empty()) return -1;
  int count = 0;
  for (int y = 0; y < image.rows; ++y)
    for (int x = 0; x < image.cols; ++x)
      if (image.at<cv::Vec3b>(y, x) == cv::Vec3b(180, 119, 31)) ++count;
  return count;
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
  const cv::Mat image = cv::imread(dir / "curves.png");
  ASSERT_FALSE(image.empty());
  EXPECT_EQ(image.cols, 1000);
  EXPECT_EQ(image.rows, 760);
  EXPECT_GT(first_series_pixels(dir / "curves.png"), 200);  // the val PSNR line and its dots
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"curves.png", "metrics.csv"}));
  // Redrawn in place, with a trailing slash in the folder name.
  EXPECT_EQ(draw_curves(dir.path().string() + "/", {}), "");
  EXPECT_FALSE(cv::imread(dir / "curves.png").empty());
}

// The loss panel follows the model's columns: CycleGAN's eight losses draw as Pix2Pix's three do.
TEST(Curves, DrawsTheLossesAModelWrote) {
  TempDir dir;
  write_metrics(dir,
                "0,9,0.0002,0.3,0.7,5.4,3.0,0.3,0.9,6.0,2.7,7.5,7.5,0.01,0.5,100,0.1,1,0,1,1,0,,\n"
                "1,18,0.0002,0.2,0.5,4.1,2.3,0.1,0.8,5.1,2.1,7.6,7.6,0.02,0.5,100,0.1,1,0,1,1,0,,\n",
                "epoch,step,lr,loss_D_A,loss_G_A,loss_cycle_A,loss_idt_A,loss_D_B,loss_G_B,loss_cycle_B,loss_idt_B,"
                "val_psnr,val_psnr_smoothed,val_ssim,val_l1,images_per_s,data_s,compute_s,sync_s,scale_G,scale_D,"
                "skipped_steps,val_recognition,val_recognition_smoothed\n");
  EXPECT_EQ(draw_curves(dir.path().string(), {1, 1}), "");
  EXPECT_GT(first_series_pixels(dir / "curves.png"), 20);
}

// An unpaired val split: val_psnr is empty in every row and the cycle PSNR is what stopping
// watched, before its first smoothed value too.
TEST(Curves, DrawsTheContentPsnrOfAnUnpairedValSplit) {
  TempDir dir;
  write_metrics(dir, "0,9,0.0002,0.3,0.7,5.4,3.0,0.3,0.9,6.0,2.7,,,,,10.2,,100,0.1,1,0,1,1,0,,\n",
                "epoch,step,lr,loss_D_A,loss_G_A,loss_cycle_A,loss_idt_A,loss_D_B,loss_G_B,loss_cycle_B,loss_idt_B,"
                "val_psnr,val_psnr_smoothed,val_ssim,val_l1,val_cycle_psnr,val_cycle_psnr_smoothed,images_per_s,"
                "data_s,compute_s,sync_s,scale_G,scale_D,skipped_steps,val_recognition,val_recognition_smoothed\n");
  EXPECT_EQ(draw_curves(dir.path().string(), {-1, -1}), "");
  EXPECT_GT(first_series_pixels(dir / "curves.png"), 10);  // the one point of the cycle PSNR
  // onesided's: the deviation PSNR (val_psnr empty, as above).
  fs::remove(dir / "curves.png");
  write_metrics(dir, "0,9,0.0002,0.3,0.7,5.4,,,,,14.2,,100,0.1,1,0,1,1,0,,\n",
                "epoch,step,lr,loss_D,loss_G,loss_G_dev,val_psnr,val_psnr_smoothed,val_ssim,val_l1,"
                "val_deviation_psnr,val_deviation_psnr_smoothed,images_per_s,data_s,compute_s,sync_s,scale_G,"
                "scale_D,skipped_steps,val_recognition,val_recognition_smoothed\n");
  EXPECT_EQ(draw_curves(dir.path().string(), {-1, -1}), "");
  EXPECT_GT(first_series_pixels(dir / "curves.png"), 10);
}

TEST(Curves, WhatCannotBeDrawnIsAReasonNotAHalfImage) {
  TempDir dir;
  EXPECT_NE(draw_curves(dir.path().string(), {}).find("metrics.csv: no such file"), std::string::npos);

  write_metrics(dir, kRows);
  ASSERT_EQ(draw_curves(dir.path().string(), {}), "");
  const auto good_size = fs::file_size(dir / "curves.png");
  // Not our columns: a reason, and the previous curves.png stays as it was.
  std::ofstream(dir / "metrics.csv") << "a,b\n1,2\n";
  const std::string failed = draw_curves(dir.path().string(), {});
  EXPECT_NE(failed.find("its first column is not 'epoch'"), std::string::npos) << failed;
  EXPECT_EQ(fs::file_size(dir / "curves.png"), good_size);
  EXPECT_EQ(entries(dir), (std::vector<std::string>{"curves.png", "metrics.csv"}));

  // A folder that cannot be written (not as root: root writes anywhere).
  if (::geteuid() != 0) {
    write_metrics(dir, kRows);
    fs::permissions(dir.path(), fs::perms::owner_read | fs::perms::owner_exec);
    const std::string refused = draw_curves(dir.path().string(), {});
    fs::permissions(dir.path(), fs::perms::owner_all);
    EXPECT_NE(refused.find("cannot write"), std::string::npos) << refused;
  }
}

// Issue 45, item 1: a header cell of a run directory someone else wrote ran a command through
// gnuplot's script. Names are labels now, drawn as pixels.
TEST(Curves, ColumnNamesAreLabelsNeverCode) {
  TempDir dir;
  const std::string pwned = dir / "PWNED";
  write_metrics(dir, "0,1,0.0002,0.5,12.5,12.5\n1,2,0.0002,0.4,13.5,13.0\n",
                "epoch,step,lr,loss_D\" with lines; system(\"touch " + pwned + "\") #,val_psnr,val_psnr_smoothed\n");
  EXPECT_EQ(draw_curves(dir.path().string(), {1, -1}), "");
  EXPECT_FALSE(fs::exists(pwned));
  EXPECT_GT(first_series_pixels(dir / "curves.png"), 20);
}

// Issue 45, item 2: nothing is written through a link in the run directory, and metrics.csv is
// not read through one.
TEST(Curves, NoLinkIsFollowedToReadOrWrite) {
  TempDir outside, dir;
  const std::string precious = outside / "precious";
  std::ofstream(precious) << "keep me\n";
  write_metrics(dir, kRows);
  // The old fixed temporary names, and curves.png itself, as links to a file outside.
  for (const char* name : {".curves.png.tmp", ".curves.err.tmp", ".curves.gp.tmp", "curves.png"})
    fs::create_symlink(precious, dir / name);
  EXPECT_EQ(draw_curves(dir.path().string(), {}), "");
  std::ifstream in(precious);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "keep me\n");
  EXPECT_FALSE(fs::is_symlink(dir / "curves.png"));
  EXPECT_FALSE(cv::imread(dir / "curves.png").empty());
  for (const char* name : {".curves.png.tmp", ".curves.err.tmp", ".curves.gp.tmp"})
    EXPECT_TRUE(fs::is_symlink(dir / name)) << name;  // left alone, not written through

  // metrics.csv as a link to another run's file, or a FIFO: refused by name, nothing drawn, no hang.
  TempDir linked;
  fs::copy_file(dir / "metrics.csv", outside / "metrics.csv");
  fs::create_symlink(outside / "metrics.csv", linked / "metrics.csv");
  EXPECT_NE(draw_curves(linked.path().string(), {}).find("metrics.csv: is a symbolic link"), std::string::npos);
  EXPECT_FALSE(fs::exists(linked / "curves.png"));
  TempDir fifo;
  ASSERT_EQ(::mkfifo((fifo / "metrics.csv").c_str(), 0644), 0);
  EXPECT_NE(draw_curves(fifo.path().string(), {}).find("is a FIFO"), std::string::npos);
}
