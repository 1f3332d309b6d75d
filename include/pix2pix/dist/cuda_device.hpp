// The few raw CUDA runtime calls outside the NCCL communicator: device count, selection, free
// memory, each GPU's name, and the CUDA runtime, driver and NCCL versions. Compiled against the
// CUDA toolkit when PIX2PIX_HAVE_CUDA, else stubs that say there is no GPU (cuda_device_none.cpp).
#pragma once

#include <cstdint>
#include <string>

namespace pix2pix::dist {

bool cuda_compiled();
// Number of visible GPUs (after CUDA_VISIBLE_DEVICES); 0 without a driver or a device.
int cuda_device_count();
void cuda_set_device(int index);
// Free bytes on `index` (cudaMemGetInfo), -1 when unknown.
std::int64_t cuda_free_bytes(int index);
// "NVIDIA H100 80GB HBM3 (79.1 GiB, sm_90)": what the start-up table says of each rank's GPU.
std::string cuda_device_description(int index);

// Version codes of the CUDA runtime, the driver and NCCL (0: none), as compiled (CUDART_VERSION,
// NCCL_VERSION_CODE; no driver) or as loaded by this process (cudaRuntimeGetVersion,
// cudaDriverGetVersion, ncclGetVersion). All 0 in a build without CUDA.
struct CudaLibraries {
  int runtime = 0, driver = 0, nccl = 0;
};
CudaLibraries cuda_compiled_versions();
CudaLibraries cuda_loaded_versions();

}  // namespace pix2pix::dist
