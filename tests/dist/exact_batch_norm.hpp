// Batch norm and LeakyReLU in float64, on the activation signs of the kernels under test: what the
// GPU tests of the fused batch-norm kernels hold their rounded gradients to (a value within a
// rounding of zero may take either sign in two programs, and its gradient with it).
#pragma once

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>

namespace pix2pix::fixtures {

// Per channel in float64: a tensor's sums.
inline torch::Tensor sums_per_channel(const torch::Tensor& t) {
  return t.to(torch::kFloat64).sum({0, 2, 3});
}
inline torch::Tensor as_channels(const torch::Tensor& per_channel) {
  return per_channel.to(torch::kFloat64).view({1, -1, 1, 1});
}

// The unit roundoff of a kernel's element type.
inline double roundoff(torch::ScalarType type) {
  return type == torch::kFloat32 ? 1.2e-7 : (type == torch::kBFloat16 ? 7.9e-3 : 9.8e-4);
}

// The kernels' output y of LeakyReLU(slope)(weight·(x - mean)·invstd + bias) over the whole batch
// x, and their gradients for the upstream gradient (grad_x of x's shape; grad_weight, grad_bias
// [C]), against the exact ones from the statistics (mean, invstd [C]) the kernels normalised with:
// the signs those of the exact normalisation wherever it is clear of zero, the weight's and bias's
// gradients within the element type's rounding of their sums, the input's within its roundings.
inline void expect_exact_gradients(const torch::Tensor& x, const torch::Tensor& upstream, const torch::Tensor& y,
                                   const torch::Tensor& mean, const torch::Tensor& invstd_of_channels,
                                   const torch::Tensor& weight, const torch::Tensor& bias, double slope,
                                   const torch::Tensor& grad_x, const torch::Tensor& grad_weight,
                                   const torch::Tensor& grad_bias) {
  const double eps = roundoff(x.scalar_type());
  const double eps_sum = std::max(eps, 2e-5);  // float32 sums of thousands of values
  const torch::Tensor invstd = as_channels(invstd_of_channels), w = as_channels(weight.detach());
  const torch::Tensor xhat = (x.to(torch::kFloat64) - as_channels(mean)) * invstd;
  const torch::Tensor pre = xhat * w + as_channels(bias.detach());
  const torch::Tensor y64 = y.detach().to(torch::kFloat64);
  EXPECT_FALSE(((y64 > 0) != (pre > 0)).logical_and(pre.abs() > 1e-5).any().item<bool>()) << "the activation's signs";
  const torch::Tensor dy = upstream.to(torch::kFloat64);
  const torch::Tensor g = torch::where(y64 > 0, dy, dy * slope);
  const double n = static_cast<double>(x.numel() / x.size(1));
  const torch::Tensor exact_bias = sums_per_channel(g), exact_weight = sums_per_channel(g * xhat);
  const torch::Tensor exact_x =
      (w * invstd * (g - as_channels(exact_bias) / n - xhat * as_channels(exact_weight) / n)).contiguous();
  const torch::Tensor gx = grad_x.to(torch::kFloat64).contiguous();
  const torch::Tensor gw = grad_weight.to(torch::kFloat64), gb = grad_bias.to(torch::kFloat64);
  EXPECT_TRUE(((gb - exact_bias).abs() <= sums_per_channel(g.abs()) * eps_sum).all().item<bool>())
      << "the bias's gradient: " << gb << " against " << exact_bias;
  EXPECT_TRUE(((gw - exact_weight).abs() <= sums_per_channel((g * xhat).abs()) * eps_sum).all().item<bool>())
      << "the weight's gradient: " << gw << " against " << exact_weight;
  const torch::Tensor spread =
      as_channels(sums_per_channel(g.abs())) / n + xhat.abs() * as_channels(sums_per_channel((g * xhat).abs())) / n;
  const torch::Tensor bound =
      exact_x.abs() * 2 * eps + (w * invstd).abs() * (g.abs() + spread) * 2 * eps_sum + exact_x.abs().max() * 1e-6;
  EXPECT_TRUE(((gx - exact_x).abs() <= bound.contiguous()).all().item<bool>())
      << "the input's gradient: " << (gx - exact_x).abs().max().item<double>() << " apart at most of "
      << exact_x.abs().max().item<double>();
}

}  // namespace pix2pix::fixtures
