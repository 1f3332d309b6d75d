// See fused_checks.hpp.
#include "dist/fused_checks.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "dist/exact_batch_norm.hpp"
#include "pix2pix/gan/gan_model.hpp"
#include "support/replayed_ranks.hpp"

namespace pix2pix::fixtures {
namespace {
constexpr double kSlope = 0.2;
// The skip's channels where the layer feeds a concatenation.
constexpr std::int64_t kSkipChannels = 16;
}  // namespace

Affine varied_affine(std::int64_t channels) {
  torch::manual_seed(13);
  torch::Tensor weight = torch::rand({channels}) + 0.5;
  return {weight, torch::rand({channels}) * 0.6 - 0.3};
}

nets::SyncBatchNorm2d synced_layer(const Affine& affine, nets::BatchStatsSum sum, const torch::Device& device) {
  nets::SyncBatchNorm2d norm(affine.weight.size(0), std::move(sum));
  norm->to(device);
  torch::NoGradGuard no_grad;
  norm->weight.copy_(affine.weight);
  norm->bias.copy_(affine.bias);
  norm->running_mean.fill_(0.25);
  return norm;
}

void expect_ranks_give_the_whole_batch(const torch::Device& device, torch::ScalarType type, std::int64_t channels,
                                       Next next, const std::string& function) {
  SCOPED_TRACE(std::string(c10::toString(type)) + ", " + std::to_string(channels) + " channels" +
               (next == Next::concatenation ? ", concatenated" : ""));
  const auto cl = torch::MemoryFormat::ChannelsLast;
  const std::vector<std::int64_t> sizes{3, 1, 2, 2};
  const std::int64_t skip_channels = next == Next::concatenation ? kSkipChannels : 0;
  const double slope = next == Next::concatenation ? 0.0 : kSlope;  // ReLU's gradient is LeakyReLU's of slope 0
  torch::manual_seed(12);
  const torch::Tensor x = (torch::randn({8, channels, 6, 6}) * 2 + 0.5).to(device, type).contiguous(cl);
  const torch::Tensor skip = torch::randn({8, kSkipChannels, 6, 6}).to(device, type).contiguous(cl);
  const torch::Tensor upstream = torch::randn({8, skip_channels + channels, 6, 6}).to(device, type).contiguous(cl);
  const std::size_t world = sizes.size();
  std::vector<torch::Tensor> outputs(world), input_grads(world), weight_grads(world), bias_grads(world);
  std::vector<torch::Tensor> running_means(world), running_vars(world);
  const Affine affine = varied_affine(channels);
  // See Note [ranks replayed one after another]: on a GPU, ranks as threads would deadlock.
  run_replayed_ranks(static_cast<int>(world), [&](int rank, const RankSum& sum) {
    const auto r = static_cast<std::size_t>(rank);
    std::int64_t first = 0;
    for (std::size_t k = 0; k < r; ++k) first += sizes[k];
    nets::SyncBatchNorm2d norm = synced_layer(affine, sum, device);
    const torch::Tensor xi = x.narrow(0, first, sizes[r]).contiguous(cl).requires_grad_();
    torch::Tensor out;
    if (next == Next::leaky_relu) {
      out = gan::batch_norm_leaky_relu(*norm, xi, kSlope);
    } else {
      const torch::Tensor si = skip.narrow(0, first, sizes[r]).contiguous(cl);
      out = gan::concat_batch_norm_relu(si, xi, norm.ptr().get());
      EXPECT_TRUE(torch::equal(out.narrow(1, 0, skip_channels), torch::relu(si))) << "the skip's half";
    }
    EXPECT_NE(out.grad_fn()->name().find(function), std::string::npos) << out.grad_fn()->name();
    out.backward(upstream.narrow(0, first, sizes[r]));
    EXPECT_EQ(norm->num_batches_tracked.item<std::int64_t>(), 1);
    EXPECT_TRUE(out.is_contiguous(cl) && xi.grad().is_contiguous(cl));
    outputs[r] = out.narrow(1, skip_channels, channels).detach();
    input_grads[r] = xi.grad();
    weight_grads[r] = norm->weight.grad();
    bias_grads[r] = norm->bias.grad();
    running_means[r] = norm->running_mean.clone();
    running_vars[r] = norm->running_var.clone();
  });
  const torch::Tensor weight_grad = torch::stack(weight_grads).sum(0), bias_grad = torch::stack(bias_grads).sum(0);
  // The whole batch's statistics in float64 (the biased variance normalises, the unbiased one
  // goes into the running variance).
  const torch::Tensor x64 = x.to(torch::kFloat64);
  const torch::Tensor mean = x64.mean({0, 2, 3}), var = x64.var({0, 2, 3}, /*unbiased=*/false);
  const torch::Tensor invstd = (var + 1e-5).rsqrt();
  const double n = static_cast<double>(x.numel() / channels);
  for (size_t r = 0; r < sizes.size(); ++r) {
    EXPECT_TRUE(torch::allclose(running_means[r].to(torch::kFloat64), 0.9 * 0.25 + 0.1 * mean, 1e-6, 1e-6));
    EXPECT_TRUE(torch::allclose(running_vars[r].to(torch::kFloat64), 0.9 + 0.1 * var * n / (n - 1), 1e-5, 1e-6));
  }
  const torch::Tensor y = torch::cat(outputs);
  const torch::Tensor pre =
      (x64 - as_channels(mean)) * as_channels(invstd) * as_channels(affine.weight) + as_channels(affine.bias);
  const torch::Tensor exact = torch::leaky_relu(pre, slope), y64 = y.to(torch::kFloat64);
  const double eps = roundoff(type);
  EXPECT_TRUE(((y64 - exact).abs() <= exact.abs() * 2 * eps + exact.abs().max() * 1e-5).all().item<bool>())
      << "forward: " << (y64 - exact).abs().max().item<double>() << " apart at most";
  expect_exact_gradients(x, upstream.narrow(1, skip_channels, channels), y, mean, invstd, affine.weight, affine.bias,
                         slope, torch::cat(input_grads), weight_grad, bias_grad);
}

}  // namespace pix2pix::fixtures
