// Networks that one optimiser updates together (Pix2Pix: G, D; CycleGAN: both generators, both
// discriminators): their Adam, the averaging of their gradients over ranks and their loss
// scaler. A model's step calls backward() and apply() on each of its groups; the run loop sees
// the groups to set the learning rate, checkpoint them and report their scales and skips.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/dist/gradient_sync.hpp"
#include "pix2pix/optim/precision.hpp"

namespace pix2pix::optim {

// What an update group is told: Adam's settings, the gradient all-reduce's, mixed precision.
struct UpdateOptions {
  double lr = 2e-4;  // at the start; the run loop sets each epoch's (set_learning_rate)
  double beta1 = 0.5, beta2 = 0.999;
  Precision precision = Precision::fp32;
  bool force_loss_scaling = false;  // tests: run the fp16 loss-scaler path in fp32
  std::int64_t bucket_bytes = 25 << 20;
  std::optional<bool> overlap_grad_sync;                // unset (auto): on with GPUs, off on CPUs
  torch::ScalarType grad_wire_dtype = torch::kFloat32;  // See Note [bf16 gradients on the wire]
  std::optional<bool>
      channels_last;  // unset (auto): on for GPU ranks in bf16/fp16 (See Note [channels-last parameters])
  // unset (auto): on for GPU ranks where compat::kFusedAdamWithSkip (See Note [updates decided on the device])
  std::optional<bool> device_update;
};

// The layout of an update group's 4-D parameters with `options` on `device`, which the batches
// that meet them take too: ChannelsLast where --channels-last says so (auto: GPU ranks in bf16 or
// fp16), else Contiguous (NCHW). See Note [channels-last parameters].
torch::MemoryFormat parameter_memory_format(const UpdateOptions& options, const torch::Device& device);
// Whether an update group with `options` on `device` decides its updates on the device.
bool decides_on_device(const UpdateOptions& options, const torch::Device& device);
// The start-up line of that: "decided on the device (fused Adam, ...)" or "...".
std::string describe_updates(const UpdateOptions& options, const torch::Device& device);

class UpdateGroup {
 public:
  // `label`: "G", "D" (the metrics column scale_<label>, the checkpoint keys optimizer_<label> and
  // scaler_<label> in lower case); `what`: "generator", "discriminator" (messages).
  UpdateGroup(std::string label, std::string what, std::vector<torch::Tensor> parameters, const UpdateOptions& options,
              const torch::Device& device, dist::Communicator& comm);
  UpdateGroup(const UpdateGroup&) = delete;
  UpdateGroup& operator=(const UpdateGroup&) = delete;

  const std::string& label() const { return label_; }
  const std::string& what() const { return what_; }
  std::string checkpoint_key() const;  // label in lower case

  // Before a backward into these parameters (See Note [gradients as bucket views]: never the optimiser's).
  void zero_grad();
  // backward() of `loss` times the loss scale.
  void backward(const torch::Tensor& loss);
  // After backward: the gradients become the mean over ranks (timed: sync_seconds()).
  void average();
  // Unscales and checks the averaged gradients; Adam steps unless one is not finite. Every rank
  // takes the same decision (it follows averaged gradients). Returns 1 where the update was
  // skipped, 0 where it was taken: a float32 0-dim tensor, on the device where the group
  // decides there (no host read: See Note [updates decided on the device]), else on the host.
  // A world of one then drops the gradients (See Note [gradients dropped after the update]).
  torch::Tensor step();
  bool decides_on_device() const { return on_device_; }

  void set_learning_rate(double lr);
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  LossScaler& scaler() { return scaler_; }
  const LossScaler& scaler() const { return scaler_; }
  const std::vector<torch::Tensor>& parameters() const { return parameters_; }
  double sync_seconds() const { return sync_seconds_; }  // in average() since the last reset
  const dist::GradientSync& gradient_sync() const { return *sync_; }
  // On the stream that will run the step (See Note [accumulators made on the step's stream]).
  void renew_hooks() { sync_->renew_hooks(); }
  // The optimiser's state before the first step (See Note [the optimiser's state before the first step]).
  void make_optimizer_state();
  void reset_sync_seconds() { sync_seconds_ = 0; }

 private:
  torch::Tensor update_on_device();  // step()'s decision and update, each where on_device_ says
  torch::Tensor update_on_host();

  std::string label_, what_;
  std::vector<torch::Tensor> parameters_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<dist::GradientSync> sync_;
  LossScaler scaler_;
  bool on_device_ = false;
  double sync_seconds_ = 0;
};

}  // namespace pix2pix::optim
