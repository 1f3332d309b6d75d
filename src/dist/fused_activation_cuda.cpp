// The fused kernels' autograd function, on LibTorch's current CUDA stream (so that a CUDA graph
// captures them with the rest of the step). See Note [fused bias and LeakyReLU]
// (dist/fused_activation.hpp); the kernels are bias_leaky_relu_kernels.cu.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/bias_leaky_relu_kernels.hpp"
#include "pix2pix/dist/cuda_check.hpp"
#include "pix2pix/dist/fused_activation.hpp"

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
      throw Error("bias and LeakyReLU in one kernel: no kernel for " + std::string(c10::toString(t.scalar_type())));
  }
}

cudaStream_t current_stream(const torch::Tensor& t) {
  return c10::cuda::getCurrentCUDAStream(t.device().index()).stream();
}

class BiasLeakyRelu : public torch::autograd::Function<BiasLeakyRelu> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& z, const torch::Tensor& bias,
                               double slope) {
    const c10::cuda::CUDAGuard device_guard(z.device());
    const torch::Tensor b = bias.contiguous();
    torch::Tensor y = torch::empty_like(z, at::MemoryFormat::ChannelsLast);
    CUDA_CHECK(kernels::bias_leaky_relu_forward(element_type(z), z.data_ptr(), b.data_ptr<float>(), y.data_ptr(),
                                                z.numel() / std::max<std::int64_t>(z.size(1), 1), z.size(1),
                                                static_cast<float>(slope), current_stream(z)));
    ctx->save_for_backward({y});
    ctx->saved_data["slope"] = slope;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::Tensor y = ctx->get_saved_variables()[0];
    const c10::cuda::CUDAGuard device_guard(y.device());
    const torch::Tensor grad_y = grads[0].to(y.scalar_type()).contiguous(at::MemoryFormat::ChannelsLast);
    const std::int64_t channels = y.size(1), rows = y.numel() / std::max<std::int64_t>(channels, 1);
    torch::Tensor grad_z = torch::empty_like(y, at::MemoryFormat::ChannelsLast);
    const auto on_device = y.options().dtype(torch::kFloat32);
    torch::Tensor partial_sums = torch::empty({kernels::bias_leaky_relu_backward_workspace(rows, channels)}, on_device);
    torch::Tensor grad_bias = torch::empty({channels}, on_device);
    CUDA_CHECK(kernels::bias_leaky_relu_backward(element_type(y), grad_y.data_ptr(), y.data_ptr(), grad_z.data_ptr(),
                                                 partial_sums.data_ptr<float>(), grad_bias.data_ptr<float>(), rows,
                                                 channels, static_cast<float>(ctx->saved_data["slope"].toDouble()),
                                                 current_stream(y)));
    return {grad_z, grad_bias, torch::Tensor()};
  }
};

}  // namespace

std::string fused_kernels_unavailable(const torch::Device& device) {
  if (!device.is_cuda()) return "the fused kernels are CUDA kernels, and this rank computes on " + device.str();
  return "";
}

torch::Tensor fused_bias_leaky_relu(const torch::Tensor& z, const torch::Tensor& bias, double slope) {
  const std::string why = fused_kernels_unavailable(z.device());
  if (!why.empty()) throw Error("bias and LeakyReLU in one kernel: " + why);
  if (z.dim() != 4 || !z.is_contiguous(at::MemoryFormat::ChannelsLast) || bias.scalar_type() != torch::kFloat32 ||
      bias.dim() != 1 || bias.size(0) != z.size(1) || bias.device() != z.device())
    throw Error(
        "bias and LeakyReLU in one kernel: an NHWC [N, C, H, W] tensor and a float32 [C] bias on its device "
        "are needed");
  return BiasLeakyRelu::apply(z, bias, slope);
}

}  // namespace pix2pix::dist
