// Chooses this rank's torch::Device once, from --device and the node-local rank.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace pix2pix::dist {

// `request`: auto (a GPU when LibTorch sees one, else the CPU), cpu, or cuda. A GPU rank takes
// GPU `local_rank`; more local ranks than visible GPUs is an error (NCCL cannot share a GPU
// between ranks) unless PIX2PIX_SHARE_GPUS=1 (See Note [ranks sharing a GPU]), as is cuda
// without a CUDA-enabled LibTorch.
torch::Device choose_device(const std::string& request, int local_rank, int local_size);

// Note [ranks sharing a GPU]
// NCCL refuses two ranks on one GPU of one host ("Duplicate GPU detected"), but it takes a host's
// identity from NCCL_HOSTID. With PIX2PIX_SHARE_GPUS=1 a node may run more ranks than it has GPUs:
// local rank r takes GPU r mod G, and before its NCCL communicator is made each rank gets an
// NCCL_HOSTID of its own and NCCL_SOCKET_IFNAME=lo (either only where the user set none). To NCCL
// the ranks are then on different hosts joined by its socket transport: the code path of nodes
// joined by TCP, on one GPU. It is a way to test the multi-node path (N x B = 1 x NB, a lost rank,
// elastic resume) where only one GPU is at hand, never a speed setting: the ranks share one GPU's
// compute and talk through the kernel's loopback. Without it, more ranks than GPUs is refused.
inline constexpr const char* kShareGpusVariable = "PIX2PIX_SHARE_GPUS";
bool gpu_sharing_requested();  // PIX2PIX_SHARE_GPUS=1 in this process's environment
// The GPU of local rank `local_rank` of `local_size` ranks on a node with `gpus` (pure): the rank
// itself, or with `share` the rank modulo `gpus`. Error naming the variable when there are more
// ranks than GPUs and `share` is false.
int gpu_of_local_rank(int local_rank, int local_size, int gpus, bool share);
// What NCCL needs to be told so that ranks sharing a GPU look like hosts of their own (pure):
// (variable, value) for NCCL_HOSTID ("pix2pix-rank-R") and NCCL_SOCKET_IFNAME ("lo"), each left out
// when `hostid` / `ifname` (the environment's values, nullptr when unset) is set.
std::vector<std::pair<std::string, std::string>> shared_gpu_nccl_settings(int rank, const char* hostid,
                                                                          const char* ifname);
// When this node runs more ranks than it has GPUs (sharing them): sets shared_gpu_nccl_settings in
// the environment and returns a line for the start-up table; else "". Call before NCCL starts.
std::string prepare_shared_gpus(int rank, int local_size);

// Memory one rank's input cache may take: on the device (a GPU's free memory, or for CPU ranks
// the host's) and in host memory (what this node has available, common/memory_budget, shared
// equally by its `ranks_per_node` ranks). -1 when unknown.
struct CacheMemory {
  std::int64_t device_bytes = -1;
  std::int64_t host_bytes = -1;
};
CacheMemory cache_memory(const torch::Device& device, int ranks_per_node);

}  // namespace pix2pix::dist
