// See Note [synchronised batch norm on a GPU]: --sync-bn's layer with its LeakyReLU, and into the
// U-Net's concatenation with its ReLU, through the model's stand-ins, and on a GPU through the fused
// kernels with every rank's moments and sums.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "exact_batch_norm.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/fused_activation.hpp"
#include "pix2pix/gan/gan_model.hpp"
#include "pix2pix/nets/sync_batch_norm.hpp"
#include "support/fixtures.hpp"
#include "support/replayed_ranks.hpp"

namespace {

using pix2pix::nets::SyncBatchNorm2d;

constexpr double kSlope = 0.2;

// Varied scales and shifts for `channels` channels: a layer that skipped one would differ.
struct Affine {
  torch::Tensor weight, bias;
};
Affine varied_affine(std::int64_t channels) {
  torch::manual_seed(13);
  torch::Tensor weight = torch::rand({channels}) + 0.5;
  return {weight, torch::rand({channels}) * 0.6 - 0.3};
}

// A layer over ranks with `affine`'s scales and shifts, on `device`.
SyncBatchNorm2d synced_layer(const Affine& affine, pix2pix::nets::BatchStatsSum sum, const torch::Device& device) {
  SyncBatchNorm2d norm(affine.weight.size(0), std::move(sum));
  norm->to(device);
  torch::NoGradGuard no_grad;
  norm->weight.copy_(affine.weight);
  norm->bias.copy_(affine.bias);
  norm->running_mean.fill_(0.25);
  return norm;
}

// What the layer over ranks is followed by: LeakyReLU (the model's batch_norm_leaky_relu), or the
// outer U-Net level's concatenation with a skip of kSkipChannels and its ReLU (the model's
// concat_batch_norm_relu; See Note [fused concatenation, batch norm and ReLU]).
enum class Next { leaky_relu, concatenation };
constexpr std::int64_t kSkipChannels = 16;

// Four ranks (replayed one after another) of different batches (3, 1, 2, 2 images) each take
// their slice of an NHWC batch of `type` on `device` through the model's stand-in; together they
// must be the whole batch's batch norm and `next`. The output against the float64 value of the
// whole batch's statistics (within the element type's rounding; a concatenation's skip half bit for
// bit), every rank's running statistics against the whole batch's, and the input's gradient and the
// ranks' scale and shift gradients summed against the exact ones on the output's signs; each rank's
// output from the autograd function named `function`.
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
  pix2pix::fixtures::run_replayed_ranks(static_cast<int>(world), [&](int rank, const pix2pix::fixtures::RankSum& sum) {
    const auto r = static_cast<std::size_t>(rank);
    std::int64_t first = 0;
    for (std::size_t k = 0; k < r; ++k) first += sizes[k];
    SyncBatchNorm2d norm = synced_layer(affine, sum, device);
    const torch::Tensor xi = x.narrow(0, first, sizes[r]).contiguous(cl).requires_grad_();
    torch::Tensor out;
    if (next == Next::leaky_relu) {
      out = pix2pix::gan::batch_norm_leaky_relu(*norm, xi, kSlope);
    } else {
      const torch::Tensor si = skip.narrow(0, first, sizes[r]).contiguous(cl);
      out = pix2pix::gan::concat_batch_norm_relu(si, xi, norm.ptr().get());
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
  const torch::Tensor pre = (x64 - pix2pix::fixtures::as_channels(mean)) * pix2pix::fixtures::as_channels(invstd) *
                                pix2pix::fixtures::as_channels(affine.weight) +
                            pix2pix::fixtures::as_channels(affine.bias);
  const torch::Tensor exact = torch::leaky_relu(pre, slope), y64 = y.to(torch::kFloat64);
  const double eps = pix2pix::fixtures::roundoff(type);
  EXPECT_TRUE(((y64 - exact).abs() <= exact.abs() * 2 * eps + exact.abs().max() * 1e-5).all().item<bool>())
      << "forward: " << (y64 - exact).abs().max().item<double>() << " apart at most";
  pix2pix::fixtures::expect_exact_gradients(x, upstream.narrow(1, skip_channels, channels), y, mean, invstd,
                                            affine.weight, affine.bias, slope, torch::cat(input_grads), weight_grad,
                                            bias_grad);
}

}  // namespace

// Two layers over ranks of 4 channels with the same scales and shifts, as two ranks of the same
// batch would sum them, on a CPU, training or not: one for a stand-in, one to compare with.
std::pair<SyncBatchNorm2d, SyncBatchNorm2d> twin_layers_on_a_cpu(bool training) {
  const auto twice = [](torch::Tensor& sums) { sums.mul_(2); };
  SyncBatchNorm2d norm = synced_layer(varied_affine(4), twice, torch::kCPU),
                  reference = synced_layer(varied_affine(4), twice, torch::kCPU);
  norm->train(training);
  reference->train(training);
  return {norm, reference};
}

// On a CPU the stand-in gives each layer's forward and ATen's leaky_relu_ (the kernels refuse by
// name), counts each training batch once, and refuses a layer that is no batch norm.
TEST(FusedActivation, TheModelsStandInTakesBothKindsOfBatchNormAndRefusesOtherLayers) {
  torch::manual_seed(6);
  const torch::Tensor x = torch::randn({2, 4, 3, 3}).contiguous(torch::MemoryFormat::ChannelsLast);
  for (const bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "evaluation");
    auto [norm, reference] = twin_layers_on_a_cpu(training);
    const torch::Tensor y = pix2pix::gan::batch_norm_leaky_relu(*norm, x, kSlope);
    EXPECT_TRUE(torch::equal(y, torch::leaky_relu(reference->forward(x), kSlope)));
    EXPECT_TRUE(torch::equal(norm->running_var, reference->running_var));
    EXPECT_EQ(norm->num_batches_tracked.item<std::int64_t>(), training ? 1 : 0);
  }
  torch::nn::BatchNorm2d own(4), own_reference(4);
  EXPECT_TRUE(torch::equal(pix2pix::gan::batch_norm_leaky_relu(*own, x, kSlope),
                           torch::leaky_relu(own_reference->forward(x), kSlope)));
  torch::nn::Conv2d convolution(torch::nn::Conv2dOptions(4, 4, 1));
  EXPECT_THROW(pix2pix::gan::batch_norm_leaky_relu(*convolution, x, kSlope), pix2pix::Error);
  SyncBatchNorm2d norm = twin_layers_on_a_cpu(true).first;
  EXPECT_FALSE(pix2pix::dist::try_fused_batch_norm_over_ranks_leaky_relu(
      x, norm->weight, norm->bias, norm->running_mean, norm->running_var, 1e-5, 0.1, norm->sum(), kSlope));
  try {
    pix2pix::dist::fused_batch_norm_over_ranks_leaky_relu(x, norm->weight, norm->bias, norm->running_mean,
                                                          norm->running_var, 1e-5, 0.1, norm->sum(), kSlope);
    ADD_FAILURE() << "the kernels were taken on a CPU";
  } catch (const pix2pix::Error& e) {
    EXPECT_TRUE(pix2pix::fixtures::contains(
        e.what(), "batch norm over ranks and LeakyReLU in fused kernels: the fused kernels are CUDA kernels"))
        << e.what();
  }
}

// The U-Net's stand-in: no norm, either kind of batch norm in training and in evaluation (the
// layer's forward then the concatenation), any other layer an Error.
TEST(FusedActivation, TheModelsConcatenationStandInTakesNoNormOrEitherBatchNormAndRefusesOtherLayers) {
  torch::manual_seed(7);
  const auto cl = torch::MemoryFormat::ChannelsLast;
  const torch::Tensor skip = torch::randn({2, 3, 3, 3}).contiguous(cl), u = torch::randn({2, 4, 3, 3}).contiguous(cl);
  const auto expected = [&skip](const torch::Tensor& inner) { return torch::relu(torch::cat({skip, inner}, 1)); };
  EXPECT_TRUE(torch::equal(pix2pix::gan::concat_batch_norm_relu(skip, u, nullptr), expected(u)));
  for (const bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "evaluation");
    auto [norm, reference] = twin_layers_on_a_cpu(training);
    EXPECT_TRUE(
        torch::equal(pix2pix::gan::concat_batch_norm_relu(skip, u, norm.ptr().get()), expected(reference->forward(u))));
    EXPECT_TRUE(torch::equal(norm->running_var, reference->running_var));
    torch::nn::BatchNorm2d own(4), own_reference(4);
    own->train(training);
    own_reference->train(training);
    EXPECT_TRUE(torch::equal(pix2pix::gan::concat_batch_norm_relu(skip, u, own.ptr().get()),
                             expected(own_reference->forward(u))));
    EXPECT_EQ(own->num_batches_tracked.item<std::int64_t>(), training ? 1 : 0);
  }
  torch::nn::Conv2d convolution(torch::nn::Conv2dOptions(4, 4, 1));
  EXPECT_THROW(pix2pix::gan::concat_batch_norm_relu(skip, u, convolution.ptr().get()), pix2pix::Error);
  SyncBatchNorm2d norm = twin_layers_on_a_cpu(true).first;
  EXPECT_FALSE(pix2pix::dist::try_fused_concat_batch_norm_over_ranks_relu(
      skip, u, norm->weight, norm->bias, norm->running_mean, norm->running_var, 1e-5, 0.1, norm->sum()));
  try {
    pix2pix::dist::fused_concat_batch_norm_over_ranks_relu(skip, u, norm->weight, norm->bias, norm->running_mean,
                                                           norm->running_var, 1e-5, 0.1, norm->sum());
    ADD_FAILURE() << "the kernels were taken on a CPU";
  } catch (const pix2pix::Error& e) {
    EXPECT_TRUE(pix2pix::fixtures::contains(
        e.what(), "concatenation, batch norm over ranks and ReLU in fused kernels: the fused kernels are CUDA kernels"))
        << e.what();
  }
}

// On a CPU (the layer's forward, then ATen's leaky_relu_ or cat and relu_): the test of the GPU's
// kernels below, and of its float64 reference.
TEST(FusedActivation, RanksOfSlicesThroughTheStandInsGiveTheWholeBatchsBatchNormAndWhatFollows) {
  for (const auto type : {torch::kFloat32, torch::kBFloat16}) {
    expect_ranks_give_the_whole_batch(torch::kCPU, type, 24, Next::leaky_relu, "LeakyRelu");
    expect_ranks_give_the_whole_batch(torch::kCPU, type, 24, Next::concatenation, "Relu");
  }
}

// On a GPU of a build with the kernels (scripts/gpu-smoke.sh runs it): the stand-ins run the
// kernels over ranks, with LeakyReLU and into a concatenation, vectorised (64 channels; the skip's
// 16) and element-wise (24).
TEST(FusedActivation, OnAGpuTheKernelsOverRanksGiveTheWholeBatchsBatchNormAndWhatFollows) {
  const torch::Device gpu(torch::kCUDA, 0);
  if (!torch::cuda::is_available() || !pix2pix::dist::fused_kernels_unavailable(gpu).empty())
    GTEST_SKIP() << (torch::cuda::is_available() ? pix2pix::dist::fused_kernels_unavailable(gpu) : "no GPU");
  for (const auto type : {torch::kBFloat16, torch::kFloat32})
    for (const std::int64_t channels : {64, 24}) {
      expect_ranks_give_the_whole_batch(gpu, type, channels, Next::leaky_relu, "BatchNormOverRanksLeakyRelu");
      expect_ranks_give_the_whole_batch(gpu, type, channels, Next::concatenation, "ConcatBatchNormRelu");
    }
}
