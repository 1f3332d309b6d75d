// See Note [fused bias and LeakyReLU]: the PatchGAN's first layer
// through a stand-in, the option's refusals, and on a GPU the kernels against ATen's operations.
#include "pix2pix/dist/fused_activation.hpp"

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "cli/cli_helpers.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/nets/networks.hpp"
#include "support/fixtures.hpp"

namespace {

using pix2pix::dist::composed_bias_leaky_relu;
using pix2pix::dist::fused_kernels_unavailable;
using pix2pix::fixtures::contains;
using pix2pix::nets::DiscriminatorOptions;
using pix2pix::nets::Norm;
using pix2pix::nets::PatchDiscriminator;

TEST(FusedActivation, APatchGanTakesItsFirstBiasAndLeakyReluThroughTheStandIn) {
  const DiscriminatorOptions plain_options{4, 8, 3, Norm::batch};
  DiscriminatorOptions fused_options = plain_options;
  int calls = 0;
  torch::Tensor first_bias;
  fused_options.first_layer_activation = [&](const torch::Tensor& z, const torch::Tensor& bias, double slope) {
    ++calls;
    EXPECT_EQ(z.sizes(), (std::vector<std::int64_t>{2, 8, 16, 16}));
    EXPECT_TRUE(bias.is_same(first_bias)) << "the first convolution's own bias";
    EXPECT_EQ(slope, 0.2);
    return composed_bias_leaky_relu(z, bias, slope);
  };
  torch::manual_seed(3);
  PatchDiscriminator plain(plain_options);
  torch::manual_seed(3);
  PatchDiscriminator fused(fused_options);
  first_bias = fused->named_parameters()["model.0.bias"];
  // The reference's parameters and names: state dicts and exports do not see the stand-in.
  const auto plain_parameters = plain->named_parameters(), fused_parameters = fused->named_parameters();
  ASSERT_EQ(plain_parameters.keys(), fused_parameters.keys());
  for (const auto& p : plain_parameters) ASSERT_TRUE(torch::equal(p.value(), fused_parameters[p.key()])) << p.key();
  torch::NoGradGuard no_init_grad;
  // The bias made non-zero: a layer that dropped it would then differ.
  plain->named_parameters()["model.0.bias"].copy_(torch::linspace(-1, 1, 8));
  first_bias.copy_(torch::linspace(-1, 1, 8));

  torch::manual_seed(4);
  const torch::Tensor pair = torch::randn({2, 4, 32, 32}), upstream = torch::randn({2, 1, 2, 2});
  torch::Tensor outputs[2];
  {
    torch::AutoGradMode grad(true);
    outputs[0] = plain->forward(pair);
    outputs[1] = fused->forward(pair);
    outputs[0].backward(upstream);
    outputs[1].backward(upstream);
  }
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(torch::allclose(outputs[0], outputs[1], 1e-5, 1e-6));
  for (const auto& p : plain_parameters)
    EXPECT_TRUE(torch::allclose(p.value().grad(), fused_parameters[p.key()].grad(), 1e-4, 1e-6)) << p.key();
  // Without a stand-in the layers run as they are: the same network, called through its Sequential.
  EXPECT_FALSE(plain->options().first_layer_activation);
}

TEST(FusedActivation, OnACpuTheOperationIsAtensAndTheKernelsAreRefusedByName) {
  const torch::Device cpu(torch::kCPU);
  EXPECT_TRUE(contains(fused_kernels_unavailable(cpu), "CUDA kernels")) << fused_kernels_unavailable(cpu);
  const torch::Tensor z = torch::randn({2, 4, 3, 3}).contiguous(torch::MemoryFormat::ChannelsLast);
  const torch::Tensor bias = torch::randn({4});
  EXPECT_TRUE(torch::equal(pix2pix::dist::bias_leaky_relu(z, bias, 0.2),
                           torch::leaky_relu(z + bias.reshape({1, 4, 1, 1}), 0.2)));
  EXPECT_THROW(pix2pix::dist::fused_bias_leaky_relu(z, bias, 0.2), pix2pix::Error);
  // bf16: the bias in z's type first, as autocast casts a convolution's bias.
  const torch::Tensor z16 = z.to(torch::kBFloat16);
  EXPECT_TRUE(torch::equal(composed_bias_leaky_relu(z16, bias, 0.2),
                           torch::leaky_relu(z16 + bias.to(torch::kBFloat16).reshape({1, 4, 1, 1}), 0.2)));

  using pix2pix::dist::resolve_fused_kernels;
  EXPECT_FALSE(resolve_fused_kernels(std::nullopt, cpu, true));  // auto: off until measured on a GPU
  EXPECT_FALSE(resolve_fused_kernels(false, cpu, true));
  try {
    resolve_fused_kernels(true, cpu, true);
    ADD_FAILURE() << "--fused-kernels on was taken on a CPU";
  } catch (const pix2pix::UsageError& e) {
    EXPECT_TRUE(contains(e.what(), "--fused-kernels on: the fused kernels are CUDA kernels")) << e.what();
  }
  const torch::Device gpu(torch::kCUDA, 0);
  try {
    resolve_fused_kernels(true, gpu, false);
    ADD_FAILURE() << "--fused-kernels on was taken without channels-last or without kernels";
  } catch (const pix2pix::UsageError& e) {
    const std::string why = fused_kernels_unavailable(gpu);
    EXPECT_TRUE(contains(e.what(), why.empty() ? "add --channels-last on" : why)) << e.what();
  }
  EXPECT_EQ(pix2pix::dist::describe_fused_kernels(std::nullopt, false),
            "none, ATen's operations (--fused-kernels auto)");
}

TEST(FusedKernelsCli, IsOffUnlessAskedAndRefusedByNameOnACpu) {
  using pix2pix::cli_tests::smoke_train_command;
  using pix2pix::fixtures::run_cli;
  pix2pix::fixtures::TempDir dir;
  pix2pix::fixtures::make_fashion_edges_dataset(dir / "d.h5", 20, 32);
  auto r = run_cli(smoke_train_command(dir, "auto", "--max-epochs 1"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "none, ATen's operations (--fused-kernels auto)")) << r.output;
  r = run_cli(smoke_train_command(dir, "on", "--max-epochs 1 --device cpu --fused-kernels on"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--fused-kernels on: the fused kernels are CUDA kernels")) << r.output;
}

// The sum of each channel of an NHWC gradient in float64, and of its magnitudes.
torch::Tensor channel_sums(const torch::Tensor& t) {
  return t.to(torch::kFloat64).sum({0, 2, 3});
}

// On a GPU of a build with the kernels (scripts/gpu-smoke.sh runs it): the output and the input's
// gradient are ATen's bit for bit, the bias's gradient the same sum to the element type's rounding,
// and the same bits again on a second backward. Channel counts that take the vectorised kernels (64)
// and those that do not (3, 24), batches of one block's rows and of many.
TEST(FusedActivation, OnAGpuTheKernelsGiveAtensOperations) {
  const torch::Device gpu(torch::kCUDA, 0);
  if (!torch::cuda::is_available() || !fused_kernels_unavailable(gpu).empty())
    GTEST_SKIP() << (torch::cuda::is_available() ? fused_kernels_unavailable(gpu) : "no GPU");
  torch::manual_seed(11);
  for (const auto type : {torch::kBFloat16, torch::kFloat16, torch::kFloat32}) {
    for (const std::vector<std::int64_t>& shape :
         {std::vector<std::int64_t>{3, 64, 5, 7}, {3, 3, 5, 7}, {2, 24, 9, 9}, {8, 64, 64, 64}}) {
      SCOPED_TRACE(std::string(c10::toString(type)) + " " + c10::str(c10::IntArrayRef(shape)));
      const auto cl = torch::MemoryFormat::ChannelsLast;
      const torch::Tensor z = torch::randn(shape).to(gpu, type).contiguous(cl);
      const torch::Tensor bias = torch::randn({shape[1]}).to(gpu);
      const torch::Tensor upstream = torch::randn(shape).to(gpu, type).contiguous(cl);
      torch::Tensor y[2], grad_z[2], grad_bias[2];
      for (int fused = 0; fused < 2; ++fused) {
        const torch::Tensor zi = z.clone().requires_grad_(), bi = bias.clone().requires_grad_();
        y[fused] = fused ? pix2pix::dist::fused_bias_leaky_relu(zi, bi, 0.2) : composed_bias_leaky_relu(zi, bi, 0.2);
        y[fused].backward(upstream);
        grad_z[fused] = zi.grad();
        grad_bias[fused] = bi.grad();
      }
      EXPECT_TRUE(y[1].is_contiguous(cl));
      EXPECT_TRUE(torch::equal(y[0], y[1])) << "forward";
      EXPECT_TRUE(torch::equal(grad_z[0], grad_z[1])) << "the input's gradient";
      const torch::Tensor exact = channel_sums(grad_z[1]), magnitude = channel_sums(grad_z[1].abs());
      const double eps = type == torch::kFloat32 ? 1.2e-7 : (type == torch::kBFloat16 ? 7.9e-3 : 9.8e-4);
      const torch::Tensor error = (grad_bias[1].to(torch::kFloat64) - exact).abs();
      EXPECT_TRUE((error <= exact.abs() * eps + magnitude * 1e-5).all().item<bool>())
          << "the bias's gradient: " << grad_bias[1] << " against " << exact;
      const torch::Tensor zi = z.clone().requires_grad_(), bi = bias.clone().requires_grad_();
      pix2pix::dist::fused_bias_leaky_relu(zi, bi, 0.2).backward(upstream);
      EXPECT_TRUE(torch::equal(bi.grad(), grad_bias[1])) << "the same bits on a second backward";
    }
  }
}

}  // namespace
