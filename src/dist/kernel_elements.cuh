// What the fused kernels share (bias_leaky_relu_kernels.cu, batch_norm_activation_kernels.cu): the
// element types' conversions, rounded as LibTorch rounds; 16-byte packs; the LeakyReLU gradient;
// the split of a tensor's rows among a backward's blocks. Device code: include only in .cu files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "pix2pix/dist/bias_leaky_relu_kernels.hpp"

namespace pix2pix::dist::kernels {

constexpr int kThreads = 256;              // a block's threads, in every pack kernel
constexpr int kVector = 8;                 // elements of 16 bits a thread loads at once (16 bytes)
constexpr std::int64_t kMaxBlocks = 1024;  // a backward's blocks: its partial sums' rows

// Elements a pack of 16 bytes holds.
template <typename T>
constexpr int pack_elements() {
  return sizeof(T) == 2 ? kVector : kVector / 2;
}

__device__ inline float to_float(float v) {
  return v;
}
__device__ inline float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ inline float to_float(__half v) {
  return __half2float(v);
}

// Rounded to nearest even, as LibTorch's BFloat16 and Half constructors round.
template <typename T>
__device__ inline T from_float(float v);
template <>
__device__ inline float from_float<float>(float v) {
  return v;
}
template <>
__device__ inline __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ inline __half from_float<__half>(float v) {
  return __float2half_rn(v);
}

// ATen's leaky_relu on a value already rounded to T (`pre`, as float): itself where positive, slope
// times it rounded to T elsewhere.
template <typename T>
__device__ inline T leaky_relu(float pre, float slope) {
  return pre > 0.0f ? from_float<T>(pre) : from_float<T>(pre * slope);
}

// ATen's leaky_relu_backward: the gradient where the activation's result is positive, slope times
// it (rounded to T) elsewhere.
template <typename T>
__device__ inline T leaky_relu_gradient(T grad_y, bool positive, float slope) {
  const float g = to_float(grad_y);
  return positive ? from_float<T>(g) : from_float<T>(g * slope);
}

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// The row range of block b of `blocks` over `rows`.
__device__ inline void block_rows(std::int64_t rows, std::int64_t blocks, std::int64_t b, std::int64_t& begin,
                                  std::int64_t& end) {
  const std::int64_t per_block = (rows + blocks - 1) / blocks;
  begin = b * per_block;
  end = begin + per_block < rows ? begin + per_block : rows;
}

// A backward's blocks over `rows`: 64 rows a block at least, kMaxBlocks at most.
inline std::int64_t backward_blocks(std::int64_t rows) {
  return std::max<std::int64_t>(1, std::min<std::int64_t>(kMaxBlocks, (rows + 63) / 64));
}

inline bool aligned(const void* p, std::size_t bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % bytes == 0;
}

// A pack kernel's threads over rows of `channels`: kThreads / groups rows of `groups` packs at a time
// (groups = channels / V, packs_fit), each thread keeping the same pack of a row (its V channels)
// in every row it takes.
struct PackLayout {
  int groups, g, rows_per_pass;
  __device__ explicit PackLayout(std::int64_t channels, int V)
      : groups(static_cast<int>(channels / V)),
        g(static_cast<int>(threadIdx.x) % groups),
        rows_per_pass(kThreads / groups) {}
  __device__ std::int64_t first_row(std::int64_t begin) const { return begin + threadIdx.x / groups; }
};

// Whether the pack kernels take `channels` of T: whole packs a row, and a block's threads a whole
// number of rows (each thread keeps the same channels, so its sums are one channel's each).
template <typename T>
inline bool packs_fit(std::int64_t channels) {
  constexpr int V = pack_elements<T>();
  const std::int64_t groups = channels / V;
  return channels % V == 0 && groups <= kThreads && kThreads % groups == 0;
}

// Whether rows of `channels` elements, `stride` apart, at these addresses take the pack kernels:
// whole packs a row and a block's threads a whole number of rows (packs_fit), a stride of whole
// packs, and every address aligned to a pack.
template <typename T>
inline bool packs_take(std::int64_t channels, std::int64_t stride, std::initializer_list<const void*> memory) {
  constexpr int V = pack_elements<T>();
  if (!packs_fit<T>(channels) || stride % V != 0) return false;
  for (const void* p : memory)
    if (!aligned(p, sizeof(T) * V)) return false;
  return true;
}

// The blocks of an element-wise kernel over n elements, a grid-stride loop beyond 2^20.
inline unsigned element_blocks(std::int64_t n) {
  return static_cast<unsigned>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 1 << 20));
}

// The blocks of a PackLayout kernel over `rows` (packs_fit), a grid-stride loop beyond 65535.
template <typename T>
inline unsigned pack_blocks(std::int64_t rows, std::int64_t channels) {
  const std::int64_t rows_per_pass = kThreads / (channels / pack_elements<T>());
  return static_cast<unsigned>(std::min<std::int64_t>((rows + rows_per_pass - 1) / rows_per_pass, 65535));
}

// f(T{}) for the element type `type` names (float, __nv_bfloat16, __half): each public entry's
// dispatch to its template, e.g. with_element_type(type, [&](auto t) { return forward<decltype(t)>(...); }).
template <typename F>
cudaError_t with_element_type(ElementType type, F&& f) {
  switch (type) {
    case ElementType::float32:
      return f(float{});
    case ElementType::bfloat16:
      return f(__nv_bfloat16{});
    case ElementType::float16:
      return f(__half{});
  }
  return cudaErrorInvalidValue;
}

}  // namespace pix2pix::dist::kernels
