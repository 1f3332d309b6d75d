// The few raw CUDA runtime calls outside the NCCL communicator: device count, selection and
// free memory. Compiled against the CUDA toolkit when PIX2PIX_HAVE_CUDA, else stubs that say
// there is no GPU (cuda_device_none.cpp).
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
// "CUDA runtime 13.0, NCCL 2.28.9" or "not compiled in".
std::string cuda_build_summary();

}  // namespace pix2pix::dist
