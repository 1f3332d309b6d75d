// CPU-only build (PIX2PIX_WITH_CUDA=OFF or no toolkit found): there is never a GPU.
#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/cuda_device.hpp"

namespace pix2pix::dist {

bool cuda_compiled() {
  return false;
}
int cuda_device_count() {
  return 0;
}
void cuda_set_device(int index) {
  throw Error("GPU " + std::to_string(index) + " requested but this build has no CUDA support (PIX2PIX_WITH_CUDA)");
}
std::int64_t cuda_free_bytes(int) {
  return -1;
}
std::string cuda_device_description(int index) {
  throw Error("GPU " + std::to_string(index) + " described but this build has no CUDA support (PIX2PIX_WITH_CUDA)");
}
CudaLibraries cuda_compiled_versions() {
  return {};
}
CudaLibraries cuda_loaded_versions() {
  return {};
}

}  // namespace pix2pix::dist
