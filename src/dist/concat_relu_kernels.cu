// ReLU into and out of column ranges of NHWC rows: the U-Net's skip concatenation and the ReLU
// after it in one pass each way. See Note [fused concatenation and ReLU] (dist/fused_activation.hpp).
#include "kernel_elements.cuh"
#include "pix2pix/dist/concat_relu_kernels.hpp"

namespace pix2pix::dist::kernels {
namespace {

// ATen's relu (clamp_min(0)): v where v > 0 or NaN, else 0.
template <typename T>
__device__ inline T relu(T v) {
  return to_float(v) <= 0.0f ? from_float<T>(0.0f) : v;
}

// ATen's threshold_backward(grad, result, 0): 0 where the result is <= 0, else the gradient.
template <typename T>
__device__ inline T relu_gradient(T grad, T out) {
  return to_float(out) <= 0.0f ? from_float<T>(0.0f) : grad;
}

// Packs of V (PackLayout over `channels`): in's rows are `channels` apart, out's `out_stride`.
template <typename T, int V>
__global__ void forward_packs_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t out_stride,
                                     std::int64_t rows, std::int64_t channels) {
  const PackLayout layout(channels, V);
  const std::int64_t out_packs = out_stride / V;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * layout.rows_per_pass;
  for (std::int64_t r = layout.first_row(static_cast<std::int64_t>(blockIdx.x) * layout.rows_per_pass); r < rows;
       r += step) {
    const Pack<T, V> v = reinterpret_cast<const Pack<T, V>*>(in)[r * layout.groups + layout.g];
    Pack<T, V> o;
#pragma unroll
    for (int k = 0; k < V; ++k) o.v[k] = relu(v.v[k]);
    reinterpret_cast<Pack<T, V>*>(out)[r * out_packs + layout.g] = o;
  }
}

template <typename T, int V>
__global__ void backward_packs_kernel(const T* __restrict__ grad_out, const T* __restrict__ out,
                                      std::int64_t out_stride, T* __restrict__ grad_in, std::int64_t rows,
                                      std::int64_t channels) {
  const PackLayout layout(channels, V);
  const std::int64_t out_packs = out_stride / V;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * layout.rows_per_pass;
  for (std::int64_t r = layout.first_row(static_cast<std::int64_t>(blockIdx.x) * layout.rows_per_pass); r < rows;
       r += step) {
    const std::int64_t i = r * out_packs + layout.g;
    const Pack<T, V> g = reinterpret_cast<const Pack<T, V>*>(grad_out)[i];
    const Pack<T, V> o = reinterpret_cast<const Pack<T, V>*>(out)[i];
    Pack<T, V> d;
#pragma unroll
    for (int k = 0; k < V; ++k) d.v[k] = relu_gradient(g.v[k], o.v[k]);
    reinterpret_cast<Pack<T, V>*>(grad_in)[r * layout.groups + layout.g] = d;
  }
}

// Any channel count: one element a thread.
template <typename T>
__global__ void forward_elements_kernel(const T* __restrict__ in, T* __restrict__ out, std::int64_t out_stride,
                                        std::int64_t n, std::int64_t channels) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i / channels * out_stride + i % channels] = relu(in[i]);
}

template <typename T>
__global__ void backward_elements_kernel(const T* __restrict__ grad_out, const T* __restrict__ out,
                                         std::int64_t out_stride, T* __restrict__ grad_in, std::int64_t n,
                                         std::int64_t channels) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::int64_t o = i / channels * out_stride + i % channels;
    grad_in[i] = relu_gradient(grad_out[o], out[o]);
  }
}

template <typename T>
cudaError_t forward(const void* in, void* out, std::int64_t out_stride, std::int64_t rows, std::int64_t channels,
                    cudaStream_t stream) {
  constexpr int V = pack_elements<T>();
  const auto* i = static_cast<const T*>(in);
  auto* o = static_cast<T*>(out);
  if (packs_take<T>(channels, out_stride, {in, out}))
    forward_packs_kernel<T, V>
        <<<pack_blocks<T>(rows, channels), kThreads, 0, stream>>>(i, o, out_stride, rows, channels);
  else
    forward_elements_kernel<T>
        <<<element_blocks(rows * channels), kThreads, 0, stream>>>(i, o, out_stride, rows * channels, channels);
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward(const void* grad_out, const void* out, std::int64_t out_stride, void* grad_in, std::int64_t rows,
                     std::int64_t channels, cudaStream_t stream) {
  constexpr int V = pack_elements<T>();
  const auto *g = static_cast<const T*>(grad_out), *o = static_cast<const T*>(out);
  auto* gi = static_cast<T*>(grad_in);
  if (packs_take<T>(channels, out_stride, {grad_out, out, grad_in}))
    backward_packs_kernel<T, V>
        <<<pack_blocks<T>(rows, channels), kThreads, 0, stream>>>(g, o, out_stride, gi, rows, channels);
  else
    backward_elements_kernel<T>
        <<<element_blocks(rows * channels), kThreads, 0, stream>>>(g, o, out_stride, gi, rows * channels, channels);
  return cudaGetLastError();
}

}  // namespace

cudaError_t relu_columns_forward(ElementType type, const void* in, void* out, std::int64_t out_stride,
                                 std::int64_t rows, std::int64_t channels, cudaStream_t stream) {
  if (rows <= 0 || channels <= 0) return cudaSuccess;
  if (out_stride < channels) return cudaErrorInvalidValue;
  return with_element_type(type,
                           [&](auto t) { return forward<decltype(t)>(in, out, out_stride, rows, channels, stream); });
}

cudaError_t relu_columns_backward(ElementType type, const void* grad_out, const void* out, std::int64_t out_stride,
                                  void* grad_in, std::int64_t rows, std::int64_t channels, cudaStream_t stream) {
  if (rows <= 0 || channels <= 0) return cudaSuccess;
  if (out_stride < channels) return cudaErrorInvalidValue;
  return with_element_type(
      type, [&](auto t) { return backward<decltype(t)>(grad_out, out, out_stride, grad_in, rows, channels, stream); });
}

// The two halves, each ReLU over its columns of out's rows.
cudaError_t concat_relu_forward(ElementType type, const void* skip, const void* inner, void* out, std::int64_t rows,
                                std::int64_t skip_channels, std::int64_t inner_channels, cudaStream_t stream) {
  const std::int64_t stride = skip_channels + inner_channels;
  return with_element_type(type, [&](auto t) {
    using T = decltype(t);
    const cudaError_t skip_half = relu_columns_forward(type, skip, out, stride, rows, skip_channels, stream);
    if (skip_half != cudaSuccess) return skip_half;
    return relu_columns_forward(type, inner, static_cast<T*>(out) + skip_channels, stride, rows, inner_channels,
                                stream);
  });
}

cudaError_t concat_relu_backward(ElementType type, const void* grad_out, const void* out, void* grad_skip,
                                 void* grad_inner, std::int64_t rows, std::int64_t skip_channels,
                                 std::int64_t inner_channels, cudaStream_t stream) {
  const std::int64_t stride = skip_channels + inner_channels;
  return with_element_type(type, [&](auto t) {
    using T = decltype(t);
    const cudaError_t skip_half =
        relu_columns_backward(type, grad_out, out, stride, grad_skip, rows, skip_channels, stream);
    if (skip_half != cudaSuccess) return skip_half;
    return relu_columns_backward(type, static_cast<const T*>(grad_out) + skip_channels,
                                 static_cast<const T*>(out) + skip_channels, stride, grad_inner, rows, inner_channels,
                                 stream);
  });
}

}  // namespace pix2pix::dist::kernels
