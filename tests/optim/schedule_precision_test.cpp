// The pure pieces of optimisation: LR rules, the loss scaler state machine, autocast.
#include <gtest/gtest.h>

#include <cmath>

#include "pix2pix/common/error.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/optim/lr_schedule.hpp"
#include "pix2pix/optim/precision.hpp"

using namespace pix2pix::optim;

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

// See Note [the batch cast once]: a generator and a discriminator in bf16 autocast, fed the batch
// cast once, compute the float32 batch's outputs, losses and every gradient bit for bit.
TEST(Precision, TheBatchCastOnceComputesWhatAutocastsCastsDo) {
  using namespace pix2pix::nets;
  const torch::Device cpu(torch::kCPU);
  const torch::Tensor a = torch::randn({2, 3, 32, 32}).clamp(-1, 1);
  const torch::Tensor b = torch::randn({2, 3, 32, 32}).clamp(-1, 1);
  EXPECT_TRUE(torch::equal(in_compute_dtype(a, Precision::fp32), a));
  EXPECT_EQ(in_compute_dtype(a, Precision::bf16).scalar_type(), torch::kBFloat16);
  EXPECT_EQ(in_compute_dtype(a, Precision::fp16).scalar_type(), torch::kFloat16);
  std::vector<torch::Tensor> results[2];
  for (const bool cast_once : {false, true}) {
    torch::manual_seed(11);
    UnetGenerator generator(GeneratorOptions{3, 3, 5, 4, Norm::batch, false});
    PatchDiscriminator discriminator(DiscriminatorOptions{6, 4, 2, Norm::batch, {}});
    const torch::Tensor a_in = cast_once ? in_compute_dtype(a, Precision::bf16) : a;
    const torch::Tensor b_in = cast_once ? in_compute_dtype(b, Precision::bf16) : b;
    torch::Tensor fake, pred_fake, pred_real;
    {
      AutocastGuard guard(cpu, Precision::bf16);
      fake = generator->forward(a_in);
      pred_fake = discriminator->forward(torch::cat({a_in, fake}, 1));
      pred_real = discriminator->forward(torch::cat({a_in, b_in}, 1));
    }
    const torch::Tensor loss =
        pred_fake.to(torch::kFloat32).mean() - pred_real.to(torch::kFloat32).mean() + (fake - b).abs().mean();
    loss.backward();
    auto& out = results[cast_once];
    out = {fake, pred_fake, pred_real, loss};
    for (const auto& p : generator->parameters()) out.push_back(p.grad());
    for (const auto& p : discriminator->parameters()) out.push_back(p.grad());
  }
  ASSERT_EQ(results[0].size(), results[1].size());
  for (std::size_t i = 0; i < results[0].size(); ++i) {
    EXPECT_EQ(results[1][i].scalar_type(), results[0][i].scalar_type()) << i;
    EXPECT_TRUE(torch::equal(results[1][i], results[0][i])) << i;
  }
}
