// A tensor's values read on the host: what the losses, the skip counts and a checkpoint's numbers
// become when they are reported or written.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace pix2pix {

// The values of `t` in order, as doubles: copied to the CPU first, so a tensor on a GPU is read
// there (a device sync) and one of any dtype converted.
inline std::vector<double> host_doubles(const torch::Tensor& t) {
  const auto c = t.to(torch::kCPU, torch::kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

}  // namespace pix2pix
