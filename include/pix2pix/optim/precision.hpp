// Mixed precision: autocast around forward passes (master weights and Adam state stay fp32) and,
// for fp16, a dynamic loss scaler per network.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pix2pix::optim {

enum class Precision { fp32, bf16, fp16 };
Precision parse_precision(const std::string& text);  // Error naming --precision otherwise
std::string to_string(Precision precision);
// fp16 autocast exists only on CUDA: Error naming --precision for fp16 on a CPU device.
void check_precision_supported(Precision precision, const torch::Device& device);

// Autocast on for the guard's lifetime (no-op for fp32); restores the previous state.
class AutocastGuard {
 public:
  AutocastGuard(const torch::Device& device, Precision precision);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_type_;
  bool previous_enabled_ = false;
  c10::ScalarType previous_dtype_;
};

// `input` in the dtype autocast's convolutions compute in under `precision` (bf16, fp16), itself
// for fp32: a batch that several forward passes read, cast once. See Note [the batch cast once]
torch::Tensor in_compute_dtype(const torch::Tensor& input, Precision precision);

struct LossScalerOptions {
  bool enabled = false;
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  std::int64_t growth_interval = 2000;  // clean steps before the scale grows
};

// Dynamic loss scaling as a state machine: scale the loss, average and unscale the gradients,
// then update(found_non_finite) says whether the optimizer may step. The non-finite check must
// see the averaged gradients so that every rank decides the same. After keep_on(device) the
// scale and both counts live in tensors there and update(tensor) changes them without a host
// read (See Note [updates decided on the device]); the host accessors then read the device.
class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions options = {});
  double scale() const;
  bool enabled() const { return options_.enabled; }
  // Returns true when the step should be taken (gradients finite), false when it is skipped.
  bool update(bool found_non_finite);
  std::int64_t skipped_steps() const;
  std::int64_t clean_steps() const;

  // From now on the state lives on `device` (0-dim tensors: a float32 scale, an int32 clean-step
  // count as ATen's _amp_update_scale_ keeps them, a float64 skip count).
  void keep_on(const torch::Device& device);
  bool on_device() const { return scale_on_device_.defined(); }
  // `loss` times the scale, on the device or the host as the state is (`loss` itself's value
  // when scaling is off).
  torch::Tensor scaled(const torch::Tensor& loss) const;
  // On the device: what unscales the gradients (float32, 0-dim; 1 when scaling is off).
  torch::Tensor inverse_scale() const;
  // On the device: `found_non_finite` (float32, 0-dim, 1 where the gradients were not finite).
  void update(const torch::Tensor& found_non_finite);

  std::vector<double> state() const;  // for checkpoints
  void restore(const std::vector<double>& state);

 private:
  LossScalerOptions options_;
  double scale_;
  std::int64_t clean_ = 0;    // consecutive finite steps since the last change
  std::int64_t skipped_ = 0;  // total skipped steps
  torch::Tensor scale_on_device_, clean_on_device_, skipped_on_device_, one_on_device_;  // after keep_on
};

// Divides every defined gradient of `parameters` by `scale` (if != 1) and returns whether any
// gradient holds a NaN or an infinity.
bool unscale_and_check(const std::vector<torch::Tensor>& parameters, double scale);
// The same without a host read: multiplies by `inverse_scale` (float32, 0-dim, on the gradients'
// device) and returns a float32 0-dim tensor there, 1 where a gradient held a
// NaN or an infinity (ATen's _amp_foreach_non_finite_check_and_unscale_, as torch.amp's GradScaler).
torch::Tensor unscale_and_check_on_device(const std::vector<torch::Tensor>& parameters,
                                          const torch::Tensor& inverse_scale);

}  // namespace pix2pix::optim
