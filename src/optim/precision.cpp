#include "pix2pix/optim/precision.hpp"

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/torch_compat.hpp"
#include "pix2pix/optim/cpu_loops.hpp"

namespace pix2pix::optim {

namespace {
const Choices<Precision> kPrecisionChoices = {
    {"fp32", Precision::fp32}, {"bf16", Precision::bf16}, {"fp16", Precision::fp16}};

// The dtype autocast computes in for a reduced precision (bf16 or fp16).
c10::ScalarType reduced_dtype(Precision precision) {
  return precision == Precision::bf16 ? torch::kBFloat16 : torch::kFloat16;
}
}  // namespace

Precision parse_precision(const std::string& text) {
  return parse_choice(text, "--precision", kPrecisionChoices);
}
std::string to_string(Precision value) {
  return choice_name(value, kPrecisionChoices);
}

void check_precision_supported(Precision precision, const torch::Device& device) {
  if (precision == Precision::fp16 && !device.is_cuda())
    throw Error("--precision fp16 needs a CUDA device (LibTorch autocasts fp16 only on GPUs); use bf16 on CPU");
}

AutocastGuard::AutocastGuard(const torch::Device& device, Precision precision)
    : device_type_(device.type()), previous_dtype_(c10::ScalarType::Float) {
  if (precision == Precision::fp32) return;
  check_precision_supported(precision, device);
  active_ = true;
  previous_enabled_ = compat::autocast_enabled(device_type_);
  previous_dtype_ = compat::autocast_dtype(device_type_);
  compat::set_autocast(device_type_, true, reduced_dtype(precision));
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  // Leaving the outermost autocast region drops the cast-weight cache, as torch.autocast does.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast(device_type_, previous_enabled_, previous_dtype_);
}

// Note [the batch cast once]
// Autocast casts a float32 input to bf16 or fp16 at each convolution that reads it, and a
// torch::cat of a float32 image with a bf16 one (the discriminator's pair: A beside the
// generator's output) is float32: the pair is promoted, written at twice the bytes and cast
// back at the discriminator's first convolution. On an H200 at 256², batch 64 in bf16, the
// step spent 0.5 ms of its 25 on the casts and the wider concatenations of its batch
// (docs/performance.md, "Issue 46 without a GPU: the skip's gradient in one piece, and the batch
// cast once"). Cast once at the step's start, every convolution
// reads the same values (autocast's cast is this cast, and a bf16 or fp16 image converts to
// float32 and back exactly), and the gradients flowing back through the concatenation are those
// of the float32 one (tests/optim/schedule_precision_test.cpp). The losses that compare images
// (L1) keep the float32 target: outside autocast, they compute in float32 as before.
torch::Tensor in_compute_dtype(const torch::Tensor& input, Precision precision) {
  return precision == Precision::fp32 ? input : input.to(reduced_dtype(precision));
}

LossScaler::LossScaler(LossScalerOptions options) : options_(options), scale_(options.init_scale) {
  if (options_.enabled && !(options_.init_scale > 0 && options_.growth_factor > 1 && options_.backoff_factor > 0 &&
                            options_.backoff_factor < 1 && options_.growth_interval > 0))
    throw Error("loss scaler: need init > 0, growth > 1, 0 < backoff < 1, interval > 0");
}

bool LossScaler::update(bool found_non_finite) {
  if (on_device()) throw Error("loss scaler: its state is on the device; update it with a tensor");
  if (!options_.enabled) return !found_non_finite;
  if (found_non_finite) {
    scale_ *= options_.backoff_factor;
    clean_ = 0;
    ++skipped_;
    return false;
  }
  if (++clean_ >= options_.growth_interval) {
    scale_ *= options_.growth_factor;
    clean_ = 0;
  }
  return true;
}

double LossScaler::scale() const {
  if (!options_.enabled) return 1.0;
  return on_device() ? scale_on_device_.item<double>() : scale_;
}

std::int64_t LossScaler::skipped_steps() const {
  return on_device() ? std::llround(skipped_on_device_.item<double>()) : skipped_;
}

std::int64_t LossScaler::clean_steps() const {
  return on_device() ? clean_on_device_.item<std::int64_t>() : clean_;
}

void LossScaler::keep_on(const torch::Device& device) {
  const auto on = torch::TensorOptions().device(device);
  // The scale is a power of two (2^16 halved and doubled), exact in float32.
  scale_on_device_ = torch::scalar_tensor(scale_, on.dtype(torch::kFloat32));
  clean_on_device_ = torch::scalar_tensor(clean_, on.dtype(torch::kInt32));
  skipped_on_device_ = torch::scalar_tensor(static_cast<double>(skipped_), on.dtype(torch::kFloat64));
  one_on_device_ = torch::scalar_tensor(1.0, on.dtype(torch::kFloat32));
}

torch::Tensor LossScaler::scaled(const torch::Tensor& loss) const {
  // Without scaling the loss itself: a product with 1 is a kernel, and its backward another.
  if (!options_.enabled) return loss;
  return on_device() ? loss * scale_on_device_ : loss * scale_;
}

torch::Tensor LossScaler::inverse_scale() const {
  return options_.enabled ? scale_on_device_.reciprocal() : one_on_device_;
}

void LossScaler::update(const torch::Tensor& found_non_finite) {
  if (!on_device()) throw Error("loss scaler: its state is on the host; update it with a bool");
  if (!options_.enabled) return;  // as update(bool): nothing to count or scale
  skipped_on_device_.add_(found_non_finite);
  // The same machine as update(bool): back off on a skip, grow after growth_interval clean steps.
  at::_amp_update_scale_(scale_on_device_, clean_on_device_, found_non_finite, options_.growth_factor,
                         options_.backoff_factor, options_.growth_interval);
}

std::vector<double> LossScaler::state() const {
  return {on_device() ? scale_on_device_.item<double>() : scale_, static_cast<double>(clean_steps()),
          static_cast<double>(skipped_steps())};
}

void LossScaler::restore(const std::vector<double>& state) {
  if (state.size() != 3) throw Error("loss scaler state has " + std::to_string(state.size()) + " values, expected 3");
  scale_ = state[0];
  clean_ = static_cast<std::int64_t>(state[1]);
  skipped_ = static_cast<std::int64_t>(state[2]);
  if (on_device()) keep_on(scale_on_device_.device());
}

bool unscale_and_check(const std::vector<torch::Tensor>& parameters, double scale) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> flags;
  bool found_on_host = false;
  for (const auto& p : parameters) {
    auto g = p.grad();
    if (!g.defined()) continue;
    if (scale != 1.0) g.mul_(1.0 / scale);
    if (g.device().is_cpu() && g.scalar_type() == torch::kFloat32 && g.is_non_overlapping_and_dense())
      found_on_host = found_on_host || has_non_finite(g.data_ptr<float>(), g.numel());
    else
      flags.push_back(g.isfinite().all().logical_not());
  }
  if (found_on_host) return true;
  if (flags.empty()) return false;
  // One host sync for all device gradients rather than one per tensor.
  return torch::stack(flags).any().item<bool>();
}

torch::Tensor unscale_and_check_on_device(const std::vector<torch::Tensor>& parameters,
                                          const torch::Tensor& inverse_scale) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : parameters)
    if (p.grad().defined()) grads.push_back(p.grad());
  auto found = torch::zeros({}, inverse_scale.options());
  if (!grads.empty()) at::_amp_foreach_non_finite_check_and_unscale_(grads, found, inverse_scale);
  return found;
}

}  // namespace pix2pix::optim
