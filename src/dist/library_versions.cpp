#include "pix2pix/dist/library_versions.hpp"

#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/version.h>

#include "pix2pix/dist/cuda_device.hpp"

namespace pix2pix::dist {

std::string cuda_version_string(int code) {
  return std::to_string(code / 1000) + "." + std::to_string(code % 1000 / 10);
}

std::string nccl_version_string(int code) {
  // NCCL_VERSION_CODE: X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z from 2.9 on.
  const int major = code >= 20900 ? code / 10000 : code / 1000;
  const int minor = code >= 20900 ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

std::string cudnn_version_string(long code) {
  // CUDNN_VERSION: X*1000 + Y*100 + Z up to 8.x, X*10000 + Y*100 + Z from 9 on.
  const long major = code >= 90000 ? code / 10000 : code / 1000;
  const long minor = code >= 90000 ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

std::string libtorch_summary() {
  const auto& hooks = at::detail::getCUDAHooks();
  std::string out = TORCH_VERSION;
  // A CPU-only LibTorch has the default hooks, whose version queries throw.
  if (!hooks.hasCUDART()) return out + ", CPU only";
  out += ", built for CUDA " + cuda_version_string(static_cast<int>(hooks.versionCUDART()));
  out += hooks.hasCuDNN() ? ", cuDNN " + cudnn_version_string(hooks.versionCuDNN()) : ", no cuDNN";
  return out;
}

std::string cuda_nccl_summary() {
  if (!cuda_compiled()) return "not compiled in";
  const CudaLibraries compiled = cuda_compiled_versions(), loaded = cuda_loaded_versions();
  return "compiled for CUDA runtime " + cuda_version_string(compiled.runtime) + " and NCCL " +
         nccl_version_string(compiled.nccl) + "; loaded CUDA runtime " + cuda_version_string(loaded.runtime) +
         ", NCCL " + nccl_version_string(loaded.nccl) + ", driver " +
         (loaded.driver > 0 ? cuda_version_string(loaded.driver) : std::string("none"));
}

}  // namespace pix2pix::dist
