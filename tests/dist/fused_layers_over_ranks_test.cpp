// See Note [synchronised batch norm on a GPU]: --sync-bn's layer with its LeakyReLU through the
// model's stand-in, and on a GPU through the fused kernels with every rank's moments and sums.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
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

// Four ranks (replayed one after another) of different batches (3, 1, 2, 2 images) each take
// their slice of an NHWC batch of `type` on `device` through the model's stand-in; together they
// must be the whole batch's batch norm and LeakyReLU. The output against the float64 value of the
// whole batch's statistics (within the element type's rounding), every rank's running statistics
// against the whole batch's, and the input's gradient and the ranks' scale and shift gradients
// summed against the exact ones on the output's signs; each rank's output from the autograd
// function named `function`.
void expect_ranks_give_the_whole_batch(const torch::Device& device, torch::ScalarType type, std::int64_t channels,
                                       const std::string& function) {
  SCOPED_TRACE(std::string(c10::toString(type)) + ", " + std::to_string(channels) + " channels");
  const auto cl = torch::MemoryFormat::ChannelsLast;
  const std::vector<std::int64_t> sizes{3, 1, 2, 2};
  torch::manual_seed(12);
  const torch::Tensor x = (torch::randn({8, channels, 6, 6}) * 2 + 0.5).to(device, type).contiguous(cl);
  const torch::Tensor upstream = torch::randn({8, channels, 6, 6}).to(device, type).contiguous(cl);
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
    const torch::Tensor y = pix2pix::gan::batch_norm_leaky_relu(*norm, xi, kSlope);
    EXPECT_NE(y.grad_fn()->name().find(function), std::string::npos) << y.grad_fn()->name();
    y.backward(upstream.narrow(0, first, sizes[r]));
    EXPECT_EQ(norm->num_batches_tracked.item<std::int64_t>(), 1);
    EXPECT_TRUE(y.is_contiguous(cl) && xi.grad().is_contiguous(cl));
    outputs[r] = y.detach();
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
  const torch::Tensor exact = torch::leaky_relu(pre, kSlope), y64 = y.to(torch::kFloat64);
  const double eps = pix2pix::fixtures::roundoff(type);
  EXPECT_TRUE(((y64 - exact).abs() <= exact.abs() * 2 * eps + exact.abs().max() * 1e-5).all().item<bool>())
      << "forward: " << (y64 - exact).abs().max().item<double>() << " apart at most";
  pix2pix::fixtures::expect_exact_gradients(x, upstream, y, mean, invstd, affine.weight, affine.bias, kSlope,
                                            torch::cat(input_grads), weight_grad, bias_grad);
}

}  // namespace

// On a CPU the stand-in gives each layer's forward and ATen's leaky_relu_ (the kernels refuse by
// name), counts each training batch once, and refuses a layer that is no batch norm.
TEST(FusedActivation, TheModelsStandInTakesBothKindsOfBatchNormAndRefusesOtherLayers) {
  torch::manual_seed(6);
  const torch::Tensor x = torch::randn({2, 4, 3, 3}).contiguous(torch::MemoryFormat::ChannelsLast);
  const auto twice = [](torch::Tensor& sums) { sums.mul_(2); };
  for (const bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "evaluation");
    SyncBatchNorm2d norm = synced_layer(varied_affine(4), twice, torch::kCPU),
                    reference = synced_layer(varied_affine(4), twice, torch::kCPU);
    norm->train(training);
    reference->train(training);
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
  SyncBatchNorm2d norm = synced_layer(varied_affine(4), twice, torch::kCPU);
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
  const auto twice = [](torch::Tensor& sums) { sums.mul_(2); };
  for (const bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "evaluation");
    SyncBatchNorm2d norm = synced_layer(varied_affine(4), twice, torch::kCPU),
                    reference = synced_layer(varied_affine(4), twice, torch::kCPU);
    norm->train(training);
    reference->train(training);
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
}

// On a CPU (the layer's forward and ATen's leaky_relu_): the test of the GPU's kernels below, and
// of its float64 reference.
TEST(FusedActivation, RanksOfSlicesThroughTheStandInGiveTheWholeBatchsBatchNormAndLeakyRelu) {
  for (const auto type : {torch::kFloat32, torch::kBFloat16})
    expect_ranks_give_the_whole_batch(torch::kCPU, type, 24, "LeakyRelu");
}

// On a GPU of a build with the kernels (scripts/gpu-smoke.sh runs it): the stand-in runs the
// kernels over ranks, vectorised (64 channels) and element-wise (24).
TEST(FusedActivation, OnAGpuTheKernelsOverRanksGiveTheWholeBatchsBatchNormAndLeakyRelu) {
  const torch::Device gpu(torch::kCUDA, 0);
  if (!torch::cuda::is_available() || !pix2pix::dist::fused_kernels_unavailable(gpu).empty())
    GTEST_SKIP() << (torch::cuda::is_available() ? pix2pix::dist::fused_kernels_unavailable(gpu) : "no GPU");
  for (const auto type : {torch::kBFloat16, torch::kFloat32})
    for (const std::int64_t channels : {64, 24})
      expect_ranks_give_the_whole_batch(gpu, type, channels, "BatchNormOverRanksLeakyRelu");
}
