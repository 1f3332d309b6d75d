// The CUDA kernels of batch norm (training mode) and the LeakyReLU after it in one pass each way
// (See Note [fused batch norm and LeakyReLU], dist/fused_activation.hpp). Raw pointers and the CUDA
// runtime's types only, as bias_leaky_relu_kernels.hpp. Include only in dist/ GPU sources.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "pix2pix/dist/bias_leaky_relu_kernels.hpp"

namespace pix2pix::dist::kernels {

// The running statistics' update of ATen's batch norm from this batch's mean and 1/sqrt(var + eps)
// (at::batch_norm_stats's): running_mean = (1 - momentum)·running_mean + momentum·mean and
// running_var the same with the unbiased variance var·count/(count - 1), var = 1/invstd² - eps (as
// at::batch_norm_gather_stats_with_counts recovers it). All float32 [channels].
cudaError_t batch_norm_update_running(const float* mean, const float* invstd, float* running_mean, float* running_var,
                                      std::int64_t channels, std::int64_t count, float momentum, float eps,
                                      cudaStream_t stream);

// y = LeakyReLU(slope)(weight·(x - mean)·invstd + bias) over `rows` x `channels` elements stored
// row-major (NHWC: rows = N·H·W); per-channel float32 parameters. The normalised value is rounded to
// the element type before the activation, as ATen's two kernels round between them.
cudaError_t batch_norm_leaky_relu_forward(ElementType type, const void* x, const float* mean, const float* invstd,
                                          const float* weight, const float* bias, void* y, std::int64_t rows,
                                          std::int64_t channels, float slope, cudaStream_t stream);

// How many float32s the backward's per-block sums and its two per-channel sums take: its workspace.
std::int64_t batch_norm_leaky_relu_backward_workspace(std::int64_t rows, std::int64_t channels);

// From the forward's inputs (the activation's sign recomputed from x, as the forward computed it):
// g = grad_y·(y > 0 ? 1 : slope) rounded to the element type, as ATen's leaky_relu_backward; then
// ATen's batch norm backward of g: grad_bias = Σ g, grad_weight = Σ g·(x - mean)·invstd (float32,
// summed in a fixed order: the same inputs give the same bits) and grad_x.
cudaError_t batch_norm_leaky_relu_backward(ElementType type, const void* grad_y, const void* x, const float* mean,
                                           const float* invstd, const float* weight, const float* bias, void* grad_x,
                                           float* workspace, float* grad_weight, float* grad_bias, std::int64_t rows,
                                           std::int64_t channels, float slope, cudaStream_t stream);

}  // namespace pix2pix::dist::kernels
