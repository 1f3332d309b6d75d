// The pure pieces of training: losses, LR rules, the loss scaler state machine, autocast, the
// epoch's loss sums.
#include <gtest/gtest.h>

#include <cmath>

#include "pix2pix/common/error.hpp"
#include "pix2pix/train/batch_norm_warning.hpp"
#include "pix2pix/train/losses.hpp"
#include "pix2pix/train/lr_schedule.hpp"
#include "pix2pix/train/option_changes.hpp"
#include "pix2pix/train/precision.hpp"
#include "pix2pix/train/trainer.hpp"

using namespace pix2pix::train;

TEST(Losses, GanModesAndL1AreMeansOverEveryElement) {
  const auto zeros = torch::zeros({2, 1, 3, 3});
  EXPECT_NEAR(gan_loss(zeros, true, GanMode::vanilla).item<double>(), std::log(2.0), 1e-6);
  EXPECT_NEAR(gan_loss(zeros, false, GanMode::vanilla).item<double>(), std::log(2.0), 1e-6);
  EXPECT_NEAR(gan_loss(zeros, true, GanMode::lsgan).item<double>(), 1.0, 1e-7);
  EXPECT_NEAR(gan_loss(torch::full({4, 1, 2, 2}, 3.0), false, GanMode::lsgan).item<double>(), 9.0, 1e-6);
  auto fake = torch::zeros({2, 3, 4, 4});
  fake[0].fill_(1.0);
  EXPECT_NEAR(pixel_l1_loss(fake, torch::zeros_like(fake)).item<double>(), 0.5, 1e-7);
  // bf16 logits are promoted: the loss is always fp32.
  EXPECT_EQ(gan_loss(zeros.to(torch::kBFloat16), true, GanMode::vanilla).scalar_type(), torch::kFloat32);
  EXPECT_THROW(parse_gan_mode("wgan"), pix2pix::Error);
}

TEST(LrSchedule, ReferenceLinearDecayWarmupAndScalingRules) {
  LrSchedule s;
  s.lr = 2e-4;
  s.epochs = 3;
  s.epochs_decay = 3;
  EXPECT_DOUBLE_EQ(s.lr_at(0), 2e-4);
  EXPECT_DOUBLE_EQ(s.lr_at(2), 2e-4);
  EXPECT_DOUBLE_EQ(s.lr_at(3), 2e-4 * 0.75);
  EXPECT_DOUBLE_EQ(s.lr_at(5), 2e-4 * 0.25);
  EXPECT_DOUBLE_EQ(s.lr_at(9), 0.0);
  s.policy = LrPolicy::constant;
  EXPECT_DOUBLE_EQ(s.lr_at(50), 2e-4);
  s.warmup_epochs = 4;
  EXPECT_DOUBLE_EQ(s.lr_at(0), 2e-4 / 4);
  EXPECT_DOUBLE_EQ(s.lr_at(3), 2e-4);
  s.warmup_epochs = 0;
  s.base_batch = 4;
  s.global_batch = 64;
  s.scaling = LrScaling::none;
  EXPECT_DOUBLE_EQ(s.scaled_lr(), 2e-4);
  s.scaling = LrScaling::sqrt;
  EXPECT_DOUBLE_EQ(s.scaled_lr(), 8e-4);
  s.scaling = LrScaling::linear;
  EXPECT_DOUBLE_EQ(s.scaled_lr(), 32e-4);
  s.base_batch = 0;
  EXPECT_THROW(s.validate(), pix2pix::Error);
  EXPECT_THROW(parse_lr_scaling("cubic"), pix2pix::Error);
}

TEST(LossScaler, BacksOffAndSkipsOnNonFiniteGrowsAfterCleanSteps) {
  LossScaler scaler({true, 1024.0, 2.0, 0.5, 3});
  EXPECT_EQ(scaler.scale(), 1024.0);
  EXPECT_FALSE(scaler.update(true));
  EXPECT_EQ(scaler.scale(), 512.0);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  EXPECT_TRUE(scaler.update(false));
  EXPECT_TRUE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 512.0);
  EXPECT_TRUE(scaler.update(false));  // third clean step in a row
  EXPECT_EQ(scaler.scale(), 1024.0);
  EXPECT_TRUE(scaler.update(false));
  EXPECT_FALSE(scaler.update(true));  // a NaN resets the clean count too
  EXPECT_TRUE(scaler.update(false));
  EXPECT_TRUE(scaler.update(false));
  EXPECT_EQ(scaler.scale(), 512.0);
  LossScaler copy({true, 1.0, 2.0, 0.5, 3});
  copy.restore(scaler.state());
  EXPECT_EQ(copy.scale(), 512.0);
  EXPECT_EQ(copy.update(false), scaler.update(false));
  EXPECT_EQ(copy.scale(), scaler.scale());
  LossScaler off;
  EXPECT_EQ(off.scale(), 1.0);
  EXPECT_FALSE(off.update(true));  // fp32/bf16: a non-finite gradient still must not be applied
}

TEST(LossScaler, UnscaleDividesExactlyAndFindsInfAndNaN) {
  auto p = torch::zeros({3}, torch::requires_grad());
  auto q = torch::zeros({2}, torch::requires_grad());
  p.mutable_grad() = torch::tensor({2048.0f, -1024.0f, 512.0f});
  q.mutable_grad() = torch::tensor({4096.0f, 0.0f});
  EXPECT_FALSE(unscale_and_check({p, q}, 1024.0));
  EXPECT_TRUE(torch::equal(p.grad(), torch::tensor({2.0f, -1.0f, 0.5f})));
  q.mutable_grad()[1] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(unscale_and_check({p, q}, 1.0));
  q.mutable_grad()[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(unscale_and_check({p, q}, 2.0));
}

TEST(Precision, AutocastGuardRunsBf16OnCpuAndRestores) {
  auto conv = torch::nn::Conv2d(torch::nn::Conv2dOptions(2, 4, 3));
  const auto x = torch::randn({1, 2, 8, 8});
  {
    AutocastGuard guard(torch::Device(torch::kCPU), Precision::bf16);
    EXPECT_EQ(conv->forward(x).scalar_type(), torch::kBFloat16);
  }
  EXPECT_EQ(conv->forward(x).scalar_type(), torch::kFloat32);
  {
    AutocastGuard guard(torch::Device(torch::kCPU), Precision::fp32);
    EXPECT_EQ(conv->forward(x).scalar_type(), torch::kFloat32);
  }
  EXPECT_THROW(AutocastGuard(torch::Device(torch::kCPU), Precision::fp16), pix2pix::Error);
  EXPECT_THROW(parse_precision("fp8"), pix2pix::Error);
}

// See Note [no host reads in the step]: steps' losses are summed as tensors; global() reads them once,
// on top of what a resumed epoch had read.
TEST(EpochSums, SumsStepLossesUnreadUntilGlobal) {
  EpochSums sums = EpochSums::resumed({1.0, 2.0, 3.0, 0.0}, 1, 4, 4);
  for (int s = 0; s < 3; ++s) {
    StepLosses losses;
    losses.values = torch::tensor({0.5, 0.25 * s, 2.0, 0.125}, torch::kFloat64);
    losses.skipped = {s == 1, false};
    sums.add(losses);
  }
  EXPECT_EQ(sums.steps, 7);
  EXPECT_EQ(sums.losses[0], 1.0) << "add() must not read";
  pix2pix::dist::LocalCommunicator local;
  const EpochSums global = sums.global(local);
  EXPECT_EQ(global.steps, 7);
  EXPECT_EQ(global.losses, (std::vector<double>{2.5, 2.75, 9.0, 0.375}));
  EXPECT_EQ(global.skipped, 2);
  EXPECT_FALSE(global.unread.defined());
  // A model of another loss count cannot continue these sums.
  EXPECT_THROW(EpochSums::resumed({1.0, 2.0, 3.0}, 0, 1, 4), pix2pix::Error);
  StepLosses three;
  three.values = torch::tensor({0.5, 0.25, 2.0}, torch::kFloat64);
  EXPECT_THROW(sums.add(three), pix2pix::Error);
}

// See Note [options a resume may change]: what changed is listed in the order of the new options;
// only options that say how the job runs may change without --accept-changed-options.
TEST(OptionChanges, ListsEveryChangeAndMarksThoseThatChangeWhatIsLearned) {
  const std::string trained =
      "# header\nlr = 0.0002\nmax-epochs = 200\ngan-mode = vanilla\ndata = /a/d.h5\n"
      "data-contents = 10 bytes, x\nseed = 1\n";
  EXPECT_TRUE(pix2pix::train::option_changes(trained, trained).empty());
  EXPECT_TRUE(pix2pix::train::option_changes("", trained).empty())
      << "a checkpoint without options: nothing to compare";
  const std::string now =
      "lr = 0.001\nmax-epochs = 300\ngan-mode = vanilla\ndata = /b/d.h5\n"
      "data-contents = 10 bytes, y\nprogress = lines\n";
  const auto changes = pix2pix::train::option_changes(trained, now);
  ASSERT_EQ(changes.size(), 6u);
  EXPECT_EQ(changes[0].option, "--lr");
  EXPECT_TRUE(changes[0].changes_learning);
  EXPECT_EQ(changes[1].option, "--max-epochs");
  EXPECT_FALSE(changes[1].changes_learning);
  EXPECT_EQ(changes[2].option, "--data");  // a moved file: its contents decide
  EXPECT_FALSE(changes[2].changes_learning);
  EXPECT_EQ(changes[3].option, "--data-contents");
  EXPECT_TRUE(changes[3].changes_learning);
  EXPECT_EQ(changes[4].option, "--progress");
  EXPECT_EQ(changes[4].before, "(not set)");
  EXPECT_EQ(changes[5].option, "--seed");
  EXPECT_EQ(changes[5].now, "(not set)");
  EXPECT_TRUE(changes[5].changes_learning);
  EXPECT_EQ(pix2pix::train::describe_changes(changes, 2), "--lr 0.0002 -> 0.001, --max-epochs 200 -> 300 and 4 more");
}

// See Note [batch norm over too few images]: only batch norm over fewer than a few images, validated in
// eval mode, is warned of, and the warning names the ways out it is given.
TEST(BatchNormWarning, OnlyBatchNormOverFewImagesValidatedInEvalMode) {
  using pix2pix::model::Norm;
  using pix2pix::train::few_images_warning;
  const std::string warning = few_images_warning(Norm::batch, 1, true, "--sync-bn on or --norm instance");
  EXPECT_NE(warning.find("batch norm normalises over 1 image at a time"), std::string::npos) << warning;
  EXPECT_NE(warning.find("--sync-bn on or --norm instance avoid it"), std::string::npos) << warning;
  EXPECT_NE(few_images_warning(Norm::batch, 3, true, "x"), "");
  EXPECT_EQ(few_images_warning(Norm::batch, 4, true, "x"), "");
  EXPECT_EQ(few_images_warning(Norm::batch, 1, false, "x"), "") << "train-mode validation normalises as training";
  EXPECT_EQ(few_images_warning(Norm::instance, 1, true, "x"), "");
  EXPECT_EQ(few_images_warning(Norm::none, 1, true, "x"), "");
}
