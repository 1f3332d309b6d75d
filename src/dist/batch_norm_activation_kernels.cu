// Batch norm (training mode) and the activation after it in one pass each way, over NHWC memory
// (rows x channels). See Note [fused batch norm and LeakyReLU] and
// See Note [fused concatenation, batch norm and ReLU] (dist/fused_activation.hpp).
#include "kernel_elements.cuh"
#include "pix2pix/dist/batch_norm_activation_kernels.hpp"

namespace pix2pix::dist::kernels {
namespace {

// One channel's statistics and affine parameters.
struct Channel {
  float mean, invstd, weight, bias;
};

// The per-channel float32 arrays the kernels read: batch norm's statistics and affine parameters.
struct Parameters {
  const float* mean;
  const float* invstd;
  const float* weight;
  const float* bias;
  __device__ Channel at(std::int64_t c) const { return {mean[c], invstd[c], weight[c], bias[c]}; }
};

// ATen's normalisation, weight·(x - mean)·invstd + bias in float, its operations rounded as nvcc
// compiles ATen's expression (the last multiply and the add as one fma), and the same in every
// kernel here: the backward recomputes the forward's activation signs from x with it.
__device__ inline float normalised(float x, const Channel& p) {
  return __fmaf_rn(__fmul_rn(p.weight, __fsub_rn(x, p.mean)), p.invstd, p.bias);
}

// Whether the forward's activation saw a positive value: batch norm's output rounded to T, > 0.
template <typename T>
__device__ inline bool positive(float x, const Channel& p) {
  return to_float(from_float<T>(normalised(x, p))) > 0.0f;
}

// The activations, as ATen's: applied to batch norm's output rounded to T (`pre`, as float), and
// the gradient through them where that output was positive or not.
struct LeakyReluOf {
  float slope;
  template <typename T>
  __device__ T apply(float pre) const {
    return leaky_relu<T>(pre, slope);
  }
  template <typename T>
  __device__ T gradient(T grad_y, bool positive) const {
    return leaky_relu_gradient(grad_y, positive, slope);
  }
};
struct ReluOf {
  template <typename T>
  __device__ T apply(float pre) const {
    return pre <= 0.0f ? from_float<T>(0.0f) : from_float<T>(pre);
  }
  template <typename T>
  __device__ T gradient(T grad_y, bool positive) const {
    return positive ? grad_y : from_float<T>(0.0f);
  }
};

template <typename T, typename A>
__device__ inline T forward_value(T x, const Channel& p, const A& act) {
  return act.template apply<T>(to_float(from_float<T>(normalised(to_float(x), p))));
}

// y's rows are y_stride elements apart (a multiple of V: y_stride / V packs), x's `channels`.
template <typename T, int V, typename A>
__global__ void forward_packs_kernel(const T* __restrict__ x, Parameters params, T* __restrict__ y,
                                     std::int64_t y_stride, std::int64_t rows, std::int64_t channels, A act) {
  const PackLayout layout(channels, V);
  const std::int64_t y_packs = y_stride / V;
  Channel p[V];
#pragma unroll
  for (int k = 0; k < V; ++k) p[k] = params.at(layout.g * V + k);
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * layout.rows_per_pass;
  for (std::int64_t r = layout.first_row(static_cast<std::int64_t>(blockIdx.x) * layout.rows_per_pass); r < rows;
       r += step) {
    const Pack<T, V> in = reinterpret_cast<const Pack<T, V>*>(x)[r * layout.groups + layout.g];
    Pack<T, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) out.v[k] = forward_value(in.v[k], p[k], act);
    reinterpret_cast<Pack<T, V>*>(y)[r * y_packs + layout.g] = out;
  }
}

template <typename T, typename A>
__global__ void forward_elements_kernel(const T* __restrict__ x, Parameters params, T* __restrict__ y,
                                        std::int64_t y_stride, std::int64_t n, std::int64_t channels, A act) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::int64_t r = i / channels, c = i % channels;
    y[r * y_stride + c] = forward_value(x[i], params.at(c), act);
  }
}

// Adds one element's share to a channel's two sums: g (the activation's gradient, rounded to T as
// ATen's backward of the activation writes it) and g·(x - mean).
template <typename T, typename A>
__device__ inline void add_gradient(T grad_y, float x, const Channel& p, const A& act, float& sum_dy,
                                    float& sum_dy_xmu) {
  const float g = to_float(act.gradient(grad_y, positive<T>(x, p)));
  sum_dy += g;
  sum_dy_xmu += g * (x - p.mean);
}

// Backward's first pass: each block's two sums per channel over its rows, into partial_sums (the
// sums of g in rows 0..blocks-1, those of g·(x - mean) in rows blocks..2·blocks-1).
template <typename T, int V, typename A>
__global__ void reduce_packs_kernel(const T* __restrict__ grad_y, std::int64_t grad_y_stride, const T* __restrict__ x,
                                    Parameters params, float* __restrict__ partial_sums, std::int64_t rows,
                                    std::int64_t channels, A act) {
  __shared__ float sums[2][kThreads][V];
  const PackLayout layout(channels, V);
  const std::int64_t grad_y_packs = grad_y_stride / V;
  Channel p[V];
  float dy[V], dy_xmu[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    p[k] = params.at(layout.g * V + k);
    dy[k] = dy_xmu[k] = 0.0f;
  }
  std::int64_t begin = 0, end = 0;
  block_rows(rows, gridDim.x, blockIdx.x, begin, end);
  for (std::int64_t r = layout.first_row(begin); r < end; r += layout.rows_per_pass) {
    const Pack<T, V> gy = reinterpret_cast<const Pack<T, V>*>(grad_y)[r * grad_y_packs + layout.g];
    const Pack<T, V> xx = reinterpret_cast<const Pack<T, V>*>(x)[r * layout.groups + layout.g];
#pragma unroll
    for (int k = 0; k < V; ++k) add_gradient(gy.v[k], to_float(xx.v[k]), p[k], act, dy[k], dy_xmu[k]);
  }
#pragma unroll
  for (int k = 0; k < V; ++k) {
    sums[0][threadIdx.x][k] = dy[k];
    sums[1][threadIdx.x][k] = dy_xmu[k];
  }
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < layout.groups) {
    for (int s = 0; s < 2; ++s)
      for (int k = 0; k < V; ++k) {
        float total = 0.0f;
        for (int j = 0; j < layout.rows_per_pass; ++j) total += sums[s][j * layout.groups + threadIdx.x][k];
        partial_sums[(s * gridDim.x + blockIdx.x) * channels + threadIdx.x * V + k] = total;
      }
  }
}

// Any channel count: 32 channels (threadIdx.x) by 8 rows (threadIdx.y) at a time; blockIdx.y picks
// the 32 channels.
template <typename T, typename A>
__global__ void reduce_elements_kernel(const T* __restrict__ grad_y, std::int64_t grad_y_stride,
                                       const T* __restrict__ x, Parameters params, float* __restrict__ partial_sums,
                                       std::int64_t rows, std::int64_t channels, A act) {
  __shared__ float sums[2][8][33];
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.y) * 32 + threadIdx.x;
  std::int64_t begin = 0, end = 0;
  block_rows(rows, gridDim.x, blockIdx.x, begin, end);
  float dy = 0.0f, dy_xmu = 0.0f;
  if (c < channels) {
    const Channel p = params.at(c);
    for (std::int64_t r = begin + threadIdx.y; r < end; r += 8)
      add_gradient(grad_y[r * grad_y_stride + c], to_float(x[r * channels + c]), p, act, dy, dy_xmu);
  }
  sums[0][threadIdx.y][threadIdx.x] = dy;
  sums[1][threadIdx.y][threadIdx.x] = dy_xmu;
  __syncthreads();
  if (threadIdx.y == 0 && c < channels) {
    for (int s = 0; s < 2; ++s) {
      float total = 0.0f;
      for (int j = 0; j < 8; ++j) total += sums[s][j][threadIdx.x];
      partial_sums[(s * gridDim.x + blockIdx.x) * channels + c] = total;
    }
  }
}

// The blocks' sums in block order: Σ g and Σ g·(x - mean) per channel, and from them the weight's
// and the bias's gradients as ATen's batch_norm_backward_reduce writes them.
__global__ void finish_kernel(const float* __restrict__ partial_sums, const float* __restrict__ invstd,
                              float* __restrict__ sum_dy, float* __restrict__ sum_dy_xmu,
                              float* __restrict__ grad_weight, float* __restrict__ grad_bias, std::int64_t blocks,
                              std::int64_t channels) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  float dy = 0.0f, dy_xmu = 0.0f;
  for (std::int64_t b = 0; b < blocks; ++b) {
    dy += partial_sums[b * channels + c];
    dy_xmu += partial_sums[(blocks + b) * channels + c];
  }
  sum_dy[c] = dy;
  sum_dy_xmu[c] = dy_xmu;
  grad_bias[c] = dy;
  grad_weight[c] = dy_xmu * invstd[c];
}

// One channel's factors of ATen's batch_norm_backward_elemt.
struct InputGradient {
  float mean_dy, factor_1, factor_2;
};

__device__ inline InputGradient input_gradient_at(const Channel& p, const float* sum_dy, const float* sum_dy_xmu,
                                                  std::int64_t c, float norm) {
  return {sum_dy[c] * norm, p.invstd * p.invstd * sum_dy_xmu[c] * norm, p.weight * p.invstd};
}

template <typename T, typename A>
__device__ inline T input_gradient(T grad_y, float x, const Channel& p, const InputGradient& f, const A& act) {
  const float g = to_float(act.gradient(grad_y, positive<T>(x, p)));
  return from_float<T>((g - f.mean_dy - (x - p.mean) * f.factor_1) * f.factor_2);
}

// Backward's second pass: the input's gradient.
template <typename T, int V, typename A>
__global__ void input_gradient_packs_kernel(const T* __restrict__ grad_y, std::int64_t grad_y_stride,
                                            const T* __restrict__ x, Parameters params,
                                            const float* __restrict__ sum_dy, const float* __restrict__ sum_dy_xmu,
                                            T* __restrict__ grad_x, std::int64_t rows, std::int64_t channels,
                                            float norm, A act) {
  const PackLayout layout(channels, V);
  const std::int64_t grad_y_packs = grad_y_stride / V;
  Channel p[V];
  InputGradient f[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    p[k] = params.at(layout.g * V + k);
    f[k] = input_gradient_at(p[k], sum_dy, sum_dy_xmu, layout.g * V + k, norm);
  }
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * layout.rows_per_pass;
  for (std::int64_t r = layout.first_row(static_cast<std::int64_t>(blockIdx.x) * layout.rows_per_pass); r < rows;
       r += step) {
    const std::int64_t i = r * layout.groups + layout.g;
    const Pack<T, V> gy = reinterpret_cast<const Pack<T, V>*>(grad_y)[r * grad_y_packs + layout.g];
    const Pack<T, V> xx = reinterpret_cast<const Pack<T, V>*>(x)[i];
    Pack<T, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) out.v[k] = input_gradient(gy.v[k], to_float(xx.v[k]), p[k], f[k], act);
    reinterpret_cast<Pack<T, V>*>(grad_x)[i] = out;
  }
}

template <typename T, typename A>
__global__ void input_gradient_elements_kernel(const T* __restrict__ grad_y, std::int64_t grad_y_stride,
                                               const T* __restrict__ x, Parameters params,
                                               const float* __restrict__ sum_dy, const float* __restrict__ sum_dy_xmu,
                                               T* __restrict__ grad_x, std::int64_t n, std::int64_t channels,
                                               float norm, A act) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const std::int64_t r = i / channels, c = i % channels;
    const Channel p = params.at(c);
    grad_x[i] = input_gradient(grad_y[r * grad_y_stride + c], to_float(x[i]), p,
                               input_gradient_at(p, sum_dy, sum_dy_xmu, c, norm), act);
  }
}

__global__ void update_running_kernel(const float* __restrict__ mean, const float* __restrict__ invstd,
                                      float* __restrict__ running_mean, float* __restrict__ running_var,
                                      std::int64_t channels, float unbiased, float momentum, float eps) {
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= channels) return;
  const float var = 1.0f / (invstd[c] * invstd[c]) - eps;
  running_mean[c] = momentum * mean[c] + (1.0f - momentum) * running_mean[c];
  running_var[c] = momentum * var * unbiased + (1.0f - momentum) * running_var[c];
}

template <typename T, typename A>
cudaError_t forward(const void* x, Parameters params, void* y, std::int64_t y_stride, std::int64_t rows,
                    std::int64_t channels, A act, cudaStream_t stream) {
  constexpr int V = pack_elements<T>();
  const auto* xx = static_cast<const T*>(x);
  auto* yy = static_cast<T*>(y);
  if (packs_take<T>(channels, y_stride, {y, x}))
    forward_packs_kernel<T, V, A>
        <<<pack_blocks<T>(rows, channels), kThreads, 0, stream>>>(xx, params, yy, y_stride, rows, channels, act);
  else
    forward_elements_kernel<T, A><<<element_blocks(rows * channels), kThreads, 0, stream>>>(
        xx, params, yy, y_stride, rows * channels, channels, act);
  return cudaGetLastError();
}

template <typename T, typename A>
cudaError_t backward_sums(const void* grad_y, std::int64_t grad_y_stride, const void* x, Parameters params,
                          float* partial_sums, float* sums, float* grad_weight, float* grad_bias, std::int64_t rows,
                          std::int64_t channels, A act, cudaStream_t stream) {
  constexpr int V = pack_elements<T>();
  const std::int64_t blocks = backward_blocks(rows);
  const auto* gy = static_cast<const T*>(grad_y);
  const auto* xx = static_cast<const T*>(x);
  if (packs_take<T>(channels, grad_y_stride, {grad_y, x})) {
    reduce_packs_kernel<T, V, A><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
        gy, grad_y_stride, xx, params, partial_sums, rows, channels, act);
  } else {
    const dim3 grid(static_cast<unsigned>(blocks), static_cast<unsigned>((channels + 31) / 32));
    reduce_elements_kernel<T, A>
        <<<grid, dim3(32, 8), 0, stream>>>(gy, grad_y_stride, xx, params, partial_sums, rows, channels, act);
  }
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) return launched;
  finish_kernel<<<static_cast<unsigned>((channels + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      partial_sums, params.invstd, sums, sums + channels, grad_weight, grad_bias, blocks, channels);
  return cudaGetLastError();
}

template <typename T, typename A>
cudaError_t backward_input(const void* grad_y, std::int64_t grad_y_stride, const void* x, Parameters params,
                           const float* sums, void* grad_x, std::int64_t rows, std::int64_t channels, float norm, A act,
                           cudaStream_t stream) {
  constexpr int V = pack_elements<T>();
  const auto* gy = static_cast<const T*>(grad_y);
  const auto* xx = static_cast<const T*>(x);
  auto* gx = static_cast<T*>(grad_x);
  if (packs_take<T>(channels, grad_y_stride, {grad_y, x, grad_x}))
    input_gradient_packs_kernel<T, V, A><<<pack_blocks<T>(rows, channels), kThreads, 0, stream>>>(
        gy, grad_y_stride, xx, params, sums, sums + channels, gx, rows, channels, norm, act);
  else
    input_gradient_elements_kernel<T, A><<<element_blocks(rows * channels), kThreads, 0, stream>>>(
        gy, grad_y_stride, xx, params, sums, sums + channels, gx, rows * channels, channels, norm, act);
  return cudaGetLastError();
}

// f(T{}, activation) for the element type `type` names and the activation's device form: each
// public entry's dispatch to its templates.
template <typename F>
cudaError_t with_type_and_activation(ElementType type, Activation activation, F&& f) {
  return with_element_type(type, [&](auto t) {
    if (activation.kind == Activation::Kind::relu) return f(t, ReluOf{});
    return f(t, LeakyReluOf{activation.slope});
  });
}

}  // namespace

cudaError_t batch_norm_update_running(const float* mean, const float* invstd, float* running_mean, float* running_var,
                                      std::int64_t channels, std::int64_t count, float momentum, float eps,
                                      cudaStream_t stream) {
  if (channels <= 0) return cudaSuccess;
  const float unbiased = count > 1 ? static_cast<float>(count) / static_cast<float>(count - 1) : 1.0f;
  update_running_kernel<<<static_cast<unsigned>((channels + kThreads - 1) / kThreads), kThreads, 0, stream>>>(
      mean, invstd, running_mean, running_var, channels, unbiased, momentum, eps);
  return cudaGetLastError();
}

cudaError_t batch_norm_activation_forward(ElementType type, const void* x, const float* mean, const float* invstd,
                                          const float* weight, const float* bias, void* y, std::int64_t y_stride,
                                          std::int64_t rows, std::int64_t channels, Activation activation,
                                          cudaStream_t stream) {
  if (rows <= 0 || channels <= 0) return cudaSuccess;
  if (y_stride < channels) return cudaErrorInvalidValue;
  const Parameters params{mean, invstd, weight, bias};
  return with_type_and_activation(type, activation, [&](auto t, auto act) {
    return forward<decltype(t)>(x, params, y, y_stride, rows, channels, act, stream);
  });
}

std::int64_t batch_norm_activation_backward_workspace(std::int64_t rows, std::int64_t channels) {
  return 2 * backward_blocks(rows) * std::max<std::int64_t>(channels, 0);
}

cudaError_t batch_norm_activation_backward_sums(ElementType type, const void* grad_y, std::int64_t grad_y_stride,
                                                const void* x, const float* mean, const float* invstd,
                                                const float* weight, const float* bias, float* workspace, float* sums,
                                                float* grad_weight, float* grad_bias, std::int64_t rows,
                                                std::int64_t channels, Activation activation, cudaStream_t stream) {
  // Batch norm of no values: the caller's error.
  if (rows <= 0 || channels <= 0 || grad_y_stride < channels) return cudaErrorInvalidValue;
  const Parameters params{mean, invstd, weight, bias};
  return with_type_and_activation(type, activation, [&](auto t, auto act) {
    return backward_sums<decltype(t)>(grad_y, grad_y_stride, x, params, workspace, sums, grad_weight, grad_bias, rows,
                                      channels, act, stream);
  });
}

cudaError_t batch_norm_activation_backward_input(ElementType type, const void* grad_y, std::int64_t grad_y_stride,
                                                 const void* x, const float* mean, const float* invstd,
                                                 const float* weight, const float* bias, const float* sums,
                                                 void* grad_x, std::int64_t rows, std::int64_t channels, float norm,
                                                 Activation activation, cudaStream_t stream) {
  if (rows <= 0 || channels <= 0 || grad_y_stride < channels) return cudaErrorInvalidValue;
  const Parameters params{mean, invstd, weight, bias};
  return with_type_and_activation(type, activation, [&](auto t, auto act) {
    return backward_input<decltype(t)>(grad_y, grad_y_stride, x, params, sums, grad_x, rows, channels, norm, act,
                                       stream);
  });
}

}  // namespace pix2pix::dist::kernels
