// pix2pix evaluate as a user meets it: on the val split it reproduces the PSNR training logged
// for the checkpoint it reads; its files; and bad input (missing split, damaged or foreign
// checkpoint, existing output, unwritable folder) named with a non-zero exit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <sstream>

#include "cli/cli_helpers.hpp"
#include "support/fixtures.hpp"

using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;
using pix2pix::cli_tests::contains;
using pix2pix::cli_tests::json_value;

namespace {

// metrics.csv's val_psnr (column 6) on the row of `epoch`.
double logged_val_psnr(const std::string& csv_path, long epoch) {
  std::ifstream in(csv_path);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string f; std::getline(ss, f, ',');) fields.push_back(f);
    if (std::stol(fields.at(0)) == epoch) return std::stod(fields.at(6));
  }
  throw std::runtime_error("no epoch " + std::to_string(epoch) + " in " + csv_path);
}

}  // namespace

TEST(EvaluateCli, ReproducesTheTrainingPsnrAndNamesBadInput) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir), "");
  pix2pix::fixtures::CommandResult r;

  // No test split: val by default, and the checkpoint's epoch is the one whose PSNR was logged.
  const std::string evaluate = "evaluate --progress none --data " + (dir / "d.h5");
  r = run_cli(evaluate + " --checkpoint " + (dir / "run") + " --out " + (dir / "ev"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "evaluated 8 val images")) << r.output;
  const std::string json = pix2pix::fixtures::read_file(dir / "ev/evaluation.json");
  EXPECT_TRUE(contains(json, "\"split\": \"val\"")) << json;
  EXPECT_TRUE(contains(json, "\"checkpoint\": \"" + (dir / "run/checkpoints/best_generator.pt") + "\"")) << json;
  const long epoch = static_cast<long>(json_value(json, "checkpoint_epoch"));
  EXPECT_GE(epoch, 0) << json;
  EXPECT_NEAR(json_value(json, "psnr"), logged_val_psnr(dir / "run/metrics.csv", epoch), 1e-6) << json;
  std::ifstream csv(dir / "ev/evaluation.csv");
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "index,name,psnr,ssim,l1");
  int rows = 0;
  while (std::getline(csv, line)) ++rows;
  EXPECT_EQ(rows, 8);
  const cv::Mat grid = cv::imread(dir / "ev/samples.png", cv::IMREAD_UNCHANGED);
  // --samples 8: rows A | G(A) | B of 32 px images shown 4x (128 px), under a band of labels.
  EXPECT_EQ(grid.cols, 3 * 128);
  EXPECT_GT(grid.rows, 8 * 128);
  EXPECT_LE(grid.rows, 8 * 128 + 40);

  // A full checkpoint reads too (last.pt: the final epoch), and gives the last epoch's PSNR.
  r = run_cli(evaluate + " --checkpoint " + (dir / "run/checkpoints/last.pt") + " --split val --out " + (dir / "ev2"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string json2 = pix2pix::fixtures::read_file(dir / "ev2/evaluation.json");
  EXPECT_NEAR(json_value(json2, "psnr"), logged_val_psnr(dir / "run/metrics.csv", 1), 1e-6) << json2;

  // Existing files are kept unless --overwrite.
  r = run_cli(evaluate + " --checkpoint " + (dir / "run") + " --out " + (dir / "ev"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, (dir / "ev/evaluation.csv") + " exists; use --overwrite")) << r.output;
  r = run_cli(evaluate + " --checkpoint " + (dir / "run") + " --out " + (dir / "ev") + " --overwrite");
  EXPECT_EQ(r.status, 0) << r.output;

  struct Bad {
    std::string args, message;
    int status;
  };
  fs::copy_file(dir / "run/checkpoints/best_generator.pt", dir / "damaged.pt");
  {
    std::fstream f(dir / "damaged.pt", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1000);
    f.put('\x5a');
  }
  pix2pix::fixtures::make_pattern_dataset(dir / "rgb.h5", 8, 4, 32, 3, 3);
  for (const Bad& bad : {
           Bad{evaluate + " --checkpoint " + (dir / "run") + " --split test --out " + (dir / "x"),
               (dir / "d.h5") + ": has no test split (it has train, val)", 1},
           Bad{evaluate + " --checkpoint " + (dir / "nowhere.pt") + " --out " + (dir / "x"), dir / "nowhere.pt", 1},
           Bad{evaluate + " --checkpoint " + (dir / "damaged.pt") + " --out " + (dir / "x"),
               "checkpoint " + (dir / "damaged.pt") + " is damaged", 1},
           Bad{evaluate + " --checkpoint " + dir.path().string() + " --out " + (dir / "x"),
               "without checkpoints/best_generator.pt", 1},
           Bad{"evaluate --progress none --data " + (dir / "rgb.h5") + " --checkpoint " + (dir / "run") +
                   " --split val --out " + (dir / "x"),
               "3 -> 3 channels; the generator takes 1 -> 1", 1},
           Bad{evaluate + " --checkpoint " + (dir / "run") + " --out /proc/no/such/dir", "--out /proc/no/such/dir", 1},
           Bad{evaluate + " --checkpoint " + (dir / "run"), "missing --out", 2},
           Bad{evaluate + " --checkpoint " + (dir / "run") + " --out " + (dir / "x") + " --split bogus",
               "--split must be one of test, val, train", 2},
           Bad{evaluate + " --checkpoint " + (dir / "run") + " --out " + (dir / "x") + " --mode sometimes",
               "--mode must be one of eval, train", 2},
       }) {
    r = run_cli(bad.args);
    EXPECT_EQ(r.status, bad.status) << bad.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, bad.message)) << bad.args << "\n" << r.output;
  }
}
