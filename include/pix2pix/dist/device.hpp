// Chooses this rank's torch::Device once, from --device and the node-local rank.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace pix2pix::dist {

// `request`: auto (a GPU when LibTorch sees one, else the CPU), cpu, or cuda. A GPU rank takes
// GPU `local_rank`; more local ranks than visible GPUs is an error (NCCL cannot share a GPU
// between ranks), as is cuda without a CUDA-enabled LibTorch.
torch::Device choose_device(const std::string& request, int local_rank, int local_size);

// Memory one rank's input cache may take: on the device (a GPU's free memory, or for CPU ranks
// the host's) and in host memory (what this node has available, common/memory_budget, shared
// equally by its `ranks_per_node` ranks). -1 when unknown.
struct CacheMemory {
  std::int64_t device_bytes = -1;
  std::int64_t host_bytes = -1;
};
CacheMemory cache_memory(const torch::Device& device, int ranks_per_node);

}  // namespace pix2pix::dist
