// A build without the fused kernels (no LibTorch CUDA half or no CUDA compiler):
// See Note [fused bias and LeakyReLU] (dist/fused_activation.hpp).
#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/fused_activation.hpp"

namespace pix2pix::dist {

std::string fused_kernels_unavailable(const torch::Device& device) {
  if (!device.is_cuda()) return "the fused kernels are CUDA kernels, and this rank computes on " + device.str();
  return "this build has no fused kernels (it needs a LibTorch built with CUDA and a CUDA compiler, nvcc)";
}

torch::Tensor fused_bias_leaky_relu(const torch::Tensor& z, const torch::Tensor&, double) {
  throw Error("bias and LeakyReLU in one kernel: " + fused_kernels_unavailable(z.device()));
}

}  // namespace pix2pix::dist
