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

// Bytes the input cache may take on `device`: half of the free GPU memory, or half of the
// available host memory for the CPU. -1 when unknown.
std::int64_t cache_budget_bytes(const torch::Device& device);

}  // namespace pix2pix::dist
