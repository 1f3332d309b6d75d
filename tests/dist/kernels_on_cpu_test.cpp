// The fused kernels' own CUDA source run on this machine's CPU (See Note [CUDA kernels on a CPU]),
// against LibTorch's CPU operations: the checks of their GPU tests (fused_activation_test.cpp,
// fused_layers_test.cpp), made in CI. The kernels are called through their raw entries, on CPU
// memory, as the autograd functions call them on a GPU's.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

#include "dist/exact_batch_norm.hpp"
#include "dist/nhwc_tensors.hpp"
#include "pix2pix/dist/batch_norm_activation_kernels.hpp"
#include "pix2pix/dist/bias_leaky_relu_kernels.hpp"
#include "pix2pix/dist/concat_relu_kernels.hpp"

namespace {

namespace kernels = pix2pix::dist::kernels;
constexpr double kSlope = 0.2;
const kernels::Activation kLeaky = kernels::leaky_relu_activation(static_cast<float>(kSlope));
const auto kNhwc = torch::MemoryFormat::ChannelsLast;
using pix2pix::fixtures::f32;
using pix2pix::fixtures::nhwc;
using pix2pix::fixtures::trace;
const std::vector<torch::ScalarType> kTypes = {torch::kBFloat16, torch::kFloat16, torch::kFloat32};

kernels::ElementType element_type(torch::ScalarType type) {
  return type == torch::kFloat32
             ? kernels::ElementType::float32
             : (type == torch::kBFloat16 ? kernels::ElementType::bfloat16 : kernels::ElementType::float16);
}

// [N, C, H, W] in NHWC memory: the kernels' rows (N·H·W) of C.
std::int64_t rows_of(const torch::Tensor& t) {
  return t.numel() / t.size(1);
}

// The vectorised kernels' channel counts (64, 128, 512: whole 16-byte packs a row) and the
// element-wise ones' (3, 24 in fp32, whose packs hold 4); one backward block's rows and several.
const std::vector<std::vector<std::int64_t>> kShapes = {
    {3, 64, 5, 7}, {3, 3, 5, 7}, {2, 24, 9, 9}, {4, 128, 8, 8}, {2, 512, 3, 3}};

// See Note [fused bias and LeakyReLU]: the output and the input's gradient are ATen's bit for bit,
// the bias's gradient the same sum to the element type's rounding.
TEST(KernelsOnACpu, BiasAndLeakyReluGiveAtensOperations) {
  torch::manual_seed(21);
  for (const auto type : kTypes) {
    for (const auto& shape : kShapes) {
      SCOPED_TRACE(trace(type, shape));
      const torch::Tensor z = nhwc(shape, type), upstream = nhwc(shape, type), bias = torch::randn({shape[1]});
      const std::int64_t rows = rows_of(z), channels = shape[1];
      torch::Tensor y = torch::empty_like(z, kNhwc);
      ASSERT_EQ(kernels::bias_leaky_relu_forward(element_type(type), z.data_ptr(), bias.data_ptr<float>(), y.data_ptr(),
                                                 rows, channels, kSlope, nullptr),
                cudaSuccess);
      const torch::Tensor sum = (f32(z) + f32(bias.to(type)).view({1, -1, 1, 1})).to(type);
      const torch::Tensor expected = torch::leaky_relu(f32(sum), kSlope).to(type);
      EXPECT_TRUE(torch::equal(y, expected)) << "forward";

      torch::Tensor grad_z = torch::empty_like(z, kNhwc), grad_bias = torch::empty({channels});
      torch::Tensor workspace = torch::empty({kernels::bias_leaky_relu_backward_workspace(rows, channels)});
      ASSERT_EQ(kernels::bias_leaky_relu_backward(element_type(type), upstream.data_ptr(), y.data_ptr(),
                                                  grad_z.data_ptr(), workspace.data_ptr<float>(),
                                                  grad_bias.data_ptr<float>(), rows, channels, kSlope, nullptr),
                cudaSuccess);
      EXPECT_TRUE(torch::equal(grad_z, torch::leaky_relu_backward(f32(upstream), f32(expected), kSlope, true).to(type)))
          << "the input's gradient";
      const torch::Tensor exact = pix2pix::fixtures::sums_per_channel(grad_z);
      const torch::Tensor magnitude = pix2pix::fixtures::sums_per_channel(grad_z.abs());
      EXPECT_TRUE(((grad_bias.to(torch::kFloat64) - exact).abs() <=
                   exact.abs() * pix2pix::fixtures::roundoff(type) + magnitude * 1e-5)
                      .all()
                      .item<bool>())
          << "the bias's gradient: " << grad_bias << " against " << exact;
    }
  }
}

// See Note [fused batch norm and LeakyReLU]: forward within the element type's rounding of the
// exact output from the statistics given, the running statistics as ATen updates them, and the
// gradients (this batch's sums, then the input's, from them or from them divided by the count as the
// layer over ranks passes them) against the exact ones on the kernels' signs.
TEST(KernelsOnACpu, BatchNormAndLeakyReluGiveTheExactOnes) {
  torch::manual_seed(22);
  constexpr float kEps = 1e-5f, kMomentum = 0.1f;
  for (const auto type : kTypes) {
    for (const auto& shape : kShapes) {
      SCOPED_TRACE(trace(type, shape));
      const torch::Tensor x = nhwc(shape, type, 2, 0.5), upstream = nhwc(shape, type);
      const std::int64_t rows = rows_of(x), channels = shape[1];
      const torch::Tensor weight = torch::rand({channels}) + 0.5, bias = torch::rand({channels}) * 0.6 - 0.3;
      const auto [variance, mean] = torch::var_mean(x.to(torch::kFloat32), {0, 2, 3}, /*unbiased=*/false);
      const torch::Tensor invstd = 1 / torch::sqrt(variance + kEps);
      const auto e = element_type(type);

      torch::Tensor running_mean = torch::full({channels}, 0.25), running_var = torch::ones({channels});
      ASSERT_EQ(kernels::batch_norm_update_running(mean.data_ptr<float>(), invstd.data_ptr<float>(),
                                                   running_mean.data_ptr<float>(), running_var.data_ptr<float>(),
                                                   channels, rows, kMomentum, kEps, nullptr),
                cudaSuccess);
      const torch::Tensor unbiased = (1 / (invstd * invstd) - kEps) * rows / (rows - 1);
      EXPECT_TRUE(torch::allclose(running_mean, 0.9 * 0.25 + 0.1 * mean, 1e-6, 1e-7));
      EXPECT_TRUE(torch::allclose(running_var, 0.9 + 0.1 * unbiased, 1e-5, 1e-7));

      torch::Tensor y = torch::empty_like(x, kNhwc);
      ASSERT_EQ(kernels::batch_norm_activation_forward(
                    e, x.data_ptr(), mean.data_ptr<float>(), invstd.data_ptr<float>(), weight.data_ptr<float>(),
                    bias.data_ptr<float>(), y.data_ptr(), channels, rows, channels, kLeaky, nullptr),
                cudaSuccess);
      const auto per_channel = [](const torch::Tensor& t) { return pix2pix::fixtures::as_channels(t); };
      const torch::Tensor exact = torch::leaky_relu(
          (x.to(torch::kFloat64) - per_channel(mean)) * per_channel(invstd) * per_channel(weight) + per_channel(bias),
          kSlope);
      const double eps = pix2pix::fixtures::roundoff(type);
      const torch::Tensor y64 = y.to(torch::kFloat64);
      EXPECT_TRUE(((y64 - exact).abs() <= exact.abs() * 2 * eps + exact.abs().max() * 1e-5).all().item<bool>())
          << "forward: " << (y64 - exact).abs().max().item<double>() << " apart at most";

      torch::Tensor workspace = torch::empty({kernels::batch_norm_activation_backward_workspace(rows, channels)});
      torch::Tensor sums = torch::empty({2 * channels}), grad_weight = torch::empty({channels}),
                    grad_bias = torch::empty({channels});
      ASSERT_EQ(
          kernels::batch_norm_activation_backward_sums(
              e, upstream.data_ptr(), channels, x.data_ptr(), mean.data_ptr<float>(), invstd.data_ptr<float>(),
              weight.data_ptr<float>(), bias.data_ptr<float>(), workspace.data_ptr<float>(), sums.data_ptr<float>(),
              grad_weight.data_ptr<float>(), grad_bias.data_ptr<float>(), rows, channels, kLeaky, nullptr),
          cudaSuccess);
      torch::Tensor grad_x = torch::empty_like(x, kNhwc);
      ASSERT_EQ(kernels::batch_norm_activation_backward_input(
                    e, upstream.data_ptr(), channels, x.data_ptr(), mean.data_ptr<float>(), invstd.data_ptr<float>(),
                    weight.data_ptr<float>(), bias.data_ptr<float>(), sums.data_ptr<float>(), grad_x.data_ptr(), rows,
                    channels, 1.0f / static_cast<float>(rows), kLeaky, nullptr),
                cudaSuccess);
      pix2pix::fixtures::expect_exact_gradients(x, upstream, y, mean, invstd, weight, bias, kSlope, grad_x, grad_weight,
                                                grad_bias);
      // As the layer over ranks calls it (See Note [the global count stays on the device]): the
      // sums divided by the count beforehand, and a norm of 1.
      const torch::Tensor means = sums / static_cast<double>(rows);
      torch::Tensor grad_x_over_ranks = torch::empty_like(x, kNhwc);
      ASSERT_EQ(kernels::batch_norm_activation_backward_input(
                    e, upstream.data_ptr(), channels, x.data_ptr(), mean.data_ptr<float>(), invstd.data_ptr<float>(),
                    weight.data_ptr<float>(), bias.data_ptr<float>(), means.data_ptr<float>(),
                    grad_x_over_ranks.data_ptr(), rows, channels, 1.0f, kLeaky, nullptr),
                cudaSuccess);
      pix2pix::fixtures::expect_exact_gradients(x, upstream, y, mean, invstd, weight, bias, kSlope, grad_x_over_ranks,
                                                grad_weight, grad_bias);
    }
  }
}

// See Note [fused concatenation, batch norm and ReLU]: called as the autograd function calls them,
// the skip's half ReLU'd into the output and batch norm with ReLU written into the other half, its
// rows the output's; backward the skip's gradient, then batch norm's passes reading the output's
// gradient in place. The skip's half and its gradient are ATen's bit for bit, the other half within
// the element type's rounding of the exact output, the gradients against the exact ones on the
// kernels' signs. Channel counts whose halves take the vectorised kernels, and others (3 + 5, and
// 3 + 64, whose batch-norm half starts off a pack's alignment); one backward block's rows and four.
TEST(KernelsOnACpu, ConcatenationBatchNormAndReluGiveTheExactOnes) {
  torch::manual_seed(24);
  constexpr float kEps = 1e-5f;
  const kernels::Activation relu = kernels::relu_activation();
  for (const auto type : kTypes) {
    for (const auto& [skip_shape, inner_channels] :
         std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>>{{{2, 64, 5, 7}, 64},
                                                                         {{3, 3, 5, 7}, 5},
                                                                         {{2, 3, 5, 7}, 64},
                                                                         {{2, 512, 3, 3}, 512},
                                                                         {{2, 24, 9, 9}, 8},
                                                                         {{4, 64, 8, 8}, 128}}) {
      SCOPED_TRACE(trace(type, skip_shape) + " + " + std::to_string(inner_channels));
      const std::int64_t skip_channels = skip_shape[1], channels = skip_channels + inner_channels;
      std::vector<std::int64_t> inner_shape = skip_shape, out_shape = skip_shape;
      inner_shape[1] = inner_channels;
      out_shape[1] = channels;
      const torch::Tensor skip = nhwc(skip_shape, type), u = nhwc(inner_shape, type, 2, 0.5);
      const torch::Tensor upstream = nhwc(out_shape, type);
      const std::int64_t rows = rows_of(u);
      const torch::Tensor weight = torch::rand({inner_channels}) + 0.5,
                          bias = torch::rand({inner_channels}) * 0.6 - 0.3;
      const auto [variance, mean] = torch::var_mean(u.to(torch::kFloat32), {0, 2, 3}, /*unbiased=*/false);
      const torch::Tensor invstd = 1 / torch::sqrt(variance + kEps);
      const auto e = element_type(type);
      const auto columns = [&](const torch::Tensor& t) {
        return static_cast<char*>(t.data_ptr()) + skip_channels * t.element_size();
      };

      torch::Tensor out = torch::empty(out_shape, torch::TensorOptions().dtype(type).memory_format(kNhwc));
      ASSERT_EQ(
          kernels::relu_columns_forward(e, skip.data_ptr(), out.data_ptr(), channels, rows, skip_channels, nullptr),
          cudaSuccess);
      ASSERT_EQ(kernels::batch_norm_activation_forward(
                    e, u.data_ptr(), mean.data_ptr<float>(), invstd.data_ptr<float>(), weight.data_ptr<float>(),
                    bias.data_ptr<float>(), columns(out), channels, rows, inner_channels, relu, nullptr),
                cudaSuccess);
      const torch::Tensor skip_half = out.narrow(1, 0, skip_channels),
                          inner_half = out.narrow(1, skip_channels, inner_channels);
      EXPECT_TRUE(torch::equal(skip_half, torch::relu(f32(skip)).to(type))) << "the skip's half";
      const auto per_channel = [](const torch::Tensor& t) { return pix2pix::fixtures::as_channels(t); };
      const torch::Tensor exact = torch::relu(
          (u.to(torch::kFloat64) - per_channel(mean)) * per_channel(invstd) * per_channel(weight) + per_channel(bias));
      const double eps = pix2pix::fixtures::roundoff(type);
      const torch::Tensor y64 = inner_half.to(torch::kFloat64);
      EXPECT_TRUE(((y64 - exact).abs() <= exact.abs() * 2 * eps + exact.abs().max() * 1e-5).all().item<bool>())
          << "batch norm's half: " << (y64 - exact).abs().max().item<double>() << " apart at most";

      torch::Tensor grad_skip = torch::empty_like(skip, kNhwc);
      ASSERT_EQ(kernels::relu_columns_backward(e, upstream.data_ptr(), out.data_ptr(), channels, grad_skip.data_ptr(),
                                               rows, skip_channels, nullptr),
                cudaSuccess);
      EXPECT_TRUE(torch::equal(
          grad_skip, torch::threshold_backward(f32(upstream.narrow(1, 0, skip_channels)), f32(skip_half), 0).to(type)))
          << "the skip's gradient";
      torch::Tensor workspace = torch::empty({kernels::batch_norm_activation_backward_workspace(rows, inner_channels)});
      torch::Tensor sums = torch::empty({2 * inner_channels}), grad_weight = torch::empty({inner_channels}),
                    grad_bias = torch::empty({inner_channels});
      ASSERT_EQ(
          kernels::batch_norm_activation_backward_sums(
              e, columns(upstream), channels, u.data_ptr(), mean.data_ptr<float>(), invstd.data_ptr<float>(),
              weight.data_ptr<float>(), bias.data_ptr<float>(), workspace.data_ptr<float>(), sums.data_ptr<float>(),
              grad_weight.data_ptr<float>(), grad_bias.data_ptr<float>(), rows, inner_channels, relu, nullptr),
          cudaSuccess);
      torch::Tensor grad_u = torch::empty_like(u, kNhwc);
      ASSERT_EQ(kernels::batch_norm_activation_backward_input(
                    e, columns(upstream), channels, u.data_ptr(), mean.data_ptr<float>(), invstd.data_ptr<float>(),
                    weight.data_ptr<float>(), bias.data_ptr<float>(), sums.data_ptr<float>(), grad_u.data_ptr(), rows,
                    inner_channels, 1.0f / static_cast<float>(rows), relu, nullptr),
                cudaSuccess);
      pix2pix::fixtures::expect_exact_gradients(u, upstream.narrow(1, skip_channels, inner_channels), inner_half, mean,
                                                invstd, weight, bias, 0.0, grad_u, grad_weight, grad_bias);
    }
  }
}

// See Note [fused concatenation and ReLU]: nothing is rounded, so the output and both gradients
// are ATen's cat and relu's bit for bit, each gradient whole in its own NHWC tensor.
TEST(KernelsOnACpu, ConcatenationAndReluGiveAtensCatAndRelu) {
  torch::manual_seed(23);
  for (const auto type : kTypes) {
    for (const auto& [skip_shape, inner_channels] : std::vector<std::pair<std::vector<std::int64_t>, std::int64_t>>{
             {{2, 64, 5, 7}, 64}, {{3, 3, 5, 7}, 5}, {{2, 512, 3, 3}, 512}, {{2, 24, 9, 9}, 8}}) {
      SCOPED_TRACE(trace(type, skip_shape) + " + " + std::to_string(inner_channels));
      std::vector<std::int64_t> inner_shape = skip_shape, out_shape = skip_shape;
      inner_shape[1] = inner_channels;
      out_shape[1] += inner_channels;
      const torch::Tensor skip = nhwc(skip_shape, type), inner = nhwc(inner_shape, type);
      const torch::Tensor upstream = nhwc(out_shape, type);
      const std::int64_t rows = rows_of(skip);
      torch::Tensor out = torch::empty(out_shape, torch::TensorOptions().dtype(type).memory_format(kNhwc));
      ASSERT_EQ(kernels::concat_relu_forward(element_type(type), skip.data_ptr(), inner.data_ptr(), out.data_ptr(),
                                             rows, skip_shape[1], inner_channels, nullptr),
                cudaSuccess);
      const torch::Tensor expected = torch::relu(torch::cat({f32(skip), f32(inner)}, 1)).to(type);
      EXPECT_TRUE(torch::equal(out, expected)) << "forward";
      torch::Tensor grad_skip = torch::empty_like(skip, kNhwc), grad_inner = torch::empty_like(inner, kNhwc);
      ASSERT_EQ(
          kernels::concat_relu_backward(element_type(type), upstream.data_ptr(), out.data_ptr(), grad_skip.data_ptr(),
                                        grad_inner.data_ptr(), rows, skip_shape[1], inner_channels, nullptr),
          cudaSuccess);
      const torch::Tensor grad = torch::threshold_backward(f32(upstream), f32(expected), 0).to(type);
      EXPECT_TRUE(torch::equal(grad_skip, grad.narrow(1, 0, skip_shape[1]))) << "the skip's gradient";
      EXPECT_TRUE(torch::equal(grad_inner, grad.narrow(1, skip_shape[1], inner_channels))) << "the inner gradient";
    }
  }
}

}  // namespace
