// The U-Net's skip concatenation and the ReLU after it in one pass each way, over NHWC memory.
// See Note [fused concatenation and ReLU] (dist/fused_activation.hpp).
#include <initializer_list>

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

// Where a thread's pack of an output row lives in skip or inner: the tensor, its packs a row, and
// the pack's place in its row.
template <typename T, int V>
struct Part {
  T* base;
  int packs_per_row, offset;
};

template <typename T, int V>
__device__ inline Part<T, V> part_of(int g, int skip_packs, int groups, T* skip, T* inner) {
  if (g < skip_packs) return {skip, skip_packs, g};
  return {inner, groups - skip_packs, g - skip_packs};
}

// Packs of V (PackLayout over the output's channels; skip's and inner's channels multiples of V).
template <typename T, int V>
__global__ void forward_packs_kernel(const T* __restrict__ skip, const T* __restrict__ inner, T* __restrict__ out,
                                     std::int64_t rows, std::int64_t skip_channels, std::int64_t channels) {
  const PackLayout layout(channels, V);
  const auto from = part_of<const T, V>(layout.g, static_cast<int>(skip_channels / V), layout.groups, skip, inner);
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * layout.rows_per_pass;
  for (std::int64_t r = layout.first_row(static_cast<std::int64_t>(blockIdx.x) * layout.rows_per_pass); r < rows;
       r += step) {
    const Pack<T, V> in = reinterpret_cast<const Pack<T, V>*>(from.base)[r * from.packs_per_row + from.offset];
    Pack<T, V> o;
#pragma unroll
    for (int k = 0; k < V; ++k) o.v[k] = relu(in.v[k]);
    reinterpret_cast<Pack<T, V>*>(out)[r * layout.groups + layout.g] = o;
  }
}

template <typename T, int V>
__global__ void backward_packs_kernel(const T* __restrict__ grad_out, const T* __restrict__ out,
                                      T* __restrict__ grad_skip, T* __restrict__ grad_inner, std::int64_t rows,
                                      std::int64_t skip_channels, std::int64_t channels) {
  const PackLayout layout(channels, V);
  const auto to = part_of<T, V>(layout.g, static_cast<int>(skip_channels / V), layout.groups, grad_skip, grad_inner);
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * layout.rows_per_pass;
  for (std::int64_t r = layout.first_row(static_cast<std::int64_t>(blockIdx.x) * layout.rows_per_pass); r < rows;
       r += step) {
    const std::int64_t i = r * layout.groups + layout.g;
    const Pack<T, V> g = reinterpret_cast<const Pack<T, V>*>(grad_out)[i];
    const Pack<T, V> o = reinterpret_cast<const Pack<T, V>*>(out)[i];
    Pack<T, V> d;
#pragma unroll
    for (int k = 0; k < V; ++k) d.v[k] = relu_gradient(g.v[k], o.v[k]);
    reinterpret_cast<Pack<T, V>*>(to.base)[r * to.packs_per_row + to.offset] = d;
  }
}

// Any channel counts: one element a thread.
template <typename T>
__global__ void forward_elements_kernel(const T* __restrict__ skip, const T* __restrict__ inner, T* __restrict__ out,
                                        std::int64_t n, std::int64_t skip_channels, std::int64_t channels) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t inner_channels = channels - skip_channels;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::int64_t r = i / channels, c = i % channels;
    out[i] = relu(c < skip_channels ? skip[r * skip_channels + c] : inner[r * inner_channels + c - skip_channels]);
  }
}

template <typename T>
__global__ void backward_elements_kernel(const T* __restrict__ grad_out, const T* __restrict__ out,
                                         T* __restrict__ grad_skip, T* __restrict__ grad_inner, std::int64_t n,
                                         std::int64_t skip_channels, std::int64_t channels) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t inner_channels = channels - skip_channels;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::int64_t r = i / channels, c = i % channels;
    const T d = relu_gradient(grad_out[i], out[i]);
    if (c < skip_channels)
      grad_skip[r * skip_channels + c] = d;
    else
      grad_inner[r * inner_channels + c - skip_channels] = d;
  }
}

// The pack kernels take skip and inner channels that are whole packs, rows of packs that divide a
// block, and memory aligned to a pack.
template <typename T>
bool packs_take(std::int64_t skip_channels, std::int64_t inner_channels, std::initializer_list<const void*> memory) {
  constexpr int V = pack_elements<T>();
  bool take = skip_channels % V == 0 && inner_channels % V == 0 && packs_fit<T>(skip_channels + inner_channels);
  for (const void* p : memory) take = take && aligned(p, sizeof(T) * V);
  return take;
}

template <typename T>
cudaError_t forward(const void* skip, const void* inner, void* out, std::int64_t rows, std::int64_t skip_channels,
                    std::int64_t inner_channels, cudaStream_t stream) {
  constexpr int V = pack_elements<T>();
  const std::int64_t channels = skip_channels + inner_channels;
  const auto *s = static_cast<const T*>(skip), *i = static_cast<const T*>(inner);
  auto* o = static_cast<T*>(out);
  if (packs_take<T>(skip_channels, inner_channels, {skip, inner, out}))
    forward_packs_kernel<T, V>
        <<<pack_blocks<T>(rows, channels), kThreads, 0, stream>>>(s, i, o, rows, skip_channels, channels);
  else
    forward_elements_kernel<T>
        <<<element_blocks(rows * channels), kThreads, 0, stream>>>(s, i, o, rows * channels, skip_channels, channels);
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward(const void* grad_out, const void* out, void* grad_skip, void* grad_inner, std::int64_t rows,
                     std::int64_t skip_channels, std::int64_t inner_channels, cudaStream_t stream) {
  constexpr int V = pack_elements<T>();
  const std::int64_t channels = skip_channels + inner_channels;
  const auto *g = static_cast<const T*>(grad_out), *o = static_cast<const T*>(out);
  auto *gs = static_cast<T*>(grad_skip), *gi = static_cast<T*>(grad_inner);
  if (packs_take<T>(skip_channels, inner_channels, {grad_out, out, grad_skip, grad_inner}))
    backward_packs_kernel<T, V>
        <<<pack_blocks<T>(rows, channels), kThreads, 0, stream>>>(g, o, gs, gi, rows, skip_channels, channels);
  else
    backward_elements_kernel<T><<<element_blocks(rows * channels), kThreads, 0, stream>>>(g, o, gs, gi, rows * channels,
                                                                                          skip_channels, channels);
  return cudaGetLastError();
}

}  // namespace

cudaError_t concat_relu_forward(ElementType type, const void* skip, const void* inner, void* out, std::int64_t rows,
                                std::int64_t skip_channels, std::int64_t inner_channels, cudaStream_t stream) {
  if (rows <= 0 || skip_channels + inner_channels <= 0) return cudaSuccess;
  return with_element_type(type, [&](auto t) {
    return forward<decltype(t)>(skip, inner, out, rows, skip_channels, inner_channels, stream);
  });
}

cudaError_t concat_relu_backward(ElementType type, const void* grad_out, const void* out, void* grad_skip,
                                 void* grad_inner, std::int64_t rows, std::int64_t skip_channels,
                                 std::int64_t inner_channels, cudaStream_t stream) {
  if (rows <= 0 || skip_channels + inner_channels <= 0) return cudaSuccess;
  return with_element_type(type, [&](auto t) {
    return backward<decltype(t)>(grad_out, out, grad_skip, grad_inner, rows, skip_channels, inner_channels, stream);
  });
}

}  // namespace pix2pix::dist::kernels
