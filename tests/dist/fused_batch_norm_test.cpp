// See Note [fused batch norm and LeakyReLU]: the networks' batch norms and LeakyReLUs through a
// stand-in, the kernels' refusals, and on a GPU the kernels against ATen's batch norm and LeakyReLU.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <string>
#include <vector>

#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/fused_activation.hpp"
#include "pix2pix/nets/networks.hpp"
#include "support/fixtures.hpp"

namespace {

using pix2pix::dist::composed_batch_norm_leaky_relu;
using pix2pix::nets::BatchNormLeakyRelu;
using pix2pix::nets::Norm;

// A stand-in that counts its calls and computes what the layers compute.
struct CountingStandIn {
  int calls = 0;
  BatchNormLeakyRelu function() {
    return [this](torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& x, double slope) {
      ++calls;
      EXPECT_EQ(slope, 0.2);
      EXPECT_EQ(norm.options.num_features(), x.size(1));
      return composed_batch_norm_leaky_relu(norm, x, slope);
    };
  }
};

// Runs a network with and without the stand-in from the same weights, forward and backward, and
// expects the same outputs, gradients, running statistics and names.
template <typename Network>
void expect_the_same_network(Network& plain, Network& fused, const torch::Tensor& input, const std::string& what) {
  SCOPED_TRACE(what);
  const auto plain_parameters = plain->named_parameters(), fused_parameters = fused->named_parameters();
  ASSERT_EQ(plain_parameters.keys(), fused_parameters.keys());
  for (const auto& p : plain_parameters) ASSERT_TRUE(torch::equal(p.value(), fused_parameters[p.key()])) << p.key();
  torch::Tensor outputs[2];
  Network* networks[2] = {&plain, &fused};
  for (int i = 0; i < 2; ++i) {
    torch::manual_seed(9);  // the same dropout masks
    outputs[i] = (*networks[i])->forward(input.clone());
    if ((*networks[i])->is_training()) outputs[i].backward(torch::ones_like(outputs[i]).mul_(0.1));
  }
  EXPECT_TRUE(torch::equal(outputs[0], outputs[1])) << "outputs";
  if (plain->is_training()) {
    for (const auto& p : plain_parameters)
      EXPECT_TRUE(torch::equal(p.value().grad(), fused_parameters[p.key()].grad())) << p.key();
  }
  const auto plain_buffers = plain->named_buffers(), fused_buffers = fused->named_buffers();
  ASSERT_EQ(plain_buffers.keys(), fused_buffers.keys());
  for (const auto& b : plain_buffers) EXPECT_TRUE(torch::equal(b.value(), fused_buffers[b.key()])) << b.key();
}

// Non-trivial batch-norm scales and shifts: a layer that skipped one would differ.
void vary_norms(torch::nn::Module& network) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(5);
  for (auto& p : network.named_parameters())
    if (p.key().find("model.") != std::string::npos && p.value().dim() == 1) p.value().uniform_(-0.5, 1.5);
}

TEST(FusedActivation, ThePatchGanTakesEachBatchNormAndLeakyReluThroughTheStandIn) {
  const pix2pix::nets::DiscriminatorOptions plain_options{4, 8, 3, Norm::batch};
  auto fused_options = plain_options;
  CountingStandIn stand_in;
  fused_options.norm_activation = stand_in.function();
  torch::manual_seed(3);
  pix2pix::nets::PatchDiscriminator plain(plain_options);
  torch::manual_seed(3);
  pix2pix::nets::PatchDiscriminator fused(fused_options);
  vary_norms(*plain);
  vary_norms(*fused);
  torch::manual_seed(4);
  const torch::Tensor pair = torch::randn({2, 4, 32, 32});
  expect_the_same_network(plain, fused, pair, "training");
  EXPECT_EQ(stand_in.calls, 3) << "n_layers 3: two strided layers and the stride-1 one have batch norm";
  plain->eval();
  fused->eval();
  expect_the_same_network(plain, fused, pair, "evaluation");
  EXPECT_EQ(stand_in.calls, 6);

  // --sync-bn's layer over ranks is not a BatchNorm2d: it keeps its own forward.
  auto synced_options = fused_options;
  synced_options.batch_stats_sum = [](torch::Tensor&) {};
  pix2pix::nets::PatchDiscriminator synced(synced_options);
  synced->forward(pair);
  EXPECT_EQ(stand_in.calls, 6);
}

TEST(FusedActivation, TheUnetEncoderTakesEachBatchNormAndTheNextLevelsLeakyReluThroughTheStandIn) {
  pix2pix::nets::GeneratorOptions plain_options;
  plain_options.num_downs = 6;
  plain_options.ngf = 4;
  auto fused_options = plain_options;
  CountingStandIn stand_in;
  fused_options.norm_activation = stand_in.function();
  torch::manual_seed(3);
  pix2pix::nets::UnetGenerator plain(plain_options);
  torch::manual_seed(3);
  pix2pix::nets::UnetGenerator fused(fused_options);
  vary_norms(*plain);
  vary_norms(*fused);
  torch::manual_seed(4);
  const torch::Tensor a = torch::randn({2, 3, 64, 64});
  expect_the_same_network(plain, fused, a, "training");
  // 6 levels: the outermost (no norm before its inner level), 4 middle ones, the innermost.
  EXPECT_EQ(stand_in.calls, 4);
  plain->eval();
  fused->eval();
  expect_the_same_network(plain, fused, a, "evaluation");
  EXPECT_EQ(stand_in.calls, 8);
}

TEST(FusedActivation, OnACpuBatchNormIsAtensAndItsKernelsAreRefusedByName) {
  torch::nn::BatchNorm2d norm(4), reference(4);
  torch::manual_seed(6);
  const torch::Tensor x = torch::randn({2, 4, 3, 3}).contiguous(torch::MemoryFormat::ChannelsLast);
  const torch::Tensor expected = torch::leaky_relu(reference->forward(x), 0.2);
  EXPECT_TRUE(torch::equal(pix2pix::dist::batch_norm_leaky_relu(*norm, x, 0.2), expected));
  EXPECT_TRUE(torch::equal(norm->running_var, reference->running_var));
  EXPECT_EQ(norm->num_batches_tracked.item<std::int64_t>(), 1);
  try {
    pix2pix::dist::fused_batch_norm_leaky_relu(*norm, x, 0.2);
    ADD_FAILURE() << "the kernels were taken on a CPU";
  } catch (const pix2pix::Error& e) {
    EXPECT_TRUE(pix2pix::fixtures::contains(e.what(),
                                            "batch norm and LeakyReLU in fused kernels: the fused kernels "
                                            "are CUDA kernels"))
        << e.what();
  }
}

// Per channel in float64: a tensor's sums, and those of its magnitudes.
torch::Tensor sums_per_channel(const torch::Tensor& t) {
  return t.to(torch::kFloat64).sum({0, 2, 3});
}

// On a GPU of a build with the kernels (scripts/gpu-smoke.sh runs it), against a BatchNorm2d of the
// same weights and ATen's leaky_relu_: the output to one rounding of the element type (ATen's
// arithmetic, as far as nvcc compiles both alike), the running statistics, the input's gradient to
// the element type's rounding of sums taken in another order, the parameters' gradients as the same
// float32 sums, and the same bits on a second backward. Channel counts of the vectorised kernels (64,
// 128, 512) and of the element-wise ones (3, 24); one block's rows and many.
TEST(FusedActivation, OnAGpuTheBatchNormKernelsGiveAtensBatchNormAndLeakyRelu) {
  const torch::Device gpu(torch::kCUDA, 0);
  if (!torch::cuda::is_available() || !pix2pix::dist::fused_kernels_unavailable(gpu).empty())
    GTEST_SKIP() << (torch::cuda::is_available() ? pix2pix::dist::fused_kernels_unavailable(gpu) : "no GPU");
  const auto cl = torch::MemoryFormat::ChannelsLast;
  for (const auto type : {torch::kBFloat16, torch::kFloat16, torch::kFloat32}) {
    for (const std::vector<std::int64_t>& shape :
         {std::vector<std::int64_t>{3, 64, 5, 7}, {3, 3, 5, 7}, {2, 24, 9, 9}, {8, 128, 32, 32}, {4, 512, 6, 6}}) {
      SCOPED_TRACE(std::string(c10::toString(type)) + " " + c10::str(c10::IntArrayRef(shape)));
      torch::manual_seed(12);
      const torch::Tensor x = (torch::randn(shape) * 2 + 0.5).to(gpu, type).contiguous(cl);
      const torch::Tensor upstream = torch::randn(shape).to(gpu, type).contiguous(cl);
      torch::nn::BatchNorm2d norms[2] = {torch::nn::BatchNorm2d(shape[1]), torch::nn::BatchNorm2d(shape[1])};
      torch::Tensor y[2], grad_x[2];
      for (int fused = 0; fused < 2; ++fused) {
        norms[fused]->to(gpu);
        {
          torch::NoGradGuard no_grad;
          norms[fused]->weight.uniform_(0.5, 1.5);
          norms[fused]->bias.uniform_(-0.3, 0.3);
          norms[fused]->running_mean.fill_(0.25);
        }
        const torch::Tensor xi = x.clone().requires_grad_();
        y[fused] = fused ? pix2pix::dist::fused_batch_norm_leaky_relu(*norms[fused], xi, 0.2)
                         : composed_batch_norm_leaky_relu(*norms[fused], xi, 0.2);
        y[fused].backward(upstream);
        grad_x[fused] = xi.grad();
      }
      const double eps = type == torch::kFloat32 ? 1.2e-7 : (type == torch::kBFloat16 ? 7.9e-3 : 9.8e-4);
      EXPECT_TRUE(y[1].is_contiguous(cl) && grad_x[1].is_contiguous(cl));
      const auto y0 = y[0].to(torch::kFloat64), y1 = y[1].to(torch::kFloat64);
      EXPECT_TRUE(((y0 - y1).abs() <= y0.abs() * eps + 1e-30).all().item<bool>())
          << "forward: " << (y0 - y1).abs().max().item<double>() << " apart at most; bit for bit in "
          << torch::eq(y[0], y[1]).to(torch::kFloat64).mean().item<double>() * 100 << " %";
      EXPECT_TRUE(torch::allclose(norms[1]->running_mean, norms[0]->running_mean, 1e-6, 1e-7));
      EXPECT_TRUE(torch::allclose(norms[1]->running_var, norms[0]->running_var, 1e-5, 1e-7))
          << norms[1]->running_var << " against " << norms[0]->running_var;
      EXPECT_TRUE(torch::equal(norms[1]->num_batches_tracked, norms[0]->num_batches_tracked));
      const auto g0 = grad_x[0].to(torch::kFloat64), g1 = grad_x[1].to(torch::kFloat64);
      const double scale = g0.abs().max().item<double>();
      EXPECT_TRUE(((g0 - g1).abs() <= g0.abs() * 2 * eps + scale * (type == torch::kFloat32 ? 1e-5 : 4 * eps))
                      .all()
                      .item<bool>())
          << "the input's gradient: " << (g0 - g1).abs().max().item<double>() << " apart at most of " << scale;
      for (const char* name : {"weight", "bias"}) {
        const torch::Tensor ours = norms[1]->named_parameters()[name].grad().to(torch::kFloat64);
        const torch::Tensor atens = norms[0]->named_parameters()[name].grad().to(torch::kFloat64);
        const torch::Tensor magnitude = sums_per_channel(upstream.abs()) * 2;
        EXPECT_TRUE(((ours - atens).abs() <= atens.abs() * 1e-4 + magnitude * 1e-5).all().item<bool>())
            << name << "'s gradient: " << ours << " against " << atens;
      }
      // A second backward of the same forward: the same bits (no atomics in the sums).
      const torch::Tensor xi = x.clone().requires_grad_();
      const torch::Tensor again = pix2pix::dist::fused_batch_norm_leaky_relu(*norms[1], xi, 0.2);
      const torch::Tensor weight_grad = norms[1]->weight.grad().clone();
      norms[1]->zero_grad();
      again.backward(upstream);
      EXPECT_TRUE(torch::equal(xi.grad(), grad_x[1])) << "the input's gradient again";
      EXPECT_TRUE(torch::equal(norms[1]->weight.grad(), weight_grad)) << "the weight's gradient again";
    }
  }
  torch::nn::BatchNorm2d evaluating(8);
  evaluating->to(gpu);
  evaluating->eval();
  const torch::Tensor x = torch::randn({2, 8, 4, 4}).to(gpu).contiguous(cl);
  EXPECT_THROW(pix2pix::dist::fused_batch_norm_leaky_relu(*evaluating, x, 0.2), pix2pix::Error);
}

}  // namespace
