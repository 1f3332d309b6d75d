// See Note [updates decided on the device]: `train --device-update on` as a user runs it, on CPUs
// (GPU ranks take it by default where LibTorch has fused Adam with a skip flag, 2.4): the start-up
// table says so, a run resumes exactly, and a resume may change it. Before LibTorch 2.4 it is
// refused by name with usage's status. The exact resume runs on the CPU (--device cpu) on a GPU
// node too: there cuDNN's autotuned kernels part two runs in the last bits.
#include <gtest/gtest.h>

#include <torch/version.h>

#include <cmath>
#include <string>

#include "cli/cli_helpers.hpp"
#include "pix2pix/common/torch_compat.hpp"
#include "support/fixtures.hpp"

using pix2pix::cli_tests::contains;
using pix2pix::cli_tests::expect_learned_the_same;
using pix2pix::cli_tests::metrics_column;
using pix2pix::cli_tests::read_metrics;
using pix2pix::cli_tests::smoke_train_command;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::TempDir;

TEST(DeviceUpdateCli, ARunThatDecidesOnTheDeviceSaysSoAndResumesExactly) {
  if (!pix2pix::compat::kFusedAdamWithSkip)
    GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no fused Adam with a skip flag (2.4): "
                 << "DeviceUpdateCli.IsRefusedByNameBeforeLibTorch2_4 checks the refusal";
  TempDir dir;
  pix2pix::fixtures::make_fashion_edges_dataset(dir / "d.h5", 60, 32);
  auto r = run_cli(smoke_train_command(dir, "straight", "--device cpu --device-update on --max-epochs 2"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "Adam skips non-finite gradients on the device, fused (--device-update on)"))
      << r.output;
  r = run_cli(smoke_train_command(dir, "resumed", "--device cpu --device-update on --max-epochs 1"));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli(smoke_train_command(dir, "resumed", "--device cpu --device-update on --max-epochs 2 --resume auto"));
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_EQ(read_metrics(dir / "straight/metrics.csv").size(), 2u);
  expect_learned_the_same(dir / "straight/metrics.csv", dir / "resumed/metrics.csv");

  // Where the decision is taken is how a job runs: a resume may change it without
  // --accept-changed-options, and the run goes on with the host's decision.
  r = run_cli(smoke_train_command(dir, "straight", "--device cpu --max-epochs 3 --resume auto --device-update off"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "after a host read per step (--device-update off)")) << r.output;
  const auto continued = metrics_column(dir / "straight/metrics.csv", "val_psnr");
  ASSERT_EQ(continued.size(), 3u);
  EXPECT_TRUE(std::isfinite(continued.back()));
}

TEST(DeviceUpdateCli, IsRefusedByNameBeforeLibTorch2_4) {
  TempDir dir;
  pix2pix::fixtures::make_fashion_edges_dataset(dir / "d.h5", 20, 32);
  auto r = run_cli(smoke_train_command(dir, "bad", "--device-update sideways"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--device-update must be one of")) << r.output;
  if (pix2pix::compat::kFusedAdamWithSkip) return;  // on: the test above
  r = run_cli(smoke_train_command(dir, "old", "--device-update on --max-epochs 1"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--device-update on needs LibTorch 2.4 or newer")) << r.output;
  r = run_cli(smoke_train_command(dir, "auto", "--max-epochs 1"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "after a host read per step (--device-update auto)")) << r.output;
}
