// A build without the fused kernels (no LibTorch CUDA half or no CUDA compiler).
// See Note [fused bias and LeakyReLU], See Note [fused batch norm and LeakyReLU] and
// See Note [fused concatenation and ReLU] and See Note [fused concatenation, batch norm and ReLU]
// (dist/fused_activation.hpp).
// fused_kernels_unavailable gives this build's reason for every CUDA device, so nothing calls the
// functions below; they refuse by name all the same.
#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/fused_activation.hpp"

namespace pix2pix::dist::detail {

torch::DeviceType fused_kernels_device() {
  return torch::kCUDA;
}

std::string fused_kernels_build_reason() {
  return "this build has no fused kernels (it needs a LibTorch built with CUDA and a CUDA compiler, nvcc)";
}

torch::Tensor apply_bias_leaky_relu(const torch::Tensor&, const torch::Tensor&, double) {
  throw Error("bias and LeakyReLU in one kernel: " + fused_kernels_build_reason());
}

torch::Tensor apply_batch_norm_leaky_relu(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                          torch::Tensor, torch::Tensor, double, double, double) {
  throw Error("batch norm and LeakyReLU in fused kernels: " + fused_kernels_build_reason());
}

torch::Tensor apply_batch_norm_over_ranks_leaky_relu(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                                     torch::Tensor, torch::Tensor, double, double, const SumOverRanks&,
                                                     double) {
  throw Error("batch norm over ranks and LeakyReLU in fused kernels: " + fused_kernels_build_reason());
}

torch::Tensor apply_concat_relu(const torch::Tensor&, const torch::Tensor&) {
  throw Error("concatenation and ReLU in one kernel: " + fused_kernels_build_reason());
}

torch::Tensor apply_concat_batch_norm_relu(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                           const torch::Tensor&, torch::Tensor, torch::Tensor, double, double) {
  throw Error("concatenation, batch norm and ReLU in fused kernels: " + fused_kernels_build_reason());
}

torch::Tensor apply_concat_batch_norm_over_ranks_relu(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                                      const torch::Tensor&, torch::Tensor, torch::Tensor, double,
                                                      double, const SumOverRanks&) {
  throw Error("concatenation, batch norm over ranks and ReLU in fused kernels: " + fused_kernels_build_reason());
}

}  // namespace pix2pix::dist::detail
