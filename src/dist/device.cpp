// Device choice is device-generic LibTorch; only the memory query needs the CUDA runtime.
#include "pix2pix/dist/device.hpp"

#include <algorithm>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/memory_budget.hpp"
#include "pix2pix/dist/cuda_device.hpp"

namespace pix2pix::dist {

torch::Device choose_device(const std::string& request, int local_rank, int local_size) {
  if (request != "auto" && request != "cpu" && request != "cuda")
    throw UsageError("--device must be auto, cpu or cuda; got '" + request + "'");
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

CacheMemory cache_memory(const torch::Device& device, int ranks_per_node) {
  CacheMemory memory;
  memory.host_bytes = available_memory().bytes / std::max(1, ranks_per_node);
  memory.device_bytes = device.is_cuda() ? cuda_free_bytes(device.index()) : memory.host_bytes;
  return memory;
}

}  // namespace pix2pix::dist
