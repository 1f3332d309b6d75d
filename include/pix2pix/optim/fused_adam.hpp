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
//
// Note [foreach Adam]: on GPUs (and for any other dtype or layout) the same eight operations run
// as ATen's _foreach_* ops over all parameters of a group at once, PyTorch's multi_tensor Adam:
// on CUDA each is a few multi-tensor-apply kernels for the whole network instead of one kernel
// per parameter tensor (~100 tensors × 8 launches a step for the reference networks; launches,
// not bytes, bound the optimizer of a small-batch GPU step). Same expressions in the same order;
// on CPUs ATen runs them tensor by tensor, so there they equal torch::optim::Adam bit for bit.
// Only amsgrad and sparse gradients take torch::optim::Adam's own step.
#pragma once

#include <torch/torch.h>

#include <unordered_map>
#include <vector>

namespace pix2pix::optim {

class FusedAdam : public torch::optim::Adam {
 public:
  // How the last step ran (tests, bench).
  enum class Kernel { none, cpu_loop, foreach_ops, torch_adam, fused_on_device };

  FusedAdam(std::vector<torch::Tensor> parameters, torch::optim::AdamOptions options);
  torch::Tensor step(LossClosure closure = nullptr) override;
  Kernel last_kernel() const { return last_kernel_; }
  // torch::optim::Adam's archive, as any LibTorch since 1.5 wrote it; Error when it does not fit
  // this optimizer's parameter groups.
  // See Note [optimizer state across LibTorch versions].
  void load(torch::serialize::InputArchive& archive) override;
  // torch::optim::Adam's archive, with the step counts step_unless keeps on the device read back.
  void save(torch::serialize::OutputArchive& archive) const override;

  // See Note [updates decided on the device]: one update of every parameter with a gradient,
  // skipped as a whole where `found_inf` (a float32 0-dim tensor on the parameters' device)
  // holds 1, with no host read: ATen's fused Adam, each parameter's step count a float32
  // tensor on its device that the skip leaves unchanged. Needs compat::kFusedAdamWithSkip, float32
  // dense parameters, no amsgrad. step() and save() take the counts back into the torch::optim state.
  void step_unless(const torch::Tensor& found_inf);
  // p's step count on the device, which step_unless keeps and save() leaves in place (a captured
  // step holds it); null before p's first step_unless, after load() and after a host step().
  const torch::Tensor* device_step_count(const torch::Tensor& p) const;
  // Every parameter's state now, as its first step would make it (zero moments in the parameter's
  // float layout, step 0), on the current stream; a state that exists stays.
  // See Note [the optimiser's state before the first step].
  void make_state();

 private:
  // Every parameter with a gradient is a dense CPU float tensor, in any layout, its gradient a CPU
  // float one. See Note [channels-last parameters].
  bool can_fuse() const;
  // No amsgrad, no sparse gradient (See Note [foreach Adam]).
  bool can_foreach() const;
  // p's Adam state (created as torch::optim::Adam creates it), moments in p's layout (float with
  // `float_moments`); the step count advanced.
  torch::optim::AdamParamState& advance_state(const torch::Tensor& p, bool float_moments);
  // The same without advancing the step count.
  torch::optim::AdamParamState& state_for(const torch::Tensor& p, bool float_moments);
  // p's step count on its device (step_unless), from the state's the first time.
  torch::Tensor& device_step(const torch::Tensor& p, const torch::optim::AdamParamState& s);
  // Writes the counts step_unless keeps into the states (a host read); drops them unless `keep`.
  void settle_steps(bool keep);
  void step_cpu_loop();
  void step_foreach();

  Kernel last_kernel_ = Kernel::none;
  std::unordered_map<const c10::TensorImpl*, torch::Tensor> device_steps_;  // by parameter
};

}  // namespace pix2pix::optim
