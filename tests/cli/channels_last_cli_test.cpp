// See Note [channels-last parameters]: `train --channels-last on` as a user runs it, on CPUs (GPU
// ranks take it by default in bf16 and fp16): a run resumes exactly in its layout, resumes in the
// other layout, and its model is evaluated as any other; a bad value is refused by name. On the CPU
// (--device cpu) on a GPU node too: there cuDNN's autotuned kernels part two runs in the last bits.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "cli/cli_helpers.hpp"
#include "support/fixtures.hpp"

using pix2pix::cli_tests::contains;
using pix2pix::cli_tests::expect_learned_the_same;
using pix2pix::cli_tests::json_value;
using pix2pix::cli_tests::metrics_column;
using pix2pix::cli_tests::read_metrics;
using pix2pix::cli_tests::smoke_train_command;
using pix2pix::fixtures::read_file;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::TempDir;

TEST(ChannelsLastCli, ANhwcRunResumesExactlyInEitherLayoutAndItsModelIsEvaluatedAsAnyOther) {
  TempDir dir;
  pix2pix::fixtures::make_fashion_edges_dataset(dir / "d.h5", 60, 32);
  auto r = run_cli(smoke_train_command(dir, "straight", "--device cpu --channels-last on --max-epochs 2"));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli(smoke_train_command(dir, "resumed", "--device cpu --channels-last on --max-epochs 1"));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli(smoke_train_command(dir, "resumed", "--device cpu --channels-last on --max-epochs 2 --resume auto"));
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_EQ(read_metrics(dir / "straight/metrics.csv").size(), 2u);
  expect_learned_the_same(dir / "straight/metrics.csv", dir / "resumed/metrics.csv");

  // The model of an NHWC run, read into networks made NCHW, scores what training logged.
  const auto logged = metrics_column(dir / "straight/metrics.csv", "val_psnr");
  r = run_cli("evaluate --progress none --checkpoint " + (dir / "straight") + " --data " + (dir / "d.h5") +
              " --split val --device cpu --out " + (dir / "ev"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NEAR(json_value(read_file(dir / "ev/evaluation.json"), "psnr"), logged.back(), 1e-4);

  // The layout is how a job runs: a resume may change it without --accept-changed-options.
  r = run_cli(smoke_train_command(dir, "straight", "--device cpu --max-epochs 3 --resume auto --channels-last off"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto continued = metrics_column(dir / "straight/metrics.csv", "val_psnr");
  ASSERT_EQ(continued.size(), 3u);
  EXPECT_TRUE(std::isfinite(continued.back()));

  r = run_cli(smoke_train_command(dir, "bad", "--channels-last sideways"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--channels-last must be one of")) << r.output;
}
