// Adam as torch::optim::Adam defines it (same options, same per-parameter state, so checkpoints
// and torch::optim serialization are unchanged), with one pass over each parameter on CPUs.
//
// Note [fused Adam]: torch::optim::Adam::step runs eight ATen operations per parameter tensor
// (mul_, add_, mul_, addcmul_, sqrt, div, add_, addcdiv_), two of which allocate a tensor the
// size of the parameter. For the reference U-Net (54 M parameters) that is ~20 passes over
// 216 MB per step and a quarter of a CPU step (docs/performance.md). The fused loop reads the
// parameter, its gradient and both moments once and writes three of them: 7 streams, no
// allocation. It evaluates the same expressions in the same order in float, so it differs from
// torch::optim::Adam only where the compiler contracts a multiply-add (tests: 1e-6 relative).
// Other devices, dtypes, layouts and amsgrad take torch::optim::Adam's own step.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace pix2pix::train {

class FusedAdam : public torch::optim::Adam {
 public:
  FusedAdam(std::vector<torch::Tensor> parameters, torch::optim::AdamOptions options);
  torch::Tensor step(LossClosure closure = nullptr) override;

 private:
  // Every parameter with a gradient is a contiguous CPU float tensor, its gradient a CPU float one.
  bool can_fuse() const;
};

}  // namespace pix2pix::train
