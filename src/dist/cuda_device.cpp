// GPU build: CUDA runtime queries. Compiled whenever the toolkit and NCCL are found, so CI
// compiles and links it even on machines without a GPU.
#include "pix2pix/dist/cuda_device.hpp"

#include <nccl.h>

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

std::string cuda_build_summary() {
  return "CUDA runtime " + std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10) +
         ", NCCL " + std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
}

}  // namespace pix2pix::dist
