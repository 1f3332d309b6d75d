#include "pix2pix/optim/update_group.hpp"

#include <ATen/record_function.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/stopwatch.hpp"
#include "pix2pix/common/torch_compat.hpp"
#include "pix2pix/optim/fused_adam.hpp"

namespace pix2pix::optim {

torch::MemoryFormat parameter_memory_format(const UpdateOptions& options, const torch::Device& device) {
  return options.channels_last.value_or(device.is_cuda() && options.precision != Precision::fp32)
             ? torch::MemoryFormat::ChannelsLast
             : torch::MemoryFormat::Contiguous;
}

// Note [updates decided on the device]: whether an update may be taken (no gradient NaN or
// infinite, after averaging) and the fp16 loss scale that follows from it were decided on the
// host: one read of a device flag per update group and step, and each read waits for all work
// queued before it, so a GPU step emptied the device's queue twice and the host could not run
// ahead (the cost is the launch-bound time of a small batch, and a CUDA graph cannot hold a host
// read at all). Here the decision stays on the device, as torch.amp's GradScaler and
// torch.optim.Adam(fused=True) take it: ATen's _amp_foreach_non_finite_check_and_unscale_ writes a
// found_inf flag while it unscales, ATen's fused Adam skips its update where the flag is 1 (the
// step counts, tensors on the device, taken back), _amp_update_scale_ moves the scale, and the
// step returns the flag, which the run loop sums with the losses and reads where it reads them
// (See Note [no host reads in the step]). On CPUs a host read costs nothing and ours is the
// faster Adam there (See Note [fused Adam]), so auto is on for GPU ranks only; LibTorch before 2.4
// has no fused Adam with a skip flag, and there --device-update on is refused.
bool decides_on_device(const UpdateOptions& options, const torch::Device& device) {
  return options.device_update.value_or(device.is_cuda() && compat::kFusedAdamWithSkip);
}

std::string describe_updates(const UpdateOptions& options, const torch::Device& device) {
  const std::string how = on_off_auto_name(options.device_update);
  return decides_on_device(options, device)
             ? "Adam skips non-finite gradients on the device, fused (--device-update " + how + ")"
             : "Adam skips non-finite gradients after a host read per step (--device-update " + how + ")";
}

UpdateGroup::UpdateGroup(std::string label, std::string what, std::vector<torch::Tensor> parameters,
                         const UpdateOptions& options, const torch::Device& device, dist::Communicator& comm)
    : label_(std::move(label)),
      what_(std::move(what)),
      parameters_(std::move(parameters)),
      scaler_({options.precision == Precision::fp16 || options.force_loss_scaling}) {
  // Note [channels-last parameters]
  // With --channels-last (auto: GPU ranks in bf16 or fp16, where cuDNN's tensor-core convolutions
  // work in NHWC and NCHW costs a transpose around each) the group lays out its 4-D parameters
  // NHWC before anything else holds them: convolutions then read weights and write activations
  // NHWC, autograd gives each gradient its parameter's strides, GradientSync's bucket views take
  // them (See Note [gradients as bucket views]) and FusedAdam keeps its moments in the same layout,
  // so its loops run over the memory of all four in one order. The batches take the layout too
  // (parameter_memory_format, LoaderOptions::memory_format): in NCHW each step transposed the
  // input of G's first convolution and of D's three, forward and backward. Only the layout changes,
  // never a value: checkpoints, replica checks and broadcasts hold the same numbers, so a run saved
  // in one layout resumes in the other. On CPUs it did not pay (docs/performance.md): off there
  // unless asked.
  if (parameter_memory_format(options, device) == torch::MemoryFormat::ChannelsLast) {
    torch::NoGradGuard no_grad;
    for (auto& p : parameters_)
      if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
  }
  on_device_ = optim::decides_on_device(options, device);
  if (on_device_ && !compat::kFusedAdamWithSkip)  // the options refuse it first
    throw Error("--device-update on needs LibTorch 2.4 or newer (ATen's fused Adam with a skip flag)");
  if (on_device_) scaler_.keep_on(device);
  const auto adam = torch::optim::AdamOptions(options.lr).betas({options.beta1, options.beta2});
  optimizer_ = std::make_unique<FusedAdam>(parameters_, adam);
  const bool overlap = options.overlap_grad_sync.value_or(device.is_cuda());
  sync_ =
      std::make_unique<dist::GradientSync>(comm, parameters_, options.bucket_bytes, overlap, options.grad_wire_dtype);
  // An explicit --overlap-grad-sync on that the communicator cannot honour (MPI's with GPU
  // gradients: FUNNELED, and backward runs on LibTorch's device threads) is said, not dropped.
  // See Note [overlapped all-reduce].
  if (options.overlap_grad_sync.value_or(false) && !sync_->overlaps() && comm.world() > 1 && comm.rank() == 0)
    std::fprintf(stderr,
                 "warning: --overlap-grad-sync on: the %s communicator starts collectives only from the training "
                 "thread, so %s's all-reduce runs after backward\n",
                 comm.name().c_str(), label_.c_str());
}

std::string UpdateGroup::checkpoint_key() const {
  std::string key = label_;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  return key;
}

void UpdateGroup::make_optimizer_state() {
  static_cast<FusedAdam&>(*optimizer_).make_state();
}

void UpdateGroup::zero_grad() {
  sync_->zero_grad();
}

// Note [named ranges in a trace]
// Each phase of a group's update runs inside a range named "pix2pix G backward", "pix2pix G
// average", "pix2pix G update" (D, ...), which a profiler's trace shows (bench --trace,
// bench/trace_summary.py): the time of work that is no LibTorch operator (the gradient
// all-reduce, ours Adam's loops on CPUs) and of the operators inside then has a name. Without a
// profiler a range costs one check of a flag; its name is made only when one records.
void UpdateGroup::backward(const torch::Tensor& loss) {
  RECORD_USER_SCOPE("pix2pix " + label_ + " backward");
  scaler_.scaled(loss).backward();
}

void UpdateGroup::average() {
  RECORD_USER_SCOPE("pix2pix " + label_ + " average");
  const auto start = std::chrono::steady_clock::now();
  sync_->average();
  sync_seconds_ += seconds_since(start);
}

torch::Tensor UpdateGroup::step() {
  RECORD_USER_SCOPE("pix2pix " + label_ + " update");
  const torch::Tensor skipped = on_device_ ? update_on_device() : update_on_host();
  sync_->release();  // See Note [gradients dropped after the update]
  return skipped;
}

torch::Tensor UpdateGroup::update_on_device() {  // See Note [updates decided on the device]
  const torch::Tensor found_inf = unscale_and_check_on_device(parameters_, scaler_.inverse_scale());
  static_cast<FusedAdam&>(*optimizer_).step_unless(found_inf);
  scaler_.update(found_inf);
  return found_inf;
}

torch::Tensor UpdateGroup::update_on_host() {
  const bool non_finite = unscale_and_check(parameters_, scaler_.scale());
  const bool take = scaler_.update(non_finite);
  if (take) optimizer_->step();
  return torch::scalar_tensor(take ? 0.0 : 1.0, torch::kFloat32);
}

void UpdateGroup::set_learning_rate(double lr) {
  for (auto& group : optimizer_->param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
}

}  // namespace pix2pix::optim
