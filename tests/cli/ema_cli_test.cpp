// --ema-decay and --weights as a user runs them: the start-up table and summary say the average
// is validated, `evaluate` of the run reproduces the PSNR training logged for it (and --weights raw
// scores other weights), translate and export say which weights they used, and bad values, a
// changed decay on resume and weights a file does not hold are refused by name.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <fstream>
#include <map>
#include <sstream>

#include "cli/cli_helpers.hpp"
#include "support/fixtures.hpp"

using pix2pix::cli_tests::contains;
using pix2pix::cli_tests::json_value;
using pix2pix::cli_tests::metrics_column;
using pix2pix::cli_tests::prepare_small_pairs;
using pix2pix::fixtures::read_file;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::TempDir;

namespace {

std::string ema_train(const TempDir& dir, const std::string& run, const std::string& extra) {
  return pix2pix::cli_tests::smoke_train_command(dir, run, extra);
}

}  // namespace

TEST(EmaCli, TheRunValidatesTheAverageAndInferenceUsesIt) {
  TempDir dir;
  ASSERT_EQ(prepare_small_pairs(dir), "");
  auto r = run_cli(ema_train(dir, "run", "--ema-decay 0.8"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "moving average         of the generator, decay 0.8 (half-life 3 steps)")) << r.output;
  const std::string summary = read_file(dir / "run/summary.json");
  EXPECT_TRUE(contains(summary, "\"validated_weights\": \"ema\"")) << summary;
  EXPECT_NEAR(json_value(summary, "ema_decay"), 0.8, 1e-12) << summary;
  const auto logged = metrics_column(dir / "run/metrics.csv", "val_psnr");
  ASSERT_EQ(logged.size(), 2u);

  // --no-early-stop with a window of 50: the final model is best_generator.pt.
  const std::string evaluate =
      "evaluate --progress none --checkpoint " + (dir / "run") + " --data " + (dir / "d.h5") + " --split val --out ";
  r = run_cli(evaluate + (dir / "ev"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "best_generator.pt (ema weights, eval mode)")) << r.output;
  std::string json = read_file(dir / "ev/evaluation.json");
  EXPECT_TRUE(contains(json, "\"weights\": \"ema\"")) << json;
  // The same weights on the same images. On CPUs the kernels agree to rounding. On GPUs training
  // validates with the autotuner's cuDNN algorithms at --val-batch-size 64, evaluate with
  // deterministic ones at its own batch (See Note [inference kernels are deterministic]), both in
  // TF32, whose 10-bit mantissa rounds each algorithm's sums differently. The GPU's bound is a
  // guess until a GPU has run this: ~1e-3 relative per pixel, mostly cancelling over 60 images,
  // against 3.5e-3 dB between the raw weights and the average on CPUs (LibTorch 1.13).
  const double same_weights = torch::cuda::is_available() ? 5e-4 : 1e-6;
  EXPECT_NEAR(json_value(json, "psnr"), logged.back(), same_weights) << json;
  r = run_cli(evaluate + (dir / "raw") + " --weights raw");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "best.pt (raw weights, eval mode)")) << r.output;
  json = read_file(dir / "raw/evaluation.json");
  EXPECT_TRUE(contains(json, "\"weights\": \"raw\"")) << json;
  EXPECT_GT(std::abs(json_value(json, "psnr") - logged.back()), same_weights)
      << "the raw weights scored as the average";

  r = run_cli("translate --progress none --checkpoint " + (dir / "run") + " --data " + (dir / "d.h5") +
              " --split val --out " + (dir / "out"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "(ema weights, eval mode")) << r.output;
  r = run_cli("export --checkpoint " + (dir / "run") + " --format pytorch --out " + (dir / "g.pth"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "ema weights)")) << r.output;
  r = run_cli("export --checkpoint " + (dir / "run") + " --weights raw --format pytorch --out " + (dir / "g_raw.pth"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "best.pt (epoch 1, raw weights)")) << r.output;

  // Weights a file does not hold.
  r = run_cli("evaluate --progress none --checkpoint " + (dir / "run/checkpoints/best_generator.pt") + " --data " +
              (dir / "d.h5") + " --split val --weights raw --out " + (dir / "bad"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--weights raw: it holds the moving average alone")) << r.output;
  r = run_cli(evaluate + (dir / "bad") + " --weights newest");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--weights")) << r.output;
}

TEST(EmaCli, BadDecaysAndAChangedDecayOnResumeAreRefused) {
  TempDir dir;
  ASSERT_EQ(prepare_small_pairs(dir), "");
  for (const char* decay : {"1", "-0.1", "nan", "1.5"}) {
    const auto r = run_cli(ema_train(dir, "bad", std::string("--ema-decay ") + decay));
    EXPECT_EQ(r.status, 2) << decay << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "--ema-decay must be")) << r.output;
  }
  auto r = run_cli(ema_train(dir, "plain", "--max-epochs 1"));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli("evaluate --progress none --checkpoint " + (dir / "plain") + " --weights ema --data " + (dir / "d.h5") +
              " --split val --out " + (dir / "ev"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--weights ema: it holds the raw weights")) << r.output;
  // Starting an average on resume changes what is validated and kept: refused unless accepted,
  // then started from the checkpoint's weights.
  const std::string resume = "--max-epochs 2 --resume auto --ema-decay 0.9";
  r = run_cli(ema_train(dir, "plain", resume));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--ema-decay 0 -> 0.9")) << r.output;
  r = run_cli(ema_train(dir, "plain", resume + " --accept-changed-options"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "holds no moving average of the generator: --ema-decay 0.9 starts it")) << r.output;
  EXPECT_TRUE(contains(read_file(dir / "plain/summary.json"), "\"validated_weights\": \"ema\""));
}
