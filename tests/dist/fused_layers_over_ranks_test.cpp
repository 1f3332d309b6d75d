// See Note [synchronised batch norm on a GPU]: --sync-bn's layer with its LeakyReLU, and into the
// U-Net's concatenation with its ReLU, through the model's stand-ins, and on a GPU through the fused
// kernels with every rank's moments and sums.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "dist/fused_checks.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/fused_activation.hpp"
#include "pix2pix/gan/gan_model.hpp"
#include "pix2pix/nets/sync_batch_norm.hpp"
#include "support/fixtures.hpp"

namespace {

using pix2pix::nets::SyncBatchNorm2d;

using pix2pix::fixtures::expect_ranks_give_the_whole_batch;
using pix2pix::fixtures::Next;
using pix2pix::fixtures::synced_layer;
using pix2pix::fixtures::varied_affine;

constexpr double kSlope = 0.2;

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
      expect_ranks_give_the_whole_batch(gpu, type, channels, Next::leaky_relu, "BatchNormLeakyRelu");
      expect_ranks_give_the_whole_batch(gpu, type, channels, Next::concatenation, "ConcatBatchNormRelu");
    }
}
