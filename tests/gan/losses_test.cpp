// The GAN losses: each mode a mean over every element, and L1 likewise.
#include <gtest/gtest.h>

#include <cmath>

#include "pix2pix/common/error.hpp"
#include "pix2pix/gan/losses.hpp"

using namespace pix2pix::gan;

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
