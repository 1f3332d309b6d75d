// See Note [fused batch norm and LeakyReLU] and See Note [fused concatenation and ReLU]: the
// networks' layers through stand-ins, the kernels' refusals, and on a GPU the kernels against
// ATen's operations.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "exact_batch_norm.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/fused_activation.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/nets/skip_concat.hpp"
#include "support/fixtures.hpp"

namespace {

using pix2pix::dist::composed_batch_norm_leaky_relu;
using pix2pix::nets::BatchNormLeakyRelu;
using pix2pix::nets::Norm;

// A stand-in that counts its calls and computes what the layers compute: for a BatchNorm2d ATen's
// batch norm and leaky_relu_, for a SyncBatchNorm2d its forward and leaky_relu_.
struct CountingStandIn {
  int calls = 0, synchronised = 0;
  BatchNormLeakyRelu function() {
    return [this](torch::nn::Module& norm, const torch::Tensor& x, double slope) {
      ++calls;
      EXPECT_EQ(slope, 0.2);
      if (auto* own = norm.as<torch::nn::BatchNorm2dImpl>()) {
        EXPECT_EQ(own->options.num_features(), x.size(1));
        return composed_batch_norm_leaky_relu(*own, x, slope);
      }
      ++synchronised;
      torch::Tensor y = norm.as<pix2pix::nets::SyncBatchNorm2dImpl>()->forward(x);
      return torch::leaky_relu_(y, slope);
    };
  }
};

// --sync-bn's sum over ranks, as two ranks of the same batch would sum: the counts double, and with
// them the running variance's correction.
void twice(torch::Tensor& sums) {
  sums.mul_(2);
}

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
      EXPECT_TRUE(torch::equal(p.value().grad(), fused_parameters[p.key()].grad()))
          << p.key() << " " << (p.value().grad() - fused_parameters[p.key()].grad()).abs().max().template item<double>()
          << " of " << p.value().grad().abs().max().template item<double>();
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

// The network of `plain_options` and that of `fused_options`, from the same weights with their
// batch norms' scales and shifts varied.
template <typename Network, typename Options>
std::pair<Network, Network> twins(const Options& plain_options, const Options& fused_options) {
  torch::manual_seed(3);
  Network plain(plain_options);
  torch::manual_seed(3);
  Network fused(fused_options);
  vary_norms(*plain);
  vary_norms(*fused);
  return {plain, fused};
}

// The network of `plain_options` with and without the counting stand-in, of BatchNorm2d layers and
// of --sync-bn's layers over ranks: the same outputs, gradients and buffers in training and
// evaluation, and `norms` calls a forward, each of a layer over ranks where those are the layers.
template <typename Network, typename Options>
void expect_each_norm_through_the_stand_in(Options plain_options, const torch::Tensor& input, int norms) {
  for (const bool synchronised : {false, true}) {
    SCOPED_TRACE(synchronised ? "--sync-bn's layers over ranks" : "BatchNorm2d layers");
    plain_options.batch_stats_sum = synchronised ? pix2pix::nets::BatchStatsSum(twice) : nullptr;
    auto fused_options = plain_options;
    CountingStandIn stand_in;
    fused_options.norm_activation = stand_in.function();
    auto [plain, fused] = twins<Network>(plain_options, fused_options);
    expect_the_same_network(plain, fused, input, "training");
    EXPECT_EQ(stand_in.calls, norms);
    EXPECT_EQ(stand_in.synchronised, synchronised ? norms : 0);
    plain->eval();
    fused->eval();
    expect_the_same_network(plain, fused, input, "evaluation");
    EXPECT_EQ(stand_in.calls, 2 * norms);
  }
}

TEST(FusedActivation, ThePatchGanTakesEachBatchNormAndLeakyReluThroughTheStandIn) {
  torch::manual_seed(4);
  // n_layers 3: two strided layers and the stride-1 one have batch norm.
  expect_each_norm_through_the_stand_in<pix2pix::nets::PatchDiscriminator>(
      pix2pix::nets::DiscriminatorOptions{4, 8, 3, Norm::batch}, torch::randn({2, 4, 32, 32}), 3);
}

TEST(FusedActivation, TheUnetEncoderTakesEachBatchNormAndTheNextLevelsLeakyReluThroughTheStandIn) {
  pix2pix::nets::GeneratorOptions options;
  options.num_downs = 6;
  options.ngf = 4;
  torch::manual_seed(4);
  // 6 levels: the outermost (no norm before its inner level), 4 middle ones, the innermost.
  expect_each_norm_through_the_stand_in<pix2pix::nets::UnetGenerator>(options, torch::randn({2, 3, 64, 64}), 4);
}

// With and without the batch norms' stand-in, and of BatchNorm2d layers and of --sync-bn's layers
// over ranks: each level's concatenation goes through the stand-in, with its last layer where that
// is a batch norm (not where dropout follows it).
TEST(FusedActivation, TheUnetTakesEachConcatenationAndTheOuterLevelsReluThroughTheStandIn) {
  pix2pix::nets::GeneratorOptions plain_options;
  plain_options.num_downs = 6;
  plain_options.ngf = 4;
  for (const bool synchronised : {false, true}) {
    for (const bool with_norms : {false, true}) {
      SCOPED_TRACE(std::string(synchronised ? "--sync-bn's layers" : "BatchNorm2d layers") +
                   (with_norms ? ", with the batch norms' stand-in too" : ", alone"));
      plain_options.batch_stats_sum = synchronised ? pix2pix::nets::BatchStatsSum(twice) : nullptr;
      auto fused_options = plain_options;
      int calls = 0, handed = 0;
      fused_options.concat_activation = [&](const torch::Tensor& skip, const torch::Tensor& inner,
                                            torch::nn::Module* norm) {
        ++calls;
        EXPECT_EQ(skip.sizes().slice(2), inner.sizes().slice(2));
        torch::Tensor half = inner;
        if (norm != nullptr) {
          ++handed;
          EXPECT_TRUE(pix2pix::nets::is_batch_norm(*norm));
          EXPECT_EQ(norm->as<torch::nn::BatchNorm2dImpl>() == nullptr, synchronised);
          half = synchronised ? norm->as<pix2pix::nets::SyncBatchNorm2dImpl>()->forward(inner)
                              : norm->as<torch::nn::BatchNorm2dImpl>()->forward(inner);
        }
        // The layers' own operations, so that every gradient takes the same layout and the same bits.
        torch::Tensor both = pix2pix::nets::skip_concat(skip, half);
        return torch::relu_(both);
      };
      CountingStandIn norms;
      if (with_norms) fused_options.norm_activation = norms.function();
      auto [plain, fused] = twins<pix2pix::nets::UnetGenerator>(plain_options, fused_options);
      torch::manual_seed(4);
      const torch::Tensor a = torch::randn({2, 3, 64, 64});
      expect_the_same_network(plain, fused, a, "training");
      // 6 levels: every one but the outermost returns a concatenation (4 middle, the innermost), and
      // all but the middle one with dropout (6 - 5 of them, the innermost's outer neighbour) hand
      // their last batch norm to it.
      EXPECT_EQ(calls, 5);
      EXPECT_EQ(handed, 4);
      EXPECT_EQ(norms.calls, with_norms ? 4 : 0);
      plain->eval();
      fused->eval();
      expect_the_same_network(plain, fused, a, "evaluation");
      EXPECT_EQ(calls, 10);
      EXPECT_EQ(handed, 8);
    }
  }
  // Instance norm: no batch norm to hand over.
  plain_options.batch_stats_sum = nullptr;
  plain_options.norm = Norm::instance;
  auto fused_options = plain_options;
  int handed = 0;
  fused_options.concat_activation = [&handed](const torch::Tensor& skip, const torch::Tensor& inner,
                                              torch::nn::Module* norm) {
    handed += norm != nullptr;
    torch::Tensor both = pix2pix::nets::skip_concat(skip, inner);
    return torch::relu_(both);
  };
  auto [plain, fused] = twins<pix2pix::nets::UnetGenerator>(plain_options, fused_options);
  expect_the_same_network(plain, fused, torch::randn({2, 3, 64, 64}), "instance norm");
  EXPECT_EQ(handed, 0);
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

TEST(FusedActivation, OnACpuTheConcatenationIsAtensAndItsKernelsAreRefusedByName) {
  torch::manual_seed(7);
  const auto cl = torch::MemoryFormat::ChannelsLast;
  const torch::Tensor skip = torch::randn({2, 3, 4, 5}).contiguous(cl),
                      inner = torch::randn({2, 6, 4, 5}).contiguous(cl);
  EXPECT_TRUE(torch::equal(pix2pix::dist::concat_relu(skip, inner), torch::relu(torch::cat({skip, inner}, 1))));
  try {
    pix2pix::dist::fused_concat_relu(skip, inner);
    ADD_FAILURE() << "the kernels were taken on a CPU";
  } catch (const pix2pix::Error& e) {
    EXPECT_TRUE(pix2pix::fixtures::contains(e.what(),
                                            "concatenation and ReLU in one kernel: the fused kernels are "
                                            "CUDA kernels"))
        << e.what();
  }
}

TEST(FusedActivation, OnACpuTheConcatenationWithBatchNormIsAtensAndItsKernelsAreRefusedByName) {
  torch::manual_seed(8);
  const auto cl = torch::MemoryFormat::ChannelsLast;
  const torch::Tensor skip = torch::randn({2, 3, 4, 5}).contiguous(cl), u = torch::randn({2, 6, 4, 5}).contiguous(cl);
  torch::nn::BatchNorm2d norm(6), reference(6);
  const torch::Tensor expected = torch::relu(torch::cat({skip, reference->forward(u)}, 1));
  EXPECT_TRUE(torch::equal(pix2pix::dist::concat_batch_norm_relu(*norm, skip, u), expected));
  EXPECT_TRUE(torch::equal(norm->running_var, reference->running_var));
  EXPECT_EQ(norm->num_batches_tracked.item<std::int64_t>(), 1);
  try {
    pix2pix::dist::fused_concat_batch_norm_relu(*norm, skip, u);
    ADD_FAILURE() << "the kernels were taken on a CPU";
  } catch (const pix2pix::Error& e) {
    EXPECT_TRUE(pix2pix::fixtures::contains(e.what(),
                                            "concatenation, batch norm and ReLU in fused kernels: the fused "
                                            "kernels are CUDA kernels"))
        << e.what();
  }
}

// On a GPU of a build with the kernels (scripts/gpu-smoke.sh runs it), against a BatchNorm2d of the
// same weights, ATen's cat and relu_: the skip's half and its gradient bit for bit; batch norm's
// half within the element type's rounding of ATen's, the running statistics, the batch counted;
// the gradients of u, the weight and the bias against the exact ones on the kernels' signs, as
// OnAGpuTheBatchNormKernelsGiveAtensBatchNormAndLeakyRelu's; the same bits on a second backward.
// Channel counts whose halves take the vectorised kernels (64 + 64, 128 + 128 over many blocks'
// rows, 512 + 512) and others (3 + 5, 3 + 64).
TEST(FusedActivation, OnAGpuTheConcatenationBatchNormKernelsGiveAtensBatchNormCatAndRelu) {
  const torch::Device gpu(torch::kCUDA, 0);
  if (!torch::cuda::is_available() || !pix2pix::dist::fused_kernels_unavailable(gpu).empty())
    GTEST_SKIP() << (torch::cuda::is_available() ? pix2pix::dist::fused_kernels_unavailable(gpu) : "no GPU");
  const auto cl = torch::MemoryFormat::ChannelsLast;
  for (const auto type : {torch::kBFloat16, torch::kFloat16, torch::kFloat32}) {
    for (const auto& [skip_shape, inner_channels] :
         std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>>{{{2, 64, 5, 7}, 64},
                                                                         {{3, 3, 5, 7}, 5},
                                                                         {{2, 3, 5, 7}, 64},
                                                                         {{8, 128, 32, 32}, 128},
                                                                         {{4, 512, 6, 6}, 512}}) {
      SCOPED_TRACE(std::string(c10::toString(type)) + " " + c10::str(c10::IntArrayRef(skip_shape)) + " + " +
                   std::to_string(inner_channels));
      torch::manual_seed(15);
      const std::int64_t skip_channels = skip_shape[1];
      std::vector<std::int64_t> inner_shape = skip_shape, out_shape = skip_shape;
      inner_shape[1] = inner_channels;
      out_shape[1] += inner_channels;
      const torch::Tensor skip = torch::randn(skip_shape).to(gpu, type).contiguous(cl);
      const torch::Tensor u = (torch::randn(inner_shape) * 2 + 0.5).to(gpu, type).contiguous(cl);
      const torch::Tensor upstream = torch::randn(out_shape).to(gpu, type).contiguous(cl);
      torch::nn::BatchNorm2d norms[2] = {torch::nn::BatchNorm2d(inner_channels),
                                         torch::nn::BatchNorm2d(inner_channels)};
      torch::Tensor out[2], skip_grads[2];
      for (int fused = 0; fused < 2; ++fused) {
        norms[fused]->to(gpu);
        {
          torch::NoGradGuard no_grad;
          torch::manual_seed(16);
          norms[fused]->weight.uniform_(0.5, 1.5);
          norms[fused]->bias.uniform_(-0.3, 0.3);
          norms[fused]->running_mean.fill_(0.25);
        }
        const torch::Tensor s = skip.clone().requires_grad_();
        out[fused] = fused ? pix2pix::dist::fused_concat_batch_norm_relu(*norms[fused], s, u.clone().requires_grad_())
                           : pix2pix::dist::composed_concat_batch_norm_relu(*norms[fused], s, u);
        out[fused].backward(upstream);
        skip_grads[fused] = s.grad();
      }
      EXPECT_TRUE(out[1].is_contiguous(cl) && skip_grads[1].is_contiguous(cl));
      EXPECT_TRUE(torch::equal(out[0].narrow(1, 0, skip_channels), out[1].narrow(1, 0, skip_channels)))
          << "the skip's half";
      EXPECT_TRUE(torch::equal(skip_grads[0], skip_grads[1])) << "the skip's gradient";
      const double eps = pix2pix::fixtures::roundoff(type);
      const auto y0 = out[0].narrow(1, skip_channels, inner_channels).detach().to(torch::kFloat64);
      const torch::Tensor y = out[1].narrow(1, skip_channels, inner_channels).detach();
      const auto y1 = y.to(torch::kFloat64);
      EXPECT_TRUE(((y0 - y1).abs() <= y0.abs() * 2 * eps + y0.abs().max() * 1e-5).all().item<bool>())
          << "batch norm's half: " << (y0 - y1).abs().max().item<double>() << " apart at most";
      EXPECT_TRUE(torch::allclose(norms[1]->running_mean, norms[0]->running_mean, 1e-6, 1e-7));
      EXPECT_TRUE(torch::allclose(norms[1]->running_var, norms[0]->running_var, 1e-5, 1e-7));
      EXPECT_TRUE(torch::equal(norms[1]->num_batches_tracked, norms[0]->num_batches_tracked));

      const auto stats = at::batch_norm_stats(u, 1e-5);
      torch::Tensor ours[2];
      for (int run = 0; run < 2; ++run) {  // a second backward of the same forward: the same bits
        const torch::Tensor ui = u.clone().requires_grad_();
        norms[1]->zero_grad();
        pix2pix::dist::fused_concat_batch_norm_relu(*norms[1], skip, ui).backward(upstream);
        ours[run] =
            torch::cat({ui.grad().flatten().to(torch::kFloat32), norms[1]->weight.grad(), norms[1]->bias.grad()});
      }
      EXPECT_TRUE(torch::equal(ours[0], ours[1])) << "a second backward";
      pix2pix::fixtures::expect_exact_gradients(
          u, upstream.narrow(1, skip_channels, inner_channels), y, std::get<0>(stats), std::get<1>(stats),
          norms[1]->weight, norms[1]->bias, 0.0, ours[0].narrow(0, 0, u.numel()).view_as(u.contiguous()),
          ours[0].narrow(0, u.numel(), inner_channels), ours[0].narrow(0, u.numel() + inner_channels, inner_channels));
    }
  }
}

// On a GPU of a build with the kernels (scripts/gpu-smoke.sh runs it): ReLU selects and nothing is
// rounded, so the output and both gradients are ATen's cat and relu_'s bit for bit, each gradient
// whole in NHWC. Channel counts of the vectorised kernels (64 + 64, 512 + 512, 24 + 8) and of the
// element-wise ones (3 + 5).
TEST(FusedActivation, OnAGpuTheConcatenationKernelsGiveAtensCatAndRelu) {
  const torch::Device gpu(torch::kCUDA, 0);
  if (!torch::cuda::is_available() || !pix2pix::dist::fused_kernels_unavailable(gpu).empty())
    GTEST_SKIP() << (torch::cuda::is_available() ? pix2pix::dist::fused_kernels_unavailable(gpu) : "no GPU");
  const auto cl = torch::MemoryFormat::ChannelsLast;
  for (const auto type : {torch::kBFloat16, torch::kFloat16, torch::kFloat32}) {
    for (const auto& [skip_shape, inner_channels] : std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>>{
             {{2, 64, 5, 7}, 64}, {{3, 3, 5, 7}, 5}, {{4, 512, 8, 8}, 512}, {{2, 24, 9, 9}, 8}}) {
      SCOPED_TRACE(std::string(c10::toString(type)) + " " + c10::str(c10::IntArrayRef(skip_shape)) + " + " +
                   std::to_string(inner_channels));
      torch::manual_seed(14);
      std::vector<std::int64_t> inner_shape = skip_shape;
      inner_shape[1] = inner_channels;
      const torch::Tensor skip = torch::randn(skip_shape).to(gpu, type).contiguous(cl);
      const torch::Tensor inner = torch::randn(inner_shape).to(gpu, type).contiguous(cl);
      std::vector<std::int64_t> out_shape = skip_shape;
      out_shape[1] += inner_channels;
      const torch::Tensor upstream = torch::randn(out_shape).to(gpu, type).contiguous(cl);
      torch::Tensor out[2], grads[2][2];
      for (int fused = 0; fused < 2; ++fused) {
        const torch::Tensor s = skip.clone().requires_grad_(), i = inner.clone().requires_grad_();
        out[fused] = fused ? pix2pix::dist::fused_concat_relu(s, i) : pix2pix::dist::composed_concat_relu(s, i);
        out[fused].backward(upstream);
        grads[fused][0] = s.grad();
        grads[fused][1] = i.grad();
      }
      EXPECT_TRUE(out[1].is_contiguous(cl) && grads[1][0].is_contiguous(cl) && grads[1][1].is_contiguous(cl));
      EXPECT_TRUE(torch::equal(out[0], out[1])) << "forward";
      EXPECT_TRUE(torch::equal(grads[0][0], grads[1][0])) << "the skip's gradient";
      EXPECT_TRUE(torch::equal(grads[0][1], grads[1][1])) << "the inner level's gradient";
    }
  }
}

// On a GPU of a build with the kernels (scripts/gpu-smoke.sh runs it). Forward against a
// BatchNorm2d of the same weights and ATen's leaky_relu_: the output within the element type's
// rounding of ATen's (its share bit for bit in the message: ATen's batch norm takes its 1/sqrt with
// rsqrt, the kernels' statistics with a division) and the running statistics. Backward against the
// exact gradients in float64 on the kernels' own activation signs (a value within a rounding of
// zero may take either sign in two programs, and its gradient with it): the weight's and bias's
// gradients within the element type's rounding of their sums, the input's within its roundings; the
// signs those of the exact normalisation wherever it is clear of zero; the same bits on a second
// backward. Channel counts of the vectorised kernels (64, 128, 512) and of the element-wise ones
// (3, 24); one block's rows and many.
TEST(FusedActivation, OnAGpuTheBatchNormKernelsGiveAtensBatchNormAndLeakyRelu) {
  const torch::Device gpu(torch::kCUDA, 0);
  if (!torch::cuda::is_available() || !pix2pix::dist::fused_kernels_unavailable(gpu).empty())
    GTEST_SKIP() << (torch::cuda::is_available() ? pix2pix::dist::fused_kernels_unavailable(gpu) : "no GPU");
  const auto cl = torch::MemoryFormat::ChannelsLast;
  constexpr double kSlope = 0.2;
  for (const auto type : {torch::kBFloat16, torch::kFloat16, torch::kFloat32}) {
    for (const std::vector<std::int64_t>& shape :
         {std::vector<std::int64_t>{3, 64, 5, 7}, {3, 3, 5, 7}, {2, 24, 9, 9}, {8, 128, 32, 32}, {4, 512, 6, 6}}) {
      SCOPED_TRACE(std::string(c10::toString(type)) + " " + c10::str(c10::IntArrayRef(shape)));
      torch::manual_seed(12);
      const torch::Tensor x = (torch::randn(shape) * 2 + 0.5).to(gpu, type).contiguous(cl);
      const torch::Tensor upstream = torch::randn(shape).to(gpu, type).contiguous(cl);
      torch::nn::BatchNorm2d norms[2] = {torch::nn::BatchNorm2d(shape[1]), torch::nn::BatchNorm2d(shape[1])};
      torch::Tensor y[2];
      for (int fused = 0; fused < 2; ++fused) {
        norms[fused]->to(gpu);
        {
          torch::NoGradGuard no_grad;
          torch::manual_seed(13);
          norms[fused]->weight.uniform_(0.5, 1.5);
          norms[fused]->bias.uniform_(-0.3, 0.3);
          norms[fused]->running_mean.fill_(0.25);
        }
        y[fused] = fused ? pix2pix::dist::fused_batch_norm_leaky_relu(*norms[fused], x.clone().requires_grad_(), kSlope)
                         : composed_batch_norm_leaky_relu(*norms[fused], x, kSlope).detach();
      }
      const double eps = pix2pix::fixtures::roundoff(type);
      EXPECT_TRUE(y[1].is_contiguous(cl));
      const auto y0 = y[0].to(torch::kFloat64), y1 = y[1].detach().to(torch::kFloat64);
      const double y_scale = y0.abs().max().item<double>();
      EXPECT_TRUE(((y0 - y1).abs() <= y0.abs() * 2 * eps + y_scale * 1e-5).all().item<bool>())
          << "forward: " << (y0 - y1).abs().max().item<double>() << " apart at most; bit for bit in "
          << torch::eq(y[0], y[1]).to(torch::kFloat64).mean().item<double>() * 100 << " %";
      EXPECT_TRUE(torch::allclose(norms[1]->running_mean, norms[0]->running_mean, 1e-6, 1e-7));
      EXPECT_TRUE(torch::allclose(norms[1]->running_var, norms[0]->running_var, 1e-5, 1e-7))
          << norms[1]->running_var << " against " << norms[0]->running_var;
      EXPECT_TRUE(torch::equal(norms[1]->num_batches_tracked, norms[0]->num_batches_tracked));

      // The exact gradients on the kernels' signs, from the statistics both programs normalise with.
      const auto stats = at::batch_norm_stats(x, 1e-5);
      torch::Tensor ours[2];
      for (int run = 0; run < 2; ++run) {  // a second backward of the same forward: the same bits
        const torch::Tensor xi = x.clone().requires_grad_();
        norms[1]->zero_grad();
        pix2pix::dist::fused_batch_norm_leaky_relu(*norms[1], xi, kSlope).backward(upstream);
        ours[run] =
            torch::cat({xi.grad().flatten().to(torch::kFloat32), norms[1]->weight.grad(), norms[1]->bias.grad()});
      }
      EXPECT_TRUE(torch::equal(ours[0], ours[1])) << "a second backward";
      pix2pix::fixtures::expect_exact_gradients(
          x, upstream, y[1], std::get<0>(stats), std::get<1>(stats), norms[1]->weight, norms[1]->bias, kSlope,
          ours[0].narrow(0, 0, x.numel()).view_as(x.contiguous()), ours[0].narrow(0, x.numel(), shape[1]),
          ours[0].narrow(0, x.numel() + shape[1], shape[1]));
    }
  }
  torch::nn::BatchNorm2d evaluating(8);
  evaluating->to(gpu);
  evaluating->eval();
  const torch::Tensor x = torch::randn({2, 8, 4, 4}).to(gpu).contiguous(cl);
  EXPECT_THROW(pix2pix::dist::fused_batch_norm_leaky_relu(*evaluating, x, 0.2), pix2pix::Error);
}

}  // namespace
