// FID and KID during training (--val-features, --val-metrics, --es-metric fid|kid) as a user runs
// it, with a train-classifier file as the feature network: the columns of metrics.csv, early
// stopping on the lowest smoothed FID, `evaluate` reproducing the FID and KID logged for the best
// model, an exact resume, and the option combinations that are refused. On the CPU (--device cpu)
// on a GPU node too: there training's autotuned cuDNN kernels and evaluate's deterministic ones
// (See Note [inference kernels are deterministic]) part in the last bits, and so do two runs; FID
// on GPU ranks is the smoke's (scripts/gpu-smoke.sh, emafid).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "cli/cli_helpers.hpp"
#include "support/fixtures.hpp"

using pix2pix::cli_tests::contains;
using pix2pix::cli_tests::json_value;
using pix2pix::cli_tests::read_metrics;
using pix2pix::fixtures::read_file;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::TempDir;

namespace {

// metrics.csv as rows of named fields.
// Labelled data (120 images: 108 train, 12 val) and a recognition network trained on it.
std::string prepare(const TempDir& dir) {
  auto r = run_cli("prepare --images idx:" + pix2pix::fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz") +
                   " --labels --derive edges --size 32 --limit 120 --progress none --out " + (dir / "l.h5"));
  if (r.status != 0) return r.output;
  r = run_cli("train-classifier --data " + (dir / "l.h5") + " --out " + (dir / "c.pt") +
              " --filters 8 --batch-size 32 --max-epochs 1 --progress none");
  return r.status == 0 ? "" : r.output;
}

std::string train_with_features(const TempDir& dir, const std::string& run, const std::string& extra) {
  return "train --config " + std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg --data " + (dir / "l.h5") +
         " --run-dir " + (dir / run) + " --device cpu --progress none --val-features " + (dir / "c.pt") + " " + extra;
}

}  // namespace

TEST(ValFeatures, FidAndKidJoinEachValidationAndEarlyStoppingKeepsTheLowest) {
  TempDir dir;
  ASSERT_EQ(prepare(dir), "");
  auto r = run_cli(train_with_features(dir, "run", "--max-epochs 4 --es-metric fid --es-window 1 --es-patience 10"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "val FID/KID")) << r.output;
  EXPECT_TRUE(contains(r.output, "early stopping on      validation FID")) << r.output;
  const auto rows = read_metrics(dir / "run/metrics.csv");
  ASSERT_EQ(rows.size(), 4u);
  long best = -1;
  double lowest = INFINITY;
  for (const auto& row : rows) {
    for (const char* column : {"val_fid", "val_fid_smoothed", "val_kid"}) ASSERT_TRUE(row.count(column)) << column;
    const double fid = std::stod(row.at("val_fid"));
    EXPECT_TRUE(std::isfinite(fid) && fid >= 0) << row.at("val_fid");
    EXPECT_EQ(row.at("val_fid_smoothed"), row.at("val_fid"));  // window 1
    EXPECT_EQ(row.at("val_kid_smoothed"), "");                 // not watched: empty
    if (fid < lowest) lowest = fid, best = std::stol(row.at("epoch"));
  }
  const std::string summary = read_file(dir / "run/summary.json");
  EXPECT_TRUE(contains(summary, "\"es_metric\": \"fid\"")) << summary;
  EXPECT_EQ(static_cast<long>(json_value(summary, "best_epoch")), best) << summary;
  EXPECT_NEAR(json_value(summary, "best_fid_smoothed"), lowest, 1e-9 * lowest) << summary;

  // evaluate, on the val split with the same network, gives the FID and KID training logged for
  // the model it kept (KID: 12 images, so every subset is the whole set, whatever the seed).
  r = run_cli("evaluate --progress none --checkpoint " + (dir / "run") + " --data " + (dir / "l.h5") +
              " --split val --device cpu --features " + (dir / "c.pt") + " --features-cache none --out " +
              (dir / "ev"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string json = read_file(dir / "ev/evaluation.json");
  const auto& kept = rows.at(static_cast<size_t>(best));
  EXPECT_NEAR(json_value(json, "fid"), std::stod(kept.at("val_fid")), 1e-8 * lowest) << json;
  EXPECT_NEAR(json_value(json, "kid"), std::stod(kept.at("val_kid")), 1e-8 + 1e-8 * std::abs(json_value(json, "kid")))
      << json;
}

TEST(ValFeatures, AResumedRunLogsWhatAnUninterruptedOneDoes) {
  TempDir dir;
  ASSERT_EQ(prepare(dir), "");
  const std::string options = "--es-metric kid --es-window 2 --es-patience 10 --val-metrics kid";
  auto r = run_cli(train_with_features(dir, "whole", "--max-epochs 3 " + options));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli(train_with_features(dir, "parts", "--max-epochs 2 " + options));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli(train_with_features(dir, "parts", "--max-epochs 3 --resume auto " + options));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto whole = read_metrics(dir / "whole/metrics.csv"), parts = read_metrics(dir / "parts/metrics.csv");
  ASSERT_EQ(whole.size(), 3u);
  ASSERT_EQ(parts.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(whole[i].count("val_fid")) << "--val-metrics kid: no FID column";
    for (const char* column : {"val_kid", "val_kid_smoothed", "val_psnr"})
      EXPECT_EQ(whole[i].at(column), parts[i].at(column)) << column << " of epoch " << i;
  }
  EXPECT_NE(whole[2].at("val_kid_smoothed"), "");
  // A resume that measures otherwise would mix two measures in one smoothed history.
  r = run_cli(train_with_features(dir, "parts", "--max-epochs 4 --resume auto --val-kid-subsets 7 " + options));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--val-kid-subsets 100 -> 7")) << r.output;
  r = run_cli(train_with_features(dir, "parts", "--max-epochs 4 --resume auto --val-features-input signed " + options));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--val-features-input auto -> signed")) << r.output;
  // Not watched by early stopping, the feature options may change (and the run says so).
  r = run_cli(train_with_features(dir, "parts", "--max-epochs 4 --resume auto --val-kid-subsets 7 --val-metrics kid"));
  EXPECT_EQ(r.status, 2) << r.output;  // --es-metric kid -> psnr: the smoothed history is of KID
  r = run_cli(train_with_features(dir, "whole",
                                  "--max-epochs 4 --resume auto --es-metric kid --es-window 2 --es-patience 10 "
                                  "--val-metrics kid,fid"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "--val-metrics kid -> kid,fid")) << r.output;
  EXPECT_TRUE(read_metrics(dir / "whole/metrics.csv").at(3).count("val_fid"));
}

TEST(ValFeatures, OptionsThatDoNotGoTogetherAreRefused) {
  TempDir dir;
  ASSERT_EQ(prepare(dir), "");
  const std::string base = "train --config " + std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg --data " +
                           (dir / "l.h5") + " --progress none --run-dir " + (dir / "bad");
  const auto refused = [&](const std::string& extra, int status, const std::string& text) {
    const auto r = run_cli(base + " " + extra);
    EXPECT_EQ(r.status, status) << extra << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, text)) << extra << "\n" << r.output;
  };
  refused("--val-metrics psnr,fid", 2, "--val-metrics fid and kid need the feature network");
  refused("--es-metric fid", 2, "--es-metric fid watches the fid of each validation");
  refused("--val-metrics psnr,fidd --val-features " + (dir / "c.pt"), 2, "'fidd' is none of psnr, ssim, l1, fid, kid");
  refused("--val-metrics psnr --val-features " + (dir / "c.pt"), 2, "--val-metrics has neither fid nor kid");
  refused("--val-kid-subsets 5", 2, "--val-kid-subsets needs --val-features");
  refused("--val-features " + (dir / "c.pt") + " --val-features-input unit", 2,
          "--val-features-input signed); got --val-features-input unit");
  std::ofstream(dir / "text.pt") << "not a network";
  refused("--val-features " + (dir / "text.pt"), 1, "neither a TorchScript module");
  EXPECT_FALSE(std::filesystem::exists(dir / "bad/checkpoints/last.pt"));
}
