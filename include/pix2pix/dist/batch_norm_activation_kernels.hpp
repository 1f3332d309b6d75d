// The CUDA kernels of batch norm (training mode) and the activation after it in one pass each way:
// LeakyReLU (See Note [fused batch norm and LeakyReLU]) or ReLU into the U-Net's concatenation
// (See Note [fused concatenation, batch norm and ReLU]; dist/fused_activation.hpp). Raw pointers
// and the CUDA runtime's types only, as bias_leaky_relu_kernels.hpp. Include only in dist/ GPU
// sources.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "pix2pix/dist/bias_leaky_relu_kernels.hpp"

namespace pix2pix::dist::kernels {

// The activation after batch norm: ATen's leaky_relu with `slope`, or ATen's relu (0 where the
// value is <= 0; NaN stays), which differs from a slope of 0 in the sign of its zeros.
struct Activation {
  enum class Kind { leaky_relu, relu };
  Kind kind;
  float slope;  // leaky_relu's
};
inline Activation leaky_relu_activation(float slope) {
  return {Activation::Kind::leaky_relu, slope};
}
inline Activation relu_activation() {
  return {Activation::Kind::relu, 0.0f};
}

// The running statistics' update of ATen's batch norm from this batch's mean and 1/sqrt(var + eps)
// (at::batch_norm_stats's): running_mean = (1 - momentum)·running_mean + momentum·mean and
// running_var the same with the unbiased variance var·count/(count - 1), var = 1/invstd² - eps (as
// at::batch_norm_gather_stats_with_counts recovers it). All float32 [channels].
cudaError_t batch_norm_update_running(const float* mean, const float* invstd, float* running_mean, float* running_var,
                                      std::int64_t channels, std::int64_t count, float momentum, float eps,
                                      cudaStream_t stream);

// y = activation(weight·(x - mean)·invstd + bias) over `rows` x `channels` elements stored
// row-major (NHWC: rows = N·H·W); per-channel float32 parameters. The normalised value is rounded to
// the element type before the activation, as ATen's two kernels round between them. y's rows are
// `y_stride` elements apart (`channels`, or the wider rows of a tensor that y is the first
// `channels` columns of: the U-Net's concatenation); x's are `channels` apart.
cudaError_t batch_norm_activation_forward(ElementType type, const void* x, const float* mean, const float* invstd,
                                          const float* weight, const float* bias, void* y, std::int64_t y_stride,
                                          std::int64_t rows, std::int64_t channels, Activation activation,
                                          cudaStream_t stream);

// Backward in two passes, so that the sums of the first can be summed over ranks before the second
// (See Note [synchronised batch norm on a GPU]). The first, from the forward's inputs (the
// activation's sign recomputed from x, as the forward computed it): g = grad_y where y > 0, else
// grad_y·slope (LeakyReLU) or 0 (ReLU), rounded to the element type as ATen's leaky_relu_backward
// and threshold_backward write it; per channel Σ g into sums[0, C) and Σ g·(x - mean) into
// sums[C, 2C) (float32, summed in a fixed order: the same inputs give the same bits), and from them
// ATen's batch norm gradients grad_bias = Σ g and grad_weight = Σ g·(x - mean)·invstd. grad_y's
// rows are `grad_y_stride` elements apart, as y's in forward. `workspace`: the per-block sums, as
// many float32s as batch_norm_activation_backward_workspace says.
std::int64_t batch_norm_activation_backward_workspace(std::int64_t rows, std::int64_t channels);
cudaError_t batch_norm_activation_backward_sums(ElementType type, const void* grad_y, std::int64_t grad_y_stride,
                                                const void* x, const float* mean, const float* invstd,
                                                const float* weight, const float* bias, float* workspace, float* sums,
                                                float* grad_weight, float* grad_bias, std::int64_t rows,
                                                std::int64_t channels, Activation activation, cudaStream_t stream);

// The second: the input's gradient (rows of `channels`) as ATen's batch_norm_backward_elemt writes
// it from the sums (this batch's, or every rank's) and `norm`, 1 / the count of values they sum over.
cudaError_t batch_norm_activation_backward_input(ElementType type, const void* grad_y, std::int64_t grad_y_stride,
                                                 const void* x, const float* mean, const float* invstd,
                                                 const float* weight, const float* bias, const float* sums,
                                                 void* grad_x, std::int64_t rows, std::int64_t channels, float norm,
                                                 Activation activation, cudaStream_t stream);

}  // namespace pix2pix::dist::kernels
