// Device choice is device-generic LibTorch; only the memory query needs the CUDA runtime.
#include "pix2pix/dist/device.hpp"

#include <unistd.h>

#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/cuda_device.hpp"

namespace pix2pix::dist {

torch::Device choose_device(const std::string& request, int local_rank, int local_size) {
  if (request != "auto" && request != "cpu" && request != "cuda")
    throw Error("--device must be auto, cpu or cuda; got '" + request + "'");
  const bool torch_cuda = torch::cuda::is_available();
  if (request == "cpu" || (request == "auto" && !torch_cuda)) return torch::Device(torch::kCPU);
  if (!torch_cuda)
    throw Error("--device cuda: this LibTorch has no CUDA support or sees no GPU; use --device cpu or a CUDA LibTorch");
  const int gpus = static_cast<int>(torch::cuda::device_count());
  if (local_size > gpus)
    throw Error(std::to_string(local_size) + " ranks on this node but " + std::to_string(gpus) +
                " visible GPUs: NCCL needs one GPU per rank (launch fewer ranks, or use --device cpu)");
  if (cuda_compiled()) cuda_set_device(local_rank);
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
}

std::int64_t cache_budget_bytes(const torch::Device& device) {
  if (device.is_cuda()) {
    const std::int64_t free_bytes = cuda_free_bytes(device.index());
    return free_bytes < 0 ? -1 : free_bytes / 2;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page / 2 : -1;
}

}  // namespace pix2pix::dist
