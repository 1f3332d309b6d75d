// Device choice is device-generic LibTorch; only the memory query needs the CUDA runtime.
#include "pix2pix/dist/device.hpp"

#include <algorithm>
#include <cstdlib>

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
  const int gpu = gpu_of_local_rank(local_rank, local_size, gpus, gpu_sharing_requested());
  if (cuda_compiled()) cuda_set_device(gpu);
  return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(gpu));
}

bool gpu_sharing_requested() {
  const char* value = std::getenv(kShareGpusVariable);
  return value != nullptr && std::string(value) == "1";
}

int gpu_of_local_rank(int local_rank, int local_size, int gpus, bool share) {
  if (gpus < 1) throw Error("no visible GPU");
  if (local_size <= gpus) return local_rank;
  if (!share)
    throw Error(std::to_string(local_size) + " ranks on this node but " + std::to_string(gpus) +
                " visible GPUs: NCCL needs one GPU per rank (launch fewer ranks, or use --device cpu; to test the "
                "multi-node path on one GPU, " +
                kShareGpusVariable + "=1 lets ranks share GPUs, docs/distributed.md)");
  return local_rank % gpus;
}

std::vector<std::pair<std::string, std::string>> shared_gpu_nccl_settings(int rank, const char* hostid,
                                                                          const char* ifname) {
  std::vector<std::pair<std::string, std::string>> settings;
  if (hostid == nullptr || *hostid == '\0')
    settings.emplace_back("NCCL_HOSTID", "pix2pix-rank-" + std::to_string(rank));
  if (ifname == nullptr || *ifname == '\0') settings.emplace_back("NCCL_SOCKET_IFNAME", "lo");
  return settings;
}

std::string prepare_shared_gpus(int rank, int local_size) {
  if (!torch::cuda::is_available()) return "";
  const int gpus = static_cast<int>(torch::cuda::device_count());
  if (local_size <= gpus || !gpu_sharing_requested()) return "";
  for (const auto& [name, value] :
       shared_gpu_nccl_settings(rank, std::getenv("NCCL_HOSTID"), std::getenv("NCCL_SOCKET_IFNAME")))
    ::setenv(name.c_str(), value.c_str(), /*overwrite=*/0);
  return std::string(kShareGpusVariable) + "=1: " + std::to_string(local_size) + " ranks share " +
         std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s") + " on a node; to NCCL each rank is a host of its " +
         "own (NCCL_HOSTID " + std::getenv("NCCL_HOSTID") + " here, sockets over NCCL_SOCKET_IFNAME " +
         std::getenv("NCCL_SOCKET_IFNAME") + "): a test of the multi-node path, not a speed setting";
}

CacheMemory cache_memory(const torch::Device& device, int ranks_per_node) {
  CacheMemory memory;
  memory.host_bytes = available_memory().bytes / std::max(1, ranks_per_node);
  memory.device_bytes = device.is_cuda() ? cuda_free_bytes(device.index()) : memory.host_bytes;
  return memory;
}

}  // namespace pix2pix::dist
