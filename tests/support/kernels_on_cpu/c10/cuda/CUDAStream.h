// See Note [CUDA kernels on a CPU] (support/cuda_on_cpu.hpp): c10/cuda's current stream where
// dist/fused_activation_cuda.cpp runs on CPU tensors; the kernels run where they are called, and
// the stream they are given is the null one.
#pragma once

#include <c10/core/Device.h>
#include <cuda_runtime.h>

namespace c10::cuda {

struct CUDAStream {
  cudaStream_t stream() const { return nullptr; }
};

inline CUDAStream getCurrentCUDAStream(c10::DeviceIndex = -1) {
  return {};
}

}  // namespace c10::cuda
