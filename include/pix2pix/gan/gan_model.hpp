// What the run loop (trainer.hpp) knows of a model: its networks and update groups, a step that
// turns a batch into losses, what validation translates with, and the shape a checkpoint must
// match. Pix2Pix (pix2pix_model.hpp) and CycleGAN (cyclegan_model.hpp) are two, made by
// the registry (model_registry.hpp); the loop has no code of its own for any of them:
// gradient sync and loss scaling live in the update groups the step drives, and replica checks,
// checkpoints, resume and the collective log go over networks() and update_groups().
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/gan/image_pool.hpp"
#include "pix2pix/gan/model_options.hpp"
#include "pix2pix/gan/named_network.hpp"
#include "pix2pix/gan/step_phases.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/optim/update_group.hpp"

namespace pix2pix::gan {

// Note [no host reads in the step]: reading a loss on the host (.item()) waits for the device to
// finish everything queued before it, so on GPUs each read empties the queue that lets the host
// run ahead of the device. A step leaves its losses on the device; the epoch loop sums them
// there and reads them where it reports: when the progress bar redraws and at the end of an
// epoch (or a graceful stop). Whether an update is skipped is decided on the device too where
// the update groups decide there (See Note [updates decided on the device]); else the non-finite
// check reads one flag per update group and step. The collective stop poll goes over MPI.
struct StepLosses {
  torch::Tensor values;  // float64 [loss_names().size()], detached, on the device; unscaled, weights applied
  // float64 [update_groups().size()]: 1 where non-finite gradients left the group's update out, on
  // the device that decided (See Note [updates decided on the device])
  torch::Tensor skipped;
  std::vector<double> host() const;        // a device sync
  std::vector<bool> skipped_host() const;  // a device sync
};

// StepLosses::skipped from UpdateGroup::step()'s results, in update_groups() order.
torch::Tensor skipped_flags(const std::vector<torch::Tensor>& skipped);

// What the data tell a model before it builds its networks.
struct ModelInputs {
  std::int64_t channels_a = 0, channels_b = 0;
  std::int64_t train_side = 0;                 // the side of the training images after cropping
  std::int64_t val_height = 0, val_width = 0;  // validation runs on whole val images
  // --sync-bn on: the sum over ranks batch-norm layers normalise with (empty: each rank's batch).
  nets::BatchStatsSum batch_stats_sum;
  // --fused-kernels on: the networks' stand-ins are our CUDA kernels' (dist/fused_activation.hpp),
  // not ATen's operations.
  bool fused_kernels = false;
};

// What the models' constructors and steps share.
// The networks' batch norm with the LeakyReLU after it, their stand-in under --fused-kernels
// (See Note [fused batch norm and LeakyReLU]): a BatchNorm2d through dist::batch_norm_leaky_relu; a
// SyncBatchNorm2d over ranks in training through the kernels over ranks where they take x, else its
// forward and ATen's leaky_relu_. Error for any other layer.
torch::Tensor batch_norm_leaky_relu(torch::nn::Module& norm, const torch::Tensor& x, double slope);
// The U-Net's concatenation with the outer level's ReLU, their stand-in under --fused-kernels: with
// no norm dist::concat_relu (See Note [fused concatenation and ReLU]); with the inner level's last
// batch norm, a BatchNorm2d through dist::concat_batch_norm_relu
// (See Note [fused concatenation, batch norm and ReLU]), a SyncBatchNorm2d over ranks in training
// through the kernels over ranks where they take the call, else its forward and dist::concat_relu.
// Error for any other layer.
torch::Tensor concat_batch_norm_relu(const torch::Tensor& skip, const torch::Tensor& inner, torch::nn::Module* norm);
// The generator (A to B) `options` ask for: --netG, the U-Net depth from the training side when
// not given, and Error naming the training or val images when their sides do not fit it (or the
// PatchGAN the side).
nets::GeneratorOptions generator_options(const ModelOptions& options, const ModelInputs& inputs);
// A PatchGAN of `channels` input channels with the run's --ndf, --n-layers-d, --norm (and --sync-bn).
nets::DiscriminatorOptions discriminator_options(const ModelOptions& options, const ModelInputs& inputs,
                                                 std::int64_t channels);
// Freezes (false) or thaws (true) every parameter of `modules`: the discriminators while the
// generators learn.
void set_requires_grad(const std::vector<torch::nn::Module*>& modules, bool flag);
// A loss as StepLosses holds it: detached, float64, still on its device.
torch::Tensor loss_value(const torch::Tensor& loss);

// GanModel::capture_refusal of a model with image pools (image_pool.hpp): they draw on the host.
inline constexpr const char* kImagePoolsChooseOnTheHost =
    "its image pools choose on the host, at every step, which generated images D sees";

class GanModel {
 public:
  virtual ~GanModel() = default;

  // One optimisation step of every update group on this rank's batch (See Note [no host reads in the step]).
  virtual StepLosses step(const data::Batch& batch) = 0;
  // Names of StepLosses::values, in order: metrics.csv columns, the epoch line.
  virtual const std::vector<std::string>& loss_names() const = 0;
  // The progress bar's short status from host copies of the losses.
  virtual std::string progress_status(const std::vector<double>& losses) const = 0;
  // Every trained network, in a fixed order (the same on every rank).
  virtual std::vector<NamedNetwork> networks() = 0;
  virtual std::vector<optim::UpdateGroup*> update_groups() = 0;
  // The generator validation translates A with, and best_generator.pt holds.
  virtual nets::Generator& translator() = 0;
  // The generator back (B to A) of a model that has one (CycleGAN's G_B), else null: validation
  // scores the cycle-reconstruction PSNR with it, which is what an unpaired val split allows.
  virtual nets::Generator* reverse_translator() { return nullptr; }
  // Each rank's own state beyond the networks: its image pools by checkpoint key ("fake_B"), in
  // a fixed order; checkpoints keep every rank's (See Note [checkpointed image pools]).
  virtual std::vector<std::pair<std::string, ImagePool*>> pools() { return {}; }
  // The options that shape the networks (nets/model_shape.hpp); a checkpoint must match it.
  virtual std::string shape() const = 0;
  // Why step() cannot be captured as a CUDA graph, "" where it can: it reads or draws nothing on
  // the host and keeps no host state between steps (See Note [a step as one CUDA graph]).
  virtual std::string capture_refusal() const { return "its step draws or keeps state on the host"; }

  // Charge each phase of every later step to `phases` (nullptr: stop); bench --phases.
  void set_phases(StepPhases* phases) { phases_ = phases; }

 protected:
  void begin_phases() {
    if (phases_ != nullptr) phases_->begin();
  }
  void end_phase(StepPhase phase) {
    if (phases_ != nullptr) phases_->end(phase);
  }

 private:
  StepPhases* phases_ = nullptr;
};

}  // namespace pix2pix::gan
