// GPU build: CUDA runtime queries. Compiled whenever the toolkit and NCCL are found, so CI
// compiles and links it even on machines without a GPU.
#include "pix2pix/dist/cuda_device.hpp"

#include <nccl.h>

#include <cstdio>

#include "pix2pix/dist/cuda_check.hpp"

namespace pix2pix::dist {

bool cuda_compiled() {
  return true;
}

int cuda_device_count() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // no driver or no device: a CPU machine, not an error
    return 0;
  }
  return count;
}

void cuda_set_device(int index) {
  CUDA_CHECK(cudaSetDevice(index));
}

std::int64_t cuda_free_bytes(int index) {
  int previous = 0;
  CUDA_CHECK(cudaGetDevice(&previous));
  CUDA_CHECK(cudaSetDevice(index));
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  CUDA_CHECK(cudaSetDevice(previous));
  return static_cast<std::int64_t>(free_bytes);
}

std::string cuda_device_description(int index) {
  cudaDeviceProp properties{};
  CUDA_CHECK(cudaGetDeviceProperties(&properties, index));
  char memory[32];
  std::snprintf(memory, sizeof(memory), "%.1f GiB", static_cast<double>(properties.totalGlobalMem) / (1 << 30));
  return std::string(properties.name) + " (" + memory + ", sm_" + std::to_string(properties.major) +
         std::to_string(properties.minor) + ")";
}

CudaLibraries cuda_compiled_versions() {
  return {CUDART_VERSION, 0, NCCL_VERSION_CODE};
}

CudaLibraries cuda_loaded_versions() {
  CudaLibraries loaded;
  CUDA_CHECK(cudaRuntimeGetVersion(&loaded.runtime));
  if (cudaDriverGetVersion(&loaded.driver) != cudaSuccess) loaded.driver = 0;  // 0 as well where no driver is installed
  if (ncclGetVersion(&loaded.nccl) != ncclSuccess) loaded.nccl = 0;
  return loaded;
}

}  // namespace pix2pix::dist
