#include "pix2pix/optim/precision.hpp"

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/torch_compat.hpp"
#include "pix2pix/optim/cpu_loops.hpp"

namespace pix2pix::optim {

namespace {
const Choices<Precision> kPrecisionChoices = {
    {"fp32", Precision::fp32}, {"bf16", Precision::bf16}, {"fp16", Precision::fp16}};
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
  compat::set_autocast(device_type_, true, precision == Precision::bf16 ? torch::kBFloat16 : torch::kFloat16);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  // Leaving the outermost autocast region drops the cast-weight cache, as torch.autocast does.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast(device_type_, previous_enabled_, previous_dtype_);
}

LossScaler::LossScaler(LossScalerOptions options) : options_(options), scale_(options.init_scale) {
  if (options_.enabled && !(options_.init_scale > 0 && options_.growth_factor > 1 && options_.backoff_factor > 0 &&
                            options_.backoff_factor < 1 && options_.growth_interval > 0))
    throw Error("loss scaler: need init > 0, growth > 1, 0 < backoff < 1, interval > 0");
}

bool LossScaler::update(bool found_non_finite) {
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

std::vector<double> LossScaler::state() const {
  return {scale_, static_cast<double>(clean_), static_cast<double>(skipped_)};
}

void LossScaler::restore(const std::vector<double>& state) {
  if (state.size() != 3) throw Error("loss scaler state has " + std::to_string(state.size()) + " values, expected 3");
  scale_ = state[0];
  clean_ = static_cast<std::int64_t>(state[1]);
  skipped_ = static_cast<std::int64_t>(state[2]);
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

}  // namespace pix2pix::optim
