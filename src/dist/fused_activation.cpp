#include "pix2pix/dist/fused_activation.hpp"

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::dist {
namespace {

bool kernels_take(const torch::Tensor& z, const torch::Tensor& bias) {
  const auto type = z.scalar_type();
  return z.dim() == 4 && z.is_contiguous(at::MemoryFormat::ChannelsLast) &&
         (type == torch::kFloat32 || type == torch::kBFloat16 || type == torch::kFloat16) &&
         bias.scalar_type() == torch::kFloat32 && bias.dim() == 1 && bias.size(0) == z.size(1) &&
         bias.device() == z.device() && fused_kernels_unavailable(z.device()).empty();
}

}  // namespace

torch::Tensor composed_bias_leaky_relu(const torch::Tensor& z, const torch::Tensor& bias, double slope) {
  torch::Tensor sum = z + bias.to(z.scalar_type()).reshape({1, -1, 1, 1});
  return torch::leaky_relu_(sum, slope);
}

torch::Tensor bias_leaky_relu(const torch::Tensor& z, const torch::Tensor& bias, double slope) {
  return kernels_take(z, bias) ? fused_bias_leaky_relu(z, bias, slope) : composed_bias_leaky_relu(z, bias, slope);
}

bool resolve_fused_kernels(const std::optional<bool>& option, const torch::Device& device, bool channels_last) {
  if (!option.value_or(false)) return false;  // auto: off until measured on a GPU
  const std::string why = fused_kernels_unavailable(device);
  if (!why.empty()) throw UsageError("--fused-kernels on: " + why);
  if (!channels_last)
    throw UsageError("--fused-kernels on: the kernels work on NHWC activations; add --channels-last on");
  return true;
}

std::string describe_fused_kernels(const std::optional<bool>& option, bool on) {
  return std::string(on ? "the discriminators' first bias and LeakyReLU as one CUDA kernel each way"
                        : "none, ATen's operations") +
         " (--fused-kernels " + on_off_auto_name(option) + ")";
}

}  // namespace pix2pix::dist
