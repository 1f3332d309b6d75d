// A convolution's bias and LeakyReLU in one pass each way, over NHWC memory (rows x channels).
// See Note [fused bias and LeakyReLU] (dist/fused_activation.hpp).
#include "kernel_elements.cuh"
#include "pix2pix/dist/bias_leaky_relu_kernels.hpp"

namespace pix2pix::dist::kernels {
namespace {

// ATen's add (in the element type's opmath, float) then its leaky_relu, each rounded to T.
template <typename T>
__device__ inline T bias_leaky_relu(T z, float bias_t, float slope) {
  return leaky_relu<T>(to_float(from_float<T>(to_float(z) + bias_t)), slope);
}

// V elements a thread at a time; channels % V == 0, so a pack's elements are channels c..c+V-1.
template <typename T, int V>
__global__ void forward_kernel(const T* __restrict__ z, const float* __restrict__ bias, T* __restrict__ y,
                               std::int64_t packs, std::int64_t channels, float slope) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < packs; i += stride) {
    const std::int64_t c0 = (i * V) % channels;
    Pack<T, V> in = reinterpret_cast<const Pack<T, V>*>(z)[i];
    Pack<T, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) out.v[k] = bias_leaky_relu(in.v[k], to_float(from_float<T>(bias[c0 + k])), slope);
    reinterpret_cast<Pack<T, V>*>(y)[i] = out;
  }
}

// The vectorised backward: kThreads / groups rows at a time, a thread keeping the same V channels
// (group g of channels / V; kThreads % groups == 0). Writes grad_z and this block's sums per channel.
template <typename T, int V>
__global__ void backward_packs_kernel(const T* __restrict__ grad_y, const T* __restrict__ y, T* __restrict__ grad_z,
                                      float* __restrict__ partial_sums, std::int64_t rows, std::int64_t channels,
                                      float slope) {
  __shared__ float sums[kThreads][V];
  const int groups = static_cast<int>(channels / V);
  const int g = threadIdx.x % groups;
  const int rows_per_pass = kThreads / groups;
  std::int64_t begin = 0, end = 0;
  block_rows(rows, gridDim.x, blockIdx.x, begin, end);
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = 0.0f;
  for (std::int64_t r = begin + threadIdx.x / groups; r < end; r += rows_per_pass) {
    const std::int64_t i = r * groups + g;
    const Pack<T, V> gy = reinterpret_cast<const Pack<T, V>*>(grad_y)[i];
    const Pack<T, V> yy = reinterpret_cast<const Pack<T, V>*>(y)[i];
    Pack<T, V> gz;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      gz.v[k] = leaky_relu_gradient(gy.v[k], to_float(yy.v[k]) > 0.0f, slope);
      acc[k] += to_float(gz.v[k]);
    }
    reinterpret_cast<Pack<T, V>*>(grad_z)[i] = gz;
  }
#pragma unroll
  for (int k = 0; k < V; ++k) sums[threadIdx.x][k] = acc[k];
  __syncthreads();
  if (threadIdx.x < groups) {
    for (int k = 0; k < V; ++k) {
      float total = 0.0f;
      for (int j = 0; j < rows_per_pass; ++j) total += sums[j * groups + threadIdx.x][k];
      partial_sums[blockIdx.x * channels + threadIdx.x * V + k] = total;
    }
  }
}

// Any channel count: 32 channels (threadIdx.x) by 8 rows (threadIdx.y) at a time; blockIdx.y picks
// the 32 channels.
template <typename T>
__global__ void backward_elements_kernel(const T* __restrict__ grad_y, const T* __restrict__ y, T* __restrict__ grad_z,
                                         float* __restrict__ partial_sums, std::int64_t rows, std::int64_t channels,
                                         float slope) {
  __shared__ float sums[8][33];
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.y) * 32 + threadIdx.x;
  std::int64_t begin = 0, end = 0;
  block_rows(rows, gridDim.x, blockIdx.x, begin, end);
  float acc = 0.0f;
  if (c < channels) {
    for (std::int64_t r = begin + threadIdx.y; r < end; r += 8) {
      const std::int64_t i = r * channels + c;
      const T gz = leaky_relu_gradient(grad_y[i], to_float(y[i]) > 0.0f, slope);
      grad_z[i] = gz;
      acc += to_float(gz);
    }
  }
  sums[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    float total = 0.0f;
    for (int j = 0; j < 8; ++j) total += sums[j][threadIdx.x];
    partial_sums[blockIdx.x * channels + c] = total;
  }
}

// grad_bias[c]: the blocks' sums in block order, rounded to T.
template <typename T>
__global__ void finish_kernel(const float* __restrict__ partial_sums, float* __restrict__ grad_bias,
                              std::int64_t blocks, std::int64_t channels) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  float total = 0.0f;
  for (std::int64_t b = 0; b < blocks; ++b) total += partial_sums[b * channels + c];
  grad_bias[c] = to_float(from_float<T>(total));
}

template <typename T>
cudaError_t forward(const void* z, const float* bias, void* y, std::int64_t rows, std::int64_t channels, float slope,
                    cudaStream_t stream) {
  const std::int64_t n = rows * channels;
  constexpr int V = pack_elements<T>();
  const bool packs = channels % V == 0 && aligned(z, sizeof(T) * V) && aligned(y, sizeof(T) * V);
  const int v = packs ? V : 1;
  const std::int64_t units = n / v;
  const unsigned blocks = element_blocks(units);
  if (packs)
    forward_kernel<T, V>
        <<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(z), bias, static_cast<T*>(y), units, channels, slope);
  else
    forward_kernel<T, 1>
        <<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(z), bias, static_cast<T*>(y), units, channels, slope);
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward(const void* grad_y, const void* y, void* grad_z, float* partial_sums, float* grad_bias,
                     std::int64_t rows, std::int64_t channels, float slope, cudaStream_t stream) {
  constexpr int V = pack_elements<T>();
  const std::int64_t blocks = backward_blocks(rows);
  const bool packs = packs_fit<T>(channels) && aligned(grad_y, sizeof(T) * V) && aligned(y, sizeof(T) * V) &&
                     aligned(grad_z, sizeof(T) * V);
  const auto* gy = static_cast<const T*>(grad_y);
  const auto* yy = static_cast<const T*>(y);
  auto* gz = static_cast<T*>(grad_z);
  if (packs) {
    backward_packs_kernel<T, V>
        <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(gy, yy, gz, partial_sums, rows, channels, slope);
  } else {
    const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>((channels + 31) / 32));
    backward_elements_kernel<T><<<grid, dim3(32, 8), 0, stream>>>(gy, yy, gz, partial_sums, rows, channels, slope);
  }
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) return launched;
  finish_kernel<T><<<static_cast<unsigned>((channels + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      partial_sums, grad_bias, blocks, channels);
  return cudaGetLastError();
}

}  // namespace

cudaError_t bias_leaky_relu_forward(ElementType type, const void* z, const float* bias, void* y, std::int64_t rows,
                                    std::int64_t channels, float slope, cudaStream_t stream) {
  if (rows <= 0 || channels <= 0) return cudaSuccess;
  return with_element_type(type,
                           [&](auto t) { return forward<decltype(t)>(z, bias, y, rows, channels, slope, stream); });
}

std::int64_t bias_leaky_relu_backward_workspace(std::int64_t rows, std::int64_t channels) {
  return backward_blocks(rows) * std::max<std::int64_t>(channels, 0);
}

cudaError_t bias_leaky_relu_backward(ElementType type, const void* grad_y, const void* y, void* grad_z,
                                     float* partial_sums, float* grad_bias, std::int64_t rows, std::int64_t channels,
                                     float slope, cudaStream_t stream) {
  if (channels <= 0) return cudaSuccess;
  if (rows <= 0) return cudaMemsetAsync(grad_bias, 0, sizeof(float) * channels, stream);
  return with_element_type(type, [&](auto t) {
    return backward<decltype(t)>(grad_y, y, grad_z, partial_sums, grad_bias, rows, channels, slope, stream);
  });
}

}  // namespace pix2pix::dist::kernels
