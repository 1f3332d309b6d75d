// The CUDA kernels of a convolution's bias added and LeakyReLU applied in one pass each way
// (See Note [fused bias and LeakyReLU], dist/fused_activation.hpp).
// Raw pointers and the CUDA runtime's types only: nvcc compiles the kernels without LibTorch's
// headers, and dist/fused_activation_cuda.cpp hands them tensors' memory. Include only in dist/
// GPU sources.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace pix2pix::dist::kernels {

enum class ElementType { float32, bfloat16, float16 };

// y = LeakyReLU(slope)(z + bias) over `rows` x `channels` elements stored row-major (an NHWC
// tensor: rows = N·H·W), bias float32 [channels]. z + bias is rounded to the element type before
// the activation, as ATen's two kernels round between them. z and y may be the same memory.
cudaError_t bias_leaky_relu_forward(ElementType type, const void* z, const float* bias, void* y, std::int64_t rows,
                                    std::int64_t channels, float slope, cudaStream_t stream);

// How many float32s the backward's per-block sums take: its `partial_sums` workspace.
std::int64_t bias_leaky_relu_backward_workspace(std::int64_t rows, std::int64_t channels);

// grad_z = grad_y · (y > 0 ? 1 : slope) and grad_bias[c] = Σ over rows of grad_z[., c], from the
// forward's y. grad_bias is float32, the sum of the element type's values rounded to that type (as
// ATen's sum of a tensor of that type is); summed in a fixed order, so the same inputs give the
// same bits.
cudaError_t bias_leaky_relu_backward(ElementType type, const void* grad_y, const void* y, void* grad_z,
                                     float* partial_sums, float* grad_bias, std::int64_t rows, std::int64_t channels,
                                     float slope, cudaStream_t stream);

}  // namespace pix2pix::dist::kernels
