// The fused kernels' autograd functions, on LibTorch's current CUDA stream (so that a CUDA graph
// captures them with the rest of the step). See Note [fused bias and LeakyReLU],
// See Note [fused batch norm and LeakyReLU], See Note [fused concatenation and ReLU] and
// See Note [fused concatenation, batch norm and ReLU]
// (dist/fused_activation.hpp); which calls take them is fused_activation.cpp's, the kernels are
// the *_kernels.cu beside it.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/batch_norm_activation_kernels.hpp"
#include "pix2pix/dist/bias_leaky_relu_kernels.hpp"
#include "pix2pix/dist/concat_relu_kernels.hpp"
#include "pix2pix/dist/cuda_check.hpp"
#include "pix2pix/dist/fused_activation.hpp"
#include "pix2pix/dist/moments_over_ranks.hpp"

namespace pix2pix::dist {
namespace {

kernels::ElementType element_type(const torch::Tensor& t) {
  switch (t.scalar_type()) {
    case torch::kFloat32:
      return kernels::ElementType::float32;
    case torch::kBFloat16:
      return kernels::ElementType::bfloat16;
    case torch::kFloat16:
      return kernels::ElementType::float16;
    default:
      throw Error("the fused kernels: no kernel for " + std::string(c10::toString(t.scalar_type())));
  }
}

cudaStream_t current_stream(const torch::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

// An NHWC tensor as the kernels see it: rows (N·H·W) of channels.
std::int64_t rows_of(const torch::Tensor& t) {
  return t.numel() / std::max<std::int64_t>(t.size(1), 1);
}

// The element `columns` columns into each row of an NHWC tensor: where its later columns begin.
void* columns_of(const torch::Tensor& t, std::int64_t columns) {
  return static_cast<char*>(t.data_ptr()) + columns * t.element_size();
}

// A new NHWC tensor of t's batch, height, width, type and device, with `channels` channels: a
// concatenation's output or one half's gradient.
torch::Tensor nhwc_with_channels(const torch::Tensor& t, std::int64_t channels) {
  return torch::empty({t.size(0), channels, t.size(2), t.size(3)},
                      t.options().memory_format(at::MemoryFormat::ChannelsLast));
}

// The gradient arriving at an output y of the kernels, in y's type and layout.
torch::Tensor incoming(const torch::Tensor& grad, const torch::Tensor& like) {
  return grad.to(like.scalar_type()).contiguous(at::MemoryFormat::ChannelsLast);
}

float slope_of(torch::autograd::AutogradContext* ctx) {
  return static_cast<float>(ctx->saved_data["slope"].toDouble());
}

class BiasLeakyRelu : public torch::autograd::Function<BiasLeakyRelu> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& z, const torch::Tensor& bias,
                               double slope) {
    RECORD_USER_SCOPE("pix2pix fused bias and LeakyReLU");  // See Note [named ranges in a trace]
    const c10::cuda::CUDAGuard device_guard(z.device());
    const torch::Tensor b = bias.contiguous();
    torch::Tensor y = torch::empty_like(z, at::MemoryFormat::ChannelsLast);
    CUDA_CHECK(kernels::bias_leaky_relu_forward(element_type(z), z.data_ptr(), b.data_ptr<float>(), y.data_ptr(),
                                                rows_of(z), z.size(1), static_cast<float>(slope), current_stream(z)));
    ctx->save_for_backward({y});
    ctx->saved_data["slope"] = slope;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_USER_SCOPE("pix2pix fused bias and LeakyReLU backward");
    const torch::Tensor y = ctx->get_saved_variables()[0];
    const c10::cuda::CUDAGuard device_guard(y.device());
    const torch::Tensor grad_y = incoming(grads[0], y);
    const std::int64_t channels = y.size(1), rows = rows_of(y);
    torch::Tensor grad_z = torch::empty_like(y, at::MemoryFormat::ChannelsLast);
    const auto on_device = y.options().dtype(torch::kFloat32);
    torch::Tensor partial_sums = torch::empty({kernels::bias_leaky_relu_backward_workspace(rows, channels)}, on_device);
    torch::Tensor grad_bias = torch::empty({channels}, on_device);
    CUDA_CHECK(kernels::bias_leaky_relu_backward(element_type(y), grad_y.data_ptr(), y.data_ptr(), grad_z.data_ptr(),
                                                 partial_sums.data_ptr<float>(), grad_bias.data_ptr<float>(), rows,
                                                 channels, slope_of(ctx), current_stream(y)));
    return {grad_z, grad_bias, torch::Tensor()};
  }
};

// What batch norm's backward reads: its input x, the statistics it normalised with and its
// affine parameters.
struct BatchNormSaved {
  torch::Tensor x, mean, invstd, weight, bias;
};
BatchNormSaved batch_norm_saved(const torch::autograd::variable_list& saved, std::size_t first) {
  return {saved[first], saved[first + 1], saved[first + 2], saved[first + 3], saved[first + 4]};
}

// An activation's gradient arriving at batch norm's output y: y's own [N, C, H, W], or y the last C
// columns of a wider NHWC tensor's rows (the U-Net's concatenation), `stride` elements a row.
struct StridedGradient {
  const void* data;
  std::int64_t stride;
};

// Batch norm's backward with its activation, first pass: this batch's sums per channel ([2C]: Σ g,
// then Σ g·(x - mean)) and the scale's and shift's gradients.
struct BackwardSums {
  torch::Tensor sums, grad_weight, grad_bias;
};
BackwardSums backward_sums(const StridedGradient& grad_y, const BatchNormSaved& s, kernels::Activation activation) {
  const std::int64_t channels = s.x.size(1), rows = rows_of(s.x);
  const auto on_device = s.x.options().dtype(torch::kFloat32);
  torch::Tensor workspace =
      torch::empty({kernels::batch_norm_activation_backward_workspace(rows, channels)}, on_device);
  BackwardSums out{torch::empty({2 * channels}, on_device), torch::empty({channels}, on_device),
                   torch::empty({channels}, on_device)};
  CUDA_CHECK(kernels::batch_norm_activation_backward_sums(
      element_type(s.x), grad_y.data, grad_y.stride, s.x.data_ptr(), s.mean.data_ptr<float>(),
      s.invstd.data_ptr<float>(), s.weight.data_ptr<float>(), s.bias.data_ptr<float>(), workspace.data_ptr<float>(),
      out.sums.data_ptr<float>(), out.grad_weight.data_ptr<float>(), out.grad_bias.data_ptr<float>(), rows, channels,
      activation, current_stream(s.x)));
  return out;
}

// The second pass: the input's gradient from sums over `1 / norm` values a channel.
torch::Tensor second_pass(const StridedGradient& grad_y, const BatchNormSaved& s, const torch::Tensor& sums, float norm,
                          kernels::Activation activation) {
  torch::Tensor grad_x = torch::empty_like(s.x, at::MemoryFormat::ChannelsLast);
  CUDA_CHECK(kernels::batch_norm_activation_backward_input(
      element_type(s.x), grad_y.data, grad_y.stride, s.x.data_ptr(), s.mean.data_ptr<float>(),
      s.invstd.data_ptr<float>(), s.weight.data_ptr<float>(), s.bias.data_ptr<float>(), sums.data_ptr<float>(),
      grad_x.data_ptr(), rows_of(s.x), s.x.size(1), norm, activation, current_stream(s.x)));
  return grad_x;
}

// A gradient of y's own shape, dense NHWC.
StridedGradient dense(const torch::Tensor& grad_y) {
  return {grad_y.data_ptr(), grad_y.size(1)};
}

// Normalises x with (mean, invstd) and applies the activation, in one kernel, into y: y's own rows
// or, `stride` elements apart, columns of a wider tensor's.
void normalise_activate(const torch::Tensor& x, const torch::Tensor& mean, const torch::Tensor& invstd,
                        const torch::Tensor& w, const torch::Tensor& b, void* y, std::int64_t stride,
                        kernels::Activation activation) {
  CUDA_CHECK(kernels::batch_norm_activation_forward(element_type(x), x.data_ptr(), mean.data_ptr<float>(),
                                                    invstd.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(),
                                                    y, stride, rows_of(x), x.size(1), activation, current_stream(x)));
}

// LeakyReLU(slope) of x normalised with (mean, invstd), a new NHWC tensor.
torch::Tensor normalise_leaky_relu(const torch::Tensor& x, const torch::Tensor& mean, const torch::Tensor& invstd,
                                   const torch::Tensor& w, const torch::Tensor& b, double slope) {
  torch::Tensor y = torch::empty_like(x, at::MemoryFormat::ChannelsLast);
  normalise_activate(x, mean, invstd, w, b, y.data_ptr(), x.size(1),
                     kernels::leaky_relu_activation(static_cast<float>(slope)));
  return y;
}

kernels::Activation leaky_relu_of(torch::autograd::AutogradContext* ctx) {
  return kernels::leaky_relu_activation(slope_of(ctx));
}

// ATen's statistics kernel, the one its batch norm runs on a GPU: this batch's mean and
// 1/sqrt(var + eps), float32 [C]. ATen has no CPU kernel of it; on a CPU (the kernels-on-CPU
// tests, See Note [CUDA kernels on a CPU]) float64 moments stand in.
std::tuple<torch::Tensor, torch::Tensor> batch_statistics(const torch::Tensor& x, double eps) {
#ifdef PIX2PIX_KERNELS_ON_CPU
  const auto [var, mean] = torch::var_mean(x.to(torch::kFloat64), {0, 2, 3}, /*unbiased=*/false);
  return {mean.to(torch::kFloat32), (var + eps).rsqrt().to(torch::kFloat32)};
#else
  return at::batch_norm_stats(x, eps);
#endif
}

// The batch statistics and the running statistics updated from them as ATen's batch norm updates
// them.
std::tuple<torch::Tensor, torch::Tensor> statistics_updating_running(const torch::Tensor& x,
                                                                     torch::Tensor& running_mean,
                                                                     torch::Tensor& running_var, double eps,
                                                                     double momentum) {
  auto [mean, invstd] = batch_statistics(x, eps);
  CUDA_CHECK(kernels::batch_norm_update_running(
      mean.data_ptr<float>(), invstd.data_ptr<float>(), running_mean.data_ptr<float>(), running_var.data_ptr<float>(),
      x.size(1), rows_of(x), static_cast<float>(momentum), static_cast<float>(eps), current_stream(x)));
  return {mean, invstd};
}

// See Note [synchronised batch norm on a GPU]: this rank's statistics, then the global batch's
// moments over every rank and the running statistics updated from them.
MomentsOverRanks moments_over_ranks_of(const torch::Tensor& x, torch::Tensor& running_mean, torch::Tensor& running_var,
                                       double eps, double momentum, const SumOverRanks& sum) {
  const auto [local_mean, local_invstd] = batch_statistics(x, eps);
  return moments_over_ranks_of_stats(local_mean, local_invstd, static_cast<double>(rows_of(x)), running_mean,
                                     running_var, eps, momentum, sum);
}

// Backward's sums over every rank (the sum the forward saved in ctx), divided by the global count
// on the device: the second pass then takes them as they are (norm 1).
// See Note [the global count stays on the device]
torch::Tensor means_over_ranks(const torch::Tensor& sums, const torch::Tensor& count,
                               torch::autograd::AutogradContext* ctx) {
  torch::Tensor global = sums.to(torch::kFloat64);
  (*reinterpret_cast<const SumOverRanks*>(ctx->saved_data["sum"].toInt()))(global);
  return (global / count).to(torch::kFloat32);
}

bool over_ranks(torch::autograd::AutogradContext* ctx) {
  return ctx->saved_data["sum"].toInt() != 0;
}

// The statistics batch norm normalises x with: this rank's batch's (`sum` null; no count) or every
// rank's with `sum`; the running statistics updated from them.
MomentsOverRanks batch_moments(const torch::Tensor& x, torch::Tensor& running_mean, torch::Tensor& running_var,
                               double eps, double momentum, const SumOverRanks* sum) {
  if (sum) return moments_over_ranks_of(x, running_mean, running_var, eps, momentum, *sum);
  auto [mean, invstd] = statistics_updating_running(x, running_mean, running_var, eps, momentum);
  return {mean, invstd, torch::Tensor()};
}

// The second pass from this rank's backward sums, or where the forward took every rank's batch,
// from every rank's (`count`: the global batch's, which the forward saved).
torch::Tensor backward_input(const StridedGradient& grad_y, const BatchNormSaved& s, const torch::Tensor& sums,
                             const torch::Tensor& count, torch::autograd::AutogradContext* ctx,
                             kernels::Activation activation) {
  if (over_ranks(ctx)) return second_pass(grad_y, s, means_over_ranks(sums, count, ctx), 1.0f, activation);
  return second_pass(grad_y, s, sums, 1.0f / static_cast<float>(rows_of(s.x)), activation);
}

// ReLU(cat(skip, batch norm of u with (mean, invstd, w, b))): the skip's half, then batch norm's
// kernels writing the other half of the output's rows.
torch::Tensor concat_normalise_relu(const torch::Tensor& skip, const torch::Tensor& u, const torch::Tensor& mean,
                                    const torch::Tensor& invstd, const torch::Tensor& w, const torch::Tensor& b) {
  const std::int64_t skip_channels = skip.size(1), channels = skip_channels + u.size(1);
  torch::Tensor out = nhwc_with_channels(u, channels);
  CUDA_CHECK(kernels::relu_columns_forward(element_type(skip), skip.data_ptr(), out.data_ptr(), channels, rows_of(skip),
                                           skip_channels, current_stream(skip)));
  normalise_activate(u, mean, invstd, w, b, columns_of(out, skip_channels), channels, kernels::relu_activation());
  return out;
}

// The gradients of a concatenation's output `out` of `skip_channels` + C: the skip's, whole in NHWC,
// and the other half's, read in place.
struct ConcatGradients {
  torch::Tensor grad_out, grad_skip;
  StridedGradient inner;
};
ConcatGradients concat_gradients(const torch::Tensor& grad, const torch::Tensor& out, std::int64_t skip_channels) {
  ConcatGradients g{incoming(grad, out), nhwc_with_channels(out, skip_channels), {}};
  CUDA_CHECK(kernels::relu_columns_backward(element_type(out), g.grad_out.data_ptr(), out.data_ptr(), out.size(1),
                                            g.grad_skip.data_ptr(), rows_of(out), skip_channels, current_stream(out)));
  g.inner = {columns_of(g.grad_out, skip_channels), out.size(1)};
  return g;
}

// See Note [fused batch norm and LeakyReLU]: LeakyReLU(slope) of batch norm of x, of this rank's
// batch (`sum` null) or, --sync-bn's layer, over every rank's batch with `sum`
// (See Note [synchronised batch norm on a GPU]).
class BatchNormLeakyRelu : public torch::autograd::Function<BatchNormLeakyRelu> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias, torch::Tensor running_mean,
                               torch::Tensor running_var, double eps, double momentum, double slope,
                               const SumOverRanks* sum) {
    RECORD_USER_SCOPE(sum ? "pix2pix fused batch norm over ranks and LeakyReLU"
                          : "pix2pix fused batch norm and LeakyReLU");
    const c10::cuda::CUDAGuard device_guard(x.device());
    const MomentsOverRanks m = batch_moments(x, running_mean, running_var, eps, momentum, sum);
    const torch::Tensor w = weight.contiguous(), b = bias.contiguous();
    torch::Tensor y = normalise_leaky_relu(x, m.mean, m.invstd, w, b, slope);
    ctx->save_for_backward({x, m.mean, m.invstd, w, b, m.count});
    ctx->saved_data["slope"] = slope;
    ctx->saved_data["sum"] = reinterpret_cast<std::int64_t>(sum);
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_USER_SCOPE(over_ranks(ctx) ? "pix2pix fused batch norm over ranks and LeakyReLU backward"
                                      : "pix2pix fused batch norm and LeakyReLU backward");
    const auto saved = ctx->get_saved_variables();
    const c10::cuda::CUDAGuard device_guard(saved[0].device());
    const torch::Tensor grad_y = incoming(grads[0], saved[0]);
    const BatchNormSaved s = batch_norm_saved(saved, 0);
    const BackwardSums sums = backward_sums(dense(grad_y), s, leaky_relu_of(ctx));
    torch::Tensor grad_x = backward_input(dense(grad_y), s, sums.sums, saved[5], ctx, leaky_relu_of(ctx));
    return {grad_x,          sums.grad_weight, sums.grad_bias,  torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor(),  torch::Tensor(), torch::Tensor()};
  }
};

class ConcatRelu : public torch::autograd::Function<ConcatRelu> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& skip,
                               const torch::Tensor& inner) {
    RECORD_USER_SCOPE("pix2pix fused concatenation and ReLU");
    const c10::cuda::CUDAGuard device_guard(skip.device());
    torch::Tensor out = nhwc_with_channels(skip, skip.size(1) + inner.size(1));
    CUDA_CHECK(kernels::concat_relu_forward(element_type(skip), skip.data_ptr(), inner.data_ptr(), out.data_ptr(),
                                            rows_of(skip), skip.size(1), inner.size(1), current_stream(skip)));
    ctx->save_for_backward({out});
    ctx->saved_data["skip_channels"] = skip.size(1);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_USER_SCOPE("pix2pix fused concatenation and ReLU backward");
    const torch::Tensor out = ctx->get_saved_variables()[0];
    const c10::cuda::CUDAGuard device_guard(out.device());
    const torch::Tensor grad_out = incoming(grads[0], out);
    const std::int64_t skip_channels = ctx->saved_data["skip_channels"].toInt();
    torch::Tensor grad_skip = nhwc_with_channels(out, skip_channels);
    torch::Tensor grad_inner = nhwc_with_channels(out, out.size(1) - skip_channels);
    CUDA_CHECK(kernels::concat_relu_backward(element_type(out), grad_out.data_ptr(), out.data_ptr(),
                                             grad_skip.data_ptr(), grad_inner.data_ptr(), rows_of(out), skip_channels,
                                             out.size(1) - skip_channels, current_stream(out)));
    return {grad_skip, grad_inner};
  }
};

// See Note [fused concatenation, batch norm and ReLU]: ReLU(cat(skip, batch norm of u)), of this
// rank's batch (`sum` null) or, --sync-bn's layer, over every rank's batch with `sum`
// (See Note [synchronised batch norm on a GPU]).
class ConcatBatchNormRelu : public torch::autograd::Function<ConcatBatchNormRelu> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& skip, const torch::Tensor& u,
                               const torch::Tensor& weight, const torch::Tensor& bias, torch::Tensor running_mean,
                               torch::Tensor running_var, double eps, double momentum, const SumOverRanks* sum) {
    RECORD_USER_SCOPE(sum ? "pix2pix fused concatenation, batch norm over ranks and ReLU"
                          : "pix2pix fused concatenation, batch norm and ReLU");
    const c10::cuda::CUDAGuard device_guard(u.device());
    const MomentsOverRanks m = batch_moments(u, running_mean, running_var, eps, momentum, sum);
    const torch::Tensor w = weight.contiguous(), b = bias.contiguous();
    torch::Tensor out = concat_normalise_relu(skip, u, m.mean, m.invstd, w, b);
    ctx->save_for_backward({out, u, m.mean, m.invstd, w, b, m.count});
    ctx->saved_data["skip_channels"] = skip.size(1);
    ctx->saved_data["sum"] = reinterpret_cast<std::int64_t>(sum);
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    RECORD_USER_SCOPE(over_ranks(ctx) ? "pix2pix fused concatenation, batch norm over ranks and ReLU backward"
                                      : "pix2pix fused concatenation, batch norm and ReLU backward");
    const auto saved = ctx->get_saved_variables();
    const c10::cuda::CUDAGuard device_guard(saved[0].device());
    const ConcatGradients g = concat_gradients(grads[0], saved[0], ctx->saved_data["skip_channels"].toInt());
    const BatchNormSaved s = batch_norm_saved(saved, 1);
    const BackwardSums sums = backward_sums(g.inner, s, kernels::relu_activation());
    torch::Tensor grad_u = backward_input(g.inner, s, sums.sums, saved[6], ctx, kernels::relu_activation());
    return {g.grad_skip,     grad_u,          sums.grad_weight, sums.grad_bias, torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor(),  torch::Tensor()};
  }
};

}  // namespace

namespace detail {

// See Note [CUDA kernels on a CPU]: the kernels-on-CPU tests compile this file again with
// PIX2PIX_KERNELS_ON_CPU, beside the kernels' source compiled as C++ and stand-ins for c10/cuda's
// guard and stream (tests/support/kernels_on_cpu/), and run these functions on CPU tensors.
torch::DeviceType fused_kernels_device() {
#ifdef PIX2PIX_KERNELS_ON_CPU
  return torch::kCPU;
#else
  return torch::kCUDA;
#endif
}

std::string fused_kernels_build_reason() {
  return "";
}

torch::Tensor apply_bias_leaky_relu(const torch::Tensor& z, const torch::Tensor& bias, double slope) {
  return BiasLeakyRelu::apply(z, bias, slope);
}

torch::Tensor apply_batch_norm_leaky_relu(const torch::Tensor& x, const torch::Tensor& weight,
                                          const torch::Tensor& bias, torch::Tensor running_mean,
                                          torch::Tensor running_var, double eps, double momentum, double slope) {
  return BatchNormLeakyRelu::apply(x, weight, bias, running_mean, running_var, eps, momentum, slope, nullptr);
}

torch::Tensor apply_batch_norm_over_ranks_leaky_relu(const torch::Tensor& x, const torch::Tensor& weight,
                                                     const torch::Tensor& bias, torch::Tensor running_mean,
                                                     torch::Tensor running_var, double eps, double momentum,
                                                     const SumOverRanks& sum, double slope) {
  return BatchNormLeakyRelu::apply(x, weight, bias, running_mean, running_var, eps, momentum, slope, &sum);
}

torch::Tensor apply_concat_relu(const torch::Tensor& skip, const torch::Tensor& inner) {
  return ConcatRelu::apply(skip, inner);
}

torch::Tensor apply_concat_batch_norm_relu(const torch::Tensor& skip, const torch::Tensor& u,
                                           const torch::Tensor& weight, const torch::Tensor& bias,
                                           torch::Tensor running_mean, torch::Tensor running_var, double eps,
                                           double momentum) {
  return ConcatBatchNormRelu::apply(skip, u, weight, bias, running_mean, running_var, eps, momentum, nullptr);
}

torch::Tensor apply_concat_batch_norm_over_ranks_relu(const torch::Tensor& skip, const torch::Tensor& u,
                                                      const torch::Tensor& weight, const torch::Tensor& bias,
                                                      torch::Tensor running_mean, torch::Tensor running_var, double eps,
                                                      double momentum, const SumOverRanks& sum) {
  return ConcatBatchNormRelu::apply(skip, u, weight, bias, running_mean, running_var, eps, momentum, &sum);
}

}  // namespace detail
}  // namespace pix2pix::dist
