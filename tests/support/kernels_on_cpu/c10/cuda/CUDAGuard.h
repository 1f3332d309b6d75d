// See Note [CUDA kernels on a CPU] (support/cuda_on_cpu.hpp): c10/cuda's device guard where
// dist/fused_activation_cuda.cpp runs on CPU tensors, with no device to select.
#pragma once

#include <c10/core/Device.h>

namespace c10::cuda {

struct CUDAGuard {
  explicit CUDAGuard(c10::Device) {}
};

}  // namespace c10::cuda
