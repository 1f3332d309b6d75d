// Random weights for tests that compare one implementation of a network with another (export,
// the PyTorch reference): every tensor matters, so an export or a layer that dropped, swapped or
// misplaced any of them would compute something else.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <string>

namespace pix2pix::fixtures {

inline bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Seeded random parameters and batch-norm running statistics far from (0, 1); eval mode after.
inline void randomise(torch::nn::Module& network, std::uint64_t seed) {
  torch::manual_seed(seed);
  torch::NoGradGuard no_grad;
  for (auto& p : network.named_parameters()) {
    torch::Tensor& t = p.value();
    if (t.dim() == 4)  // filters scaled to their fan-in, so that deep outputs neither vanish nor saturate
      t.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(t[0].numel())));
    else if (ends_with(p.key(), "weight"))  // norm scales
      t.uniform_(0.5, 1.5);
    else
      t.normal_(0.0, 0.1);
  }
  for (auto& b : network.named_buffers()) {
    if (ends_with(b.key(), "running_mean")) b.value().uniform_(-0.3, 0.3);
    if (ends_with(b.key(), "running_var")) b.value().uniform_(0.5, 2.0);
  }
  network.eval();
}

}  // namespace pix2pix::fixtures
