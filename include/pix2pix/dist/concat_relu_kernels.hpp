// The CUDA kernels of ReLU into and out of column ranges of NHWC rows: the U-Net's skip
// concatenation and the ReLU after it in one pass each way (See Note [fused concatenation and ReLU],
// dist/fused_activation.hpp), and the skip's half where batch norm's kernels write the other
// (See Note [fused concatenation, batch norm and ReLU]). Raw pointers and the CUDA
// runtime's types only, as bias_leaky_relu_kernels.hpp. Include only in dist/ GPU sources.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "pix2pix/dist/bias_leaky_relu_kernels.hpp"

namespace pix2pix::dist::kernels {

// out = ReLU(in) (ATen's: NaN stays) for `rows` rows of `channels` elements; out's rows are
// `out_stride` elements apart, so that out may be the first `channels` columns of a wider tensor.
cudaError_t relu_columns_forward(ElementType type, const void* in, void* out, std::int64_t out_stride,
                                 std::int64_t rows, std::int64_t channels, cudaStream_t stream);

// grad_in = grad_out where out > 0, else 0 (ATen's threshold_backward on the result), grad_out's
// and out's rows `out_stride` apart, grad_in's `channels`.
cudaError_t relu_columns_backward(ElementType type, const void* grad_out, const void* out, std::int64_t out_stride,
                                  void* grad_in, std::int64_t rows, std::int64_t channels, cudaStream_t stream);

// out = ReLU(cat(skip, inner) on channels) over `rows` rows (NHWC: N·H·W) of skip_channels +
// inner_channels elements; skip and inner rows of their own channels. ReLU as ATen's: NaN stays.
cudaError_t concat_relu_forward(ElementType type, const void* skip, const void* inner, void* out, std::int64_t rows,
                                std::int64_t skip_channels, std::int64_t inner_channels, cudaStream_t stream);

// grad_skip and grad_inner: grad_out where out > 0, else 0 (ATen's threshold_backward on the
// result), each written whole in its own NHWC tensor.
cudaError_t concat_relu_backward(ElementType type, const void* grad_out, const void* out, void* grad_skip,
                                 void* grad_inner, std::int64_t rows, std::int64_t skip_channels,
                                 std::int64_t inner_channels, cudaStream_t stream);

}  // namespace pix2pix::dist::kernels
