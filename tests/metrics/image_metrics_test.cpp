// PSNR and SSIM against values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "pix2pix/metrics/image_metrics.hpp"

using namespace pix2pix::metrics;

TEST(ImageMetrics, PsnrKnownValuesAndCap) {
  const auto real = torch::full({2, 3, 8, 8}, 100.0);
  auto fake = real.clone();
  fake[0] += 1.0;  // MSE 1
  const auto psnr = psnr_per_image(fake, real);
  EXPECT_NEAR(psnr[0].item<double>(), 20.0 * std::log10(255.0), 1e-9);
  EXPECT_EQ(psnr[1].item<double>(), kPsnrCap);  // identical
}

TEST(ImageMetrics, SsimOfConstantImagesIsTheLuminanceTerm) {
  const double a = 100, b = 120, c1 = std::pow(0.01 * 255, 2);
  const auto ssim = ssim_per_image(torch::full({1, 1, 16, 16}, a), torch::full({1, 1, 16, 16}, b));
  EXPECT_NEAR(ssim[0].item<double>(), (2 * a * b + c1) / (a * a + b * b + c1), 1e-12);
  torch::manual_seed(1);
  const auto x = torch::rand({3, 3, 20, 20}) * 255;
  EXPECT_NEAR(ssim_per_image(x, x).min().item<double>(), 1.0, 1e-9);
  const auto noisy = (x + torch::randn_like(x) * 40).clamp(0, 255);
  const auto s = ssim_per_image(noisy, x);
  EXPECT_LT(s.max().item<double>(), 0.9);
  EXPECT_GT(s.min().item<double>(), 0.0);
}

TEST(ImageMetrics, ToPixelsMapsTheGeneratorRange) {
  const auto p = to_pixels(torch::tensor({-1.0f, 0.0f, 1.0f, 1.5f}));
  EXPECT_TRUE(torch::equal(p, torch::tensor({0.0f, 128.0f, 255.0f, 255.0f})));
}
