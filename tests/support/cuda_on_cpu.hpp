// What the fused kernels' CUDA source needs to run on a CPU: force-included (g++ -include) into
// each src/dist/*_kernels.cu, compiled as C++ after kernels_on_cpu.cmake rewrote its launches.
//
// Note [CUDA kernels on a CPU]
// The fused kernels (src/dist/*_kernels.cu) run only on GPUs, and this project sees one for about
// 15 minutes now and then; CI compiles them with nvcc but cannot run them. So their own source also
// runs here: compiled by the C++ compiler with this header, each launch `k<<<grid, block, 0,
// s>>>(args)` rewritten to `k | Launch{grid, block, 0, s} | arguments(args)`, each block's threads
// real threads (a barrier for __syncthreads, `__shared__` arrays static: one per kernel, which the
// block's threads share), blocks one after another, the last first (the same threads, a barrier
// between). Every index, 16-byte pack, split of rows among blocks, reduction in block order and
// rounding of the kernels' own code then runs in CI (tests/dist/kernels_on_cpu_test.cpp), against
// LibTorch's CPU operations, on the checks the GPU tests make. The autograd functions around the
// kernels (dist/fused_activation_cuda.cpp) run here too, on CPU tensors: the same source compiled
// again with PIX2PIX_KERNELS_ON_CPU (the CPU is then the kernels' device, and float64 moments stand
// in for ATen's batch_norm_stats, which has no CPU kernel) and with stand-ins for c10/cuda's guard
// and stream (support/kernels_on_cpu/), so that the library's entries, the model's stand-ins and
// whole networks under --fused-kernels on run in CI (tests/dist/fused_functions_on_cpu_test.cpp).
// What it cannot find: races between blocks (they do not overlap here), streams, the GPU's memory
// model, register and occupancy limits, and speed: those remain the GPU tests'
// (scripts/gpu-smoke.sh). The intrinsics it stands in for are IEEE operations on both
// (__fmaf_rn a fused multiply-add, __fmul_rn and __fsub_rn one rounding each), and cuda_bf16.h and
// cuda_fp16.h convert on the host as on the device, so values are the GPU's.
#pragma once

// The runtime's header first, with CUDA's own meanings of the names below (its host templates use
// gridDim and blockDim as names); its include guard then keeps the kernels' own includes of it out.
#include <cuda_runtime.h>

#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __shared__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static

namespace pix2pix::kernels_on_cpu {

// Where a thread of the running block is (CUDA's built-in variables).
inline thread_local uint3 thread_index, block_index;
inline thread_local dim3 block_size, grid_size;

// __syncthreads: every thread of the block arrives before any goes on; reusable.
class BlockBarrier {
 public:
  explicit BlockBarrier(unsigned threads) : threads_(threads) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const unsigned generation = generation_;
    if (++arrived_ == threads_) {
      arrived_ = 0;
      ++generation_;
      all_arrived_.notify_all();
      return;
    }
    all_arrived_.wait(lock, [&] { return generation != generation_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable all_arrived_;
  const unsigned threads_;
  unsigned arrived_ = 0, generation_ = 0;
};
inline thread_local BlockBarrier* block_barrier = nullptr;

// A launch's configuration: <<<grid, block, shared bytes, stream>>>.
struct Launch {
  dim3 grid, block;
  std::size_t shared_bytes;
  cudaStream_t stream;
};
template <typename... Parameters>
struct ConfiguredKernel {
  void (*kernel)(Parameters...);
  Launch launch;
};
template <typename... Parameters>
ConfiguredKernel<Parameters...> operator|(void (*kernel)(Parameters...), Launch launch) {
  return {kernel, launch};
}
template <typename... Values>
struct Arguments {
  std::tuple<Values...> values;
};
template <typename... Values>
Arguments<std::decay_t<Values>...> arguments(Values&&... values) {
  return {std::tuple<std::decay_t<Values>...>(std::forward<Values>(values)...)};
}

// Runs the kernel: the grid's blocks one after another, each block's threads together. One OS
// thread a thread of the block, kept for every block of the launch: a barrier ends each block.
template <typename... Parameters, typename... Values>
void operator|(ConfiguredKernel<Parameters...> configured, const Arguments<Values...>& args) {
  const Launch& l = configured.launch;
  const unsigned threads = l.block.x * l.block.y * l.block.z;
  BlockBarrier barrier(threads);
  std::vector<std::thread> block;
  block.reserve(threads);
  for (unsigned t = 0; t < threads; ++t)
    block.emplace_back([&, t] {
      thread_index = uint3{t % l.block.x, (t / l.block.x) % l.block.y, t / (l.block.x * l.block.y)};
      block_size = l.block;
      grid_size = l.grid;
      block_barrier = &barrier;
      // Last block first: a GPU runs blocks in any order, and a kernel that counted on the first
      // running first would fail here.
      const unsigned blocks = l.grid.x * l.grid.y * l.grid.z;
      for (unsigned b = blocks; b-- > 0;) {
        block_index = uint3{b % l.grid.x, (b / l.grid.x) % l.grid.y, b / (l.grid.x * l.grid.y)};
        std::apply([&](const auto&... a) { configured.kernel(a...); }, args.values);
        barrier.arrive_and_wait();  // the block's shared arrays are the next block's after this
      }
    });
  for (auto& thread : block) thread.join();
}

inline cudaError_t last_error() {
  return cudaSuccess;  // a launch here either ran or threw
}
inline cudaError_t memset_async(void* p, int value, std::size_t bytes, cudaStream_t) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}

}  // namespace pix2pix::kernels_on_cpu

#define threadIdx (::pix2pix::kernels_on_cpu::thread_index)
#define blockIdx (::pix2pix::kernels_on_cpu::block_index)
#define blockDim (::pix2pix::kernels_on_cpu::block_size)
#define gridDim (::pix2pix::kernels_on_cpu::grid_size)
#define cudaGetLastError ::pix2pix::kernels_on_cpu::last_error
#define cudaMemsetAsync ::pix2pix::kernels_on_cpu::memset_async

inline void __syncthreads() {
  ::pix2pix::kernels_on_cpu::block_barrier->arrive_and_wait();
}
inline float __fsub_rn(float a, float b) {
  return a - b;
}
inline float __fmul_rn(float a, float b) {
  return a * b;
}
inline float __fmaf_rn(float a, float b, float c) {
  return std::fma(a, b, c);
}
