// The CPU as a torch::Device, one object for every test file (a unity build joins several files).
#pragma once

#include <torch/torch.h>

namespace pix2pix::fixtures {

inline const torch::Device kCpu{torch::kCPU};

}  // namespace pix2pix::fixtures
