// The fused kernels' autograd functions (dist/fused_activation_cuda.cpp) on this machine's CPU,
// around the kernels' own source (See Note [CUDA kernels on a CPU]): what --fused-kernels on runs
// on a GPU, through the library's own entries and the model's stand-ins, from a layer to the
// networks, made in CI. The kernels' arithmetic is kernels_on_cpu_test.cpp's; here, what the
// functions around them do: the tensors they allocate, where each half of a concatenation goes,
// what they save, which gradient goes to which input, the running statistics and the batch count,
// the sums over ranks, and which layers the networks hand them.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dist/exact_batch_norm.hpp"
#include "dist/fused_checks.hpp"
#include "dist/nhwc_tensors.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/fused_activation.hpp"
#include "pix2pix/gan/gan_model.hpp"
#include "pix2pix/nets/networks.hpp"

namespace {

namespace fixtures = pix2pix::fixtures;
constexpr double kSlope = 0.2;
const auto kNhwc = torch::MemoryFormat::ChannelsLast;
const torch::Device kCpu(torch::kCPU);
using fixtures::f32;
using fixtures::nhwc;
using fixtures::trace;

bool made_by(const torch::Tensor& t, const std::string& function) {
  return t.grad_fn() && t.grad_fn()->name().find(function) != std::string::npos;
}

// A BatchNorm2d of varied scales and shifts and a running mean of 0.25.
torch::nn::BatchNorm2d varied_norm(std::int64_t channels) {
  torch::nn::BatchNorm2d norm(channels);
  const fixtures::Affine affine = fixtures::varied_affine(channels);
  torch::NoGradGuard no_grad;
  norm->weight.copy_(affine.weight);
  norm->bias.copy_(affine.bias);
  norm->running_mean.fill_(0.25);
  return norm;
}

// The batch's moments in float64 rounded to float32, as the functions normalise with on a CPU.
std::pair<torch::Tensor, torch::Tensor> moments(const torch::Tensor& x) {
  const auto [var, mean] = torch::var_mean(x.to(torch::kFloat64), {0, 2, 3}, /*unbiased=*/false);
  return {mean.to(torch::kFloat32), (var + 1e-5).rsqrt().to(torch::kFloat32)};
}

// The layer's running statistics after one training batch x, as BatchNorm2d updates them from 0.25
// and 1, and its batch count.
void expect_running_statistics(torch::nn::BatchNorm2dImpl& norm, const torch::Tensor& x) {
  const auto [var, mean] = torch::var_mean(x.to(torch::kFloat64), {0, 2, 3}, /*unbiased=*/true);
  EXPECT_TRUE(torch::allclose(norm.running_mean.to(torch::kFloat64), 0.9 * 0.25 + 0.1 * mean, 1e-6, 1e-7));
  EXPECT_TRUE(torch::allclose(norm.running_var.to(torch::kFloat64), 0.9 + 0.1 * var, 1e-5, 1e-7))
      << norm.running_var << " against " << (0.9 + 0.1 * var);
  EXPECT_EQ(norm.num_batches_tracked.item<std::int64_t>(), 1);
}

// The output y within the element type's rounding of `exact` (float64).
void expect_rounded(const torch::Tensor& y, const torch::Tensor& exact, const std::string& what) {
  const double eps = fixtures::roundoff(y.scalar_type());
  const torch::Tensor y64 = y.detach().to(torch::kFloat64);
  EXPECT_TRUE(((y64 - exact).abs() <= exact.abs() * 2 * eps + exact.abs().max() * 1e-5).all().item<bool>())
      << what << ": " << (y64 - exact).abs().max().item<double>() << " apart at most";
}

const std::vector<torch::ScalarType> kTypes = {torch::kBFloat16, torch::kFloat16, torch::kFloat32};
// Channel counts of the vectorised kernels (64) and of the element-wise ones (3 in the skip, 24).
const std::vector<std::vector<std::int64_t>> kShapes = {{3, 64, 5, 7}, {2, 24, 9, 9}};

TEST(FusedFunctionsOnACpu, ThisBuildsKernelsTakeCpuTensors) {
  EXPECT_EQ(pix2pix::dist::fused_kernels_unavailable(kCpu), "");
}

// Bias and LeakyReLU: the output and the input's gradient as ATen computes them (in float32,
// rounded once), NHWC; the bias's gradient its channel sums to the element type's rounding.
TEST(FusedFunctionsOnACpu, BiasAndLeakyReluGiveAtensValuesAndGradients) {
  torch::manual_seed(31);
  for (const auto type : kTypes)
    for (const auto& shape : kShapes) {
      SCOPED_TRACE(trace(type, shape));
      const torch::Tensor z = nhwc(shape, type).requires_grad_(), upstream = nhwc(shape, type);
      const torch::Tensor bias = torch::randn({shape[1]}).requires_grad_();
      const torch::Tensor y = pix2pix::dist::fused_bias_leaky_relu(z, bias, kSlope);
      EXPECT_TRUE(made_by(y, "BiasLeakyRelu")) << y.grad_fn()->name();
      const torch::Tensor sum = (f32(z.detach()) + f32(bias.detach().to(type)).view({1, -1, 1, 1})).to(type);
      const torch::Tensor expected = torch::leaky_relu(f32(sum), kSlope).to(type);
      EXPECT_TRUE(y.is_contiguous(kNhwc) && torch::equal(y.detach(), expected)) << "forward";
      y.backward(upstream);
      EXPECT_TRUE(z.grad().is_contiguous(kNhwc));
      EXPECT_TRUE(
          torch::equal(z.grad(), torch::leaky_relu_backward(f32(upstream), f32(expected), kSlope, true).to(type)))
          << "the input's gradient";
      const torch::Tensor exact = fixtures::sums_per_channel(z.grad());
      EXPECT_TRUE(((bias.grad().to(torch::kFloat64) - exact).abs() <=
                   exact.abs() * fixtures::roundoff(type) + fixtures::sums_per_channel(z.grad().abs()) * 1e-5)
                      .all()
                      .item<bool>())
          << "the bias's gradient: " << bias.grad() << " against " << exact;
    }
}

// A BatchNorm2d's batch norm and LeakyReLU: the output within the element type's rounding of the
// exact one, the running statistics and batch count as the layer's, the gradients of x, the scale
// and the shift against the exact ones; a layer in evaluation mode refused.
TEST(FusedFunctionsOnACpu, BatchNormAndLeakyReluGiveTheLayersValuesAndTheExactGradients) {
  torch::manual_seed(32);
  for (const auto type : kTypes)
    for (const auto& shape : kShapes) {
      SCOPED_TRACE(trace(type, shape));
      const torch::Tensor x = nhwc(shape, type, 2, 0.5).requires_grad_(), upstream = nhwc(shape, type);
      torch::nn::BatchNorm2d norm = varied_norm(shape[1]);
      const torch::Tensor y = pix2pix::dist::fused_batch_norm_leaky_relu(*norm, x, kSlope);
      EXPECT_TRUE(made_by(y, "BatchNormLeakyRelu")) << y.grad_fn()->name();
      EXPECT_TRUE(y.is_contiguous(kNhwc));
      const auto [mean, invstd] = moments(x);
      expect_rounded(y,
                     torch::leaky_relu((x.detach().to(torch::kFloat64) - fixtures::as_channels(mean)) *
                                               fixtures::as_channels(invstd) * fixtures::as_channels(norm->weight) +
                                           fixtures::as_channels(norm->bias),
                                       kSlope),
                     "forward");
      expect_running_statistics(*norm, x);
      y.backward(upstream);
      EXPECT_TRUE(x.grad().is_contiguous(kNhwc));
      fixtures::expect_exact_gradients(x.detach(), upstream, y, mean, invstd, norm->weight, norm->bias, kSlope,
                                       x.grad(), norm->weight.grad(), norm->bias.grad());
    }
  torch::nn::BatchNorm2d evaluating(8);
  evaluating->eval();
  EXPECT_THROW(pix2pix::dist::fused_batch_norm_leaky_relu(*evaluating, nhwc({2, 8, 4, 4}, torch::kFloat32), kSlope),
               pix2pix::Error);
}

// The concatenation and ReLU: the output and both gradients ATen's cat and relu's bit for bit,
// each whole in NHWC; halves of the vectorised kernels (64 + 64, 24 + 8) and element-wise (3 + 5).
TEST(FusedFunctionsOnACpu, ConcatenationAndReluGiveAtensCatAndRelu) {
  torch::manual_seed(33);
  for (const auto type : kTypes)
    for (const auto& [skip_shape, inner_channels] : std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>>{
             {{2, 64, 5, 7}, 64}, {{3, 3, 5, 7}, 5}, {{2, 24, 9, 9}, 8}}) {
      SCOPED_TRACE(trace(type, skip_shape) + " + " + std::to_string(inner_channels));
      std::vector<std::int64_t> inner_shape = skip_shape, out_shape = skip_shape;
      inner_shape[1] = inner_channels;
      out_shape[1] += inner_channels;
      const torch::Tensor skip = nhwc(skip_shape, type).requires_grad_(),
                          inner = nhwc(inner_shape, type).requires_grad_();
      const torch::Tensor upstream = nhwc(out_shape, type);
      const torch::Tensor out = pix2pix::dist::fused_concat_relu(skip, inner);
      EXPECT_TRUE(made_by(out, "ConcatRelu")) << out.grad_fn()->name();
      const torch::Tensor expected = torch::relu(torch::cat({f32(skip.detach()), f32(inner.detach())}, 1)).to(type);
      EXPECT_TRUE(out.is_contiguous(kNhwc) && torch::equal(out.detach(), expected)) << "forward";
      out.backward(upstream);
      const torch::Tensor grad = torch::where(expected.to(torch::kFloat32) > 0, f32(upstream), 0.0f).to(type);
      EXPECT_TRUE(skip.grad().is_contiguous(kNhwc) && inner.grad().is_contiguous(kNhwc));
      EXPECT_TRUE(torch::equal(skip.grad(), grad.narrow(1, 0, skip_shape[1]))) << "the skip's gradient";
      EXPECT_TRUE(torch::equal(inner.grad(), grad.narrow(1, skip_shape[1], inner_channels)))
          << "the inner level's gradient";
    }
}

// The concatenation with the inner level's batch norm: the skip's half and its gradient bit for
// bit, batch norm's half within the element type's rounding, the running statistics, and the
// gradients of u, the scale and the shift against the exact ones (ReLU: LeakyReLU of slope 0).
TEST(FusedFunctionsOnACpu, ConcatenationBatchNormAndReluGiveTheLayersValuesAndTheExactGradients) {
  torch::manual_seed(34);
  for (const auto type : kTypes)
    for (const auto& [skip_shape, inner_channels] : std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>>{
             {{2, 64, 5, 7}, 64}, {{3, 3, 5, 7}, 5}, {{2, 3, 5, 7}, 64}}) {
      SCOPED_TRACE(trace(type, skip_shape) + " + " + std::to_string(inner_channels));
      const std::int64_t skip_channels = skip_shape[1];
      std::vector<std::int64_t> inner_shape = skip_shape, out_shape = skip_shape;
      inner_shape[1] = inner_channels;
      out_shape[1] += inner_channels;
      const torch::Tensor skip = nhwc(skip_shape, type).requires_grad_();
      const torch::Tensor u = nhwc(inner_shape, type, 2, 0.5).requires_grad_(), upstream = nhwc(out_shape, type);
      torch::nn::BatchNorm2d norm = varied_norm(inner_channels);
      const torch::Tensor out = pix2pix::dist::fused_concat_batch_norm_relu(*norm, skip, u);
      EXPECT_TRUE(made_by(out, "ConcatBatchNormRelu")) << out.grad_fn()->name();
      EXPECT_TRUE(out.is_contiguous(kNhwc));
      EXPECT_TRUE(torch::equal(out.detach().narrow(1, 0, skip_channels), torch::relu(f32(skip.detach())).to(type)))
          << "the skip's half";
      const auto [mean, invstd] = moments(u);
      const torch::Tensor y = out.detach().narrow(1, skip_channels, inner_channels);
      expect_rounded(y,
                     torch::relu((u.detach().to(torch::kFloat64) - fixtures::as_channels(mean)) *
                                     fixtures::as_channels(invstd) * fixtures::as_channels(norm->weight) +
                                 fixtures::as_channels(norm->bias)),
                     "batch norm's half");
      expect_running_statistics(*norm, u);
      out.backward(upstream);
      const torch::Tensor skip_upstream = upstream.narrow(1, 0, skip_channels);
      EXPECT_TRUE(skip.grad().is_contiguous(kNhwc) && u.grad().is_contiguous(kNhwc));
      EXPECT_TRUE(torch::equal(skip.grad(), torch::where(f32(skip.detach()) > 0, f32(skip_upstream), 0.0f).to(type)))
          << "the skip's gradient";
      fixtures::expect_exact_gradients(u.detach(), upstream.narrow(1, skip_channels, inner_channels), y, mean, invstd,
                                       norm->weight, norm->bias, 0.0, u.grad(), norm->weight.grad(), norm->bias.grad());
    }
}

// --sync-bn's layer through the kernels over ranks: GPU tests' check
// (FusedActivation.OnAGpuTheKernelsOverRanksGiveTheWholeBatchsBatchNormAndWhatFollows), on a CPU.
TEST(FusedFunctionsOnACpu, RanksOfSlicesThroughTheKernelsGiveTheWholeBatchsBatchNormAndWhatFollows) {
  for (const auto type : {torch::kBFloat16, torch::kFloat32})
    for (const std::int64_t channels : {64, 24}) {
      fixtures::expect_ranks_give_the_whole_batch(kCpu, type, channels, fixtures::Next::leaky_relu,
                                                  "BatchNormLeakyRelu");
      fixtures::expect_ranks_give_the_whole_batch(kCpu, type, channels, fixtures::Next::concatenation,
                                                  "ConcatBatchNormRelu");
    }
}

// The autograd functions' names in the graph that made `out`.
std::set<std::string> fused_functions_behind(const torch::Tensor& out) {
  std::set<std::string> names;
  std::set<torch::autograd::Node*> seen;
  std::vector<torch::autograd::Node*> open{out.grad_fn().get()};
  while (!open.empty()) {
    torch::autograd::Node* node = open.back();
    open.pop_back();
    if (!node || !seen.insert(node).second) continue;
    for (const std::string function : {"BiasLeakyRelu", "BatchNormLeakyRelu", "ConcatRelu", "ConcatBatchNormRelu"})
      if (node->name().find("::" + function + ">") != std::string::npos) names.insert(function);
    for (const auto& edge : node->next_edges()) open.push_back(edge.function.get());
  }
  return names;
}

// NHWC weights, as the trainer keeps them under --channels-last (See optim/update_group.cpp).
void to_nhwc(torch::nn::Module& network) {
  torch::NoGradGuard no_grad;
  for (auto& p : network.parameters())
    if (p.dim() == 4) p.set_data(p.contiguous(kNhwc));
}

// A network built plain and built with --fused-kernels on's stand-ins (the model's), from the same
// weights, forward and backward on an NHWC float32 batch: the same outputs, parameter gradients and
// running statistics to float32's rounding (the kernels' and ATen's CPU batch norm round
// differently), and the functions `expected` in the fused network's graph.
// The largest magnitude in t.
double largest(const torch::Tensor& t) {
  return t.abs().max().item<double>();
}

template <typename Network>
void expect_the_fused_network_gives_the_plain_ones(Network& plain, Network& fused, const torch::Tensor& input,
                                                   const std::set<std::string>& expected) {
  torch::Tensor outputs[2];
  Network* networks[2] = {&plain, &fused};
  for (int i = 0; i < 2; ++i) {
    to_nhwc(**networks[i]);
    torch::manual_seed(9);  // the same dropout masks
    outputs[i] = (*networks[i])->forward(input.contiguous(kNhwc));
    outputs[i].backward(torch::ones_like(outputs[i]).mul_(0.1));
  }
  EXPECT_EQ(fused_functions_behind(outputs[1]), expected);
  EXPECT_TRUE(fused_functions_behind(outputs[0]).empty());
  const auto close = [](const torch::Tensor& a, const torch::Tensor& b) {
    return ((a - b).abs() <= b.abs().max() * 1e-4).all().item<bool>();
  };
  EXPECT_TRUE(close(outputs[1], outputs[0])) << largest(outputs[1] - outputs[0]);
  const auto fused_parameters = fused->named_parameters();
  for (const auto& p : plain->named_parameters())
    EXPECT_TRUE(close(fused_parameters[p.key()].grad(), p.value().grad()))
        << p.key() << ": " << largest(fused_parameters[p.key()].grad() - p.value().grad()) << " of "
        << largest(p.value().grad());
  const auto fused_buffers = fused->named_buffers();
  for (const auto& b : plain->named_buffers())
    EXPECT_TRUE(b.value().dim() == 0 ? torch::equal(fused_buffers[b.key()], b.value())
                                     : torch::allclose(fused_buffers[b.key()], b.value(), 1e-5, 1e-6))
        << b.key();
}

// The U-Net generator and the PatchGAN, of BatchNorm2d layers and of --sync-bn's layers (as two
// ranks of the same batch would sum them), through the model's stand-ins as --fused-kernels on
// builds them: every function in their graphs, and the plain networks' values.
TEST(FusedFunctionsOnACpu, TheNetworksThroughTheKernelsGiveThePlainNetworksValues) {
  torch::manual_seed(35);
  const torch::Tensor a = torch::randn({2, 3, 64, 64}), pair = torch::randn({2, 6, 32, 32});
  for (const bool synchronised : {false, true}) {
    SCOPED_TRACE(synchronised ? "--sync-bn's layers" : "BatchNorm2d layers");
    const pix2pix::nets::BatchStatsSum sum =
        synchronised ? pix2pix::nets::BatchStatsSum([](torch::Tensor& sums) { sums.mul_(2); }) : nullptr;
    pix2pix::nets::GeneratorOptions g;
    g.num_downs = 6;
    g.ngf = 4;
    g.batch_stats_sum = sum;
    pix2pix::nets::GeneratorOptions fused_g = g;
    fused_g.norm_activation = pix2pix::gan::batch_norm_leaky_relu;
    // A CPU's transposed convolution (LibTorch 1.13's) gives NCHW where a GPU's gives NHWC, and the
    // kernels take NHWC only: the decoder's outputs made NHWC here, as on a GPU.
    fused_g.concat_activation = [](const torch::Tensor& skip, const torch::Tensor& inner, torch::nn::Module* norm) {
      return pix2pix::gan::concat_batch_norm_relu(skip.contiguous(kNhwc), inner.contiguous(kNhwc), norm);
    };
    torch::manual_seed(3);
    pix2pix::nets::UnetGenerator plain_generator(g);
    torch::manual_seed(3);
    pix2pix::nets::UnetGenerator fused_generator(fused_g);
    // num_downs 6: the innermost level and three others hand their last batch norm to the
    // concatenation; the level with dropout keeps its own (ConcatRelu).
    expect_the_fused_network_gives_the_plain_ones(plain_generator, fused_generator, a,
                                                  {"BatchNormLeakyRelu", "ConcatRelu", "ConcatBatchNormRelu"});

    pix2pix::nets::DiscriminatorOptions d;
    d.ndf = 8;
    d.batch_stats_sum = sum;
    pix2pix::nets::DiscriminatorOptions fused_d = d;
    fused_d.first_layer_activation = pix2pix::dist::bias_leaky_relu;
    fused_d.norm_activation = pix2pix::gan::batch_norm_leaky_relu;
    torch::manual_seed(4);
    pix2pix::nets::PatchDiscriminator plain_discriminator(d);
    torch::manual_seed(4);
    pix2pix::nets::PatchDiscriminator fused_discriminator(fused_d);
    expect_the_fused_network_gives_the_plain_ones(plain_discriminator, fused_discriminator, pair,
                                                  {"BiasLeakyRelu", "BatchNormLeakyRelu"});
  }
}

}  // namespace
