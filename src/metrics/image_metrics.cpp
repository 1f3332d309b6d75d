// SSIM as a depthwise convolution with a separable Gaussian, in float64 so that the variance
// terms (differences of large squares, on [0, 65535] too) stay exact.
#include "pix2pix/metrics/image_metrics.hpp"

#include <cmath>

namespace pix2pix::metrics {

torch::Tensor to_pixels(const torch::Tensor& images) {
  return ((images.to(torch::kFloat32) + 1.0) * 127.5).round().clamp(0.0, 255.0);
}

torch::Tensor psnr_per_image(const torch::Tensor& fake, const torch::Tensor& real, double peak) {
  const auto mse = (fake.to(torch::kFloat64) - real.to(torch::kFloat64)).square().mean({1, 2, 3});
  auto psnr = 10.0 * torch::log10(peak * peak / mse);
  return torch::where(mse == 0, torch::full_like(psnr, kPsnrCap), psnr.clamp_max(kPsnrCap));
}

torch::Tensor ssim_per_image(const torch::Tensor& fake, const torch::Tensor& real, double peak) {
  const auto x = fake.to(torch::kFloat64), y = real.to(torch::kFloat64);
  const std::int64_t channels = x.size(1);
  const std::int64_t size = std::min<std::int64_t>({11, x.size(2), x.size(3)});
  const double sigma = 1.5;
  auto coords = torch::arange(size, x.options()) - (size - 1) / 2.0;
  auto g = torch::exp(-coords.square() / (2 * sigma * sigma));
  g = g / g.sum();
  const auto window = torch::outer(g, g).expand({channels, 1, size, size}).contiguous();
  auto filter = [&](const torch::Tensor& t) {
    return torch::nn::functional::conv2d(t, window, torch::nn::functional::Conv2dFuncOptions().groups(channels));
  };
  const double c1 = std::pow(0.01 * peak, 2), c2 = std::pow(0.03 * peak, 2);
  const auto mu_x = filter(x), mu_y = filter(y);
  const auto sxx = filter(x * x) - mu_x * mu_x;
  const auto syy = filter(y * y) - mu_y * mu_y;
  const auto sxy = filter(x * y) - mu_x * mu_y;
  const auto map =
      ((2 * mu_x * mu_y + c1) * (2 * sxy + c2)) / ((mu_x.square() + mu_y.square() + c1) * (sxx + syy + c2));
  return map.mean({1, 2, 3});
}

}  // namespace pix2pix::metrics
