#include "pix2pix/optim/fused_adam.hpp"

#include <ATen/Parallel.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/torch_compat.hpp"
#include "pix2pix/optim/cpu_loops.hpp"

namespace pix2pix::optim {
namespace {

// torch::optim::Adam's per-step scalars of a parameter at step `step` (both paths must agree).
struct StepScalars {
  double sqrt_bias_correction2;  // divided by
  double minus_step_size;        // -lr / (1 - beta1^step)
};

StepScalars step_scalars(const torch::optim::AdamOptions& options, std::int64_t step) {
  const double bias_correction1 = 1 - std::pow(std::get<0>(options.betas()), static_cast<double>(step));
  const double bias_correction2 = 1 - std::pow(std::get<1>(options.betas()), static_cast<double>(step));
  return {std::sqrt(bias_correction2), -(options.lr() / bias_correction1)};
}

// What a fused kernel (ours on CPUs, ATen's on the device) runs over: float32 memory in any dense
// layout, the same for the parameter, its gradient and its moments
// (See Note [channels-last parameters]).
bool dense_float(const torch::Tensor& t) {
  return t.scalar_type() == torch::kFloat32 && !t.is_sparse() && t.is_non_overlapping_and_dense();
}

// Our fused loop's tensors are on the CPU.
bool fusable(const torch::Tensor& t) {
  return t.device().is_cpu() && dense_float(t);
}

// A moment a fused kernel reads: dense float32 on its parameter's device (the layout is compared apart).
bool float_moment(const torch::Tensor& moment, const torch::Tensor& parameter) {
  return dense_float(moment) && moment.device() == parameter.device();
}

bool same_layout(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() && a.strides() == b.strides();
}

// `values` in a fresh tensor of the parameter's dtype and layout (what the fused loop reads).
torch::Tensor like_parameter(const torch::Tensor& parameter, const torch::Tensor& values) {
  return torch::empty_like(parameter, torch::MemoryFormat::Preserve).copy_(values);
}

}  // namespace

FusedAdam::FusedAdam(std::vector<torch::Tensor> parameters, torch::optim::AdamOptions options)
    : torch::optim::Adam(std::move(parameters), options) {}

bool FusedAdam::can_fuse() const {
  for (const auto& group : param_groups()) {
    if (static_cast<const torch::optim::AdamOptions&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params())
      if (p.grad().defined() && !(fusable(p) && p.grad().device().is_cpu() &&
                                  p.grad().scalar_type() == torch::kFloat32 && !p.grad().is_sparse()))
        return false;
  }
  return true;
}

bool FusedAdam::can_foreach() const {
  for (const auto& group : param_groups()) {
    if (static_cast<const torch::optim::AdamOptions&>(group.options()).amsgrad()) return false;
    for (const auto& p : group.params())
      if (p.grad().defined() && p.grad().is_sparse()) return false;
  }
  return true;
}

// Note [optimizer state across LibTorch versions]
// torch::optim's archive names each parameter's state by the address of its TensorImpl when it
// was written, and the parameter groups list those names in order; a load pairs them with the
// current parameters by position. LibTorch 1.x writes the names with c10::guts::to_string, in hex
// ("0x55d3..."), 2.x with std::to_string, in decimal, and 2.x reads them with std::stoull, base 10:
// every hex name becomes 0, the first parameter takes the one state that survives and every other
// parameter a null one, and the next step dereferences it (a checkpoint of LibTorch 1.13 crashed
// LibTorch 2.6). This load reads both spellings as the numbers they are and pairs them as
// LibTorch does, for archives of either version, on either.
void FusedAdam::load(torch::serialize::InputArchive& archive) {
  device_steps_.clear();  // the archive's counts replace them
  c10::IValue version;
  if (!archive.try_read("pytorch_version", version) || !version.isString() || version.toStringRef() != "1.5.0")
    throw Error("the optimizer state is not in torch::optim's format (pytorch_version 1.5.0)");
  const auto address = [](const std::string& name) {
    std::size_t used = 0;
    unsigned long long value = 0;
    try {
      value = std::stoull(name, &used, 0);  // base 0: "0x..." hex, else decimal
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != name.size()) throw Error("the optimizer state names a parameter '" + name + "'");
    return value;
  };
  torch::serialize::InputArchive state_archive;
  archive.read("state", state_archive);
  std::map<unsigned long long, std::unique_ptr<torch::optim::AdamParamState>> saved;
  for (const std::string& name : state_archive.keys()) {
    torch::serialize::InputArchive one;
    state_archive.read(name, one);
    auto state = std::make_unique<torch::optim::AdamParamState>();
    state->serialize(one);
    saved[address(name)] = std::move(state);
  }
  torch::serialize::InputArchive groups_archive;
  archive.read("param_groups", groups_archive);
  std::vector<std::pair<std::vector<std::string>, std::unique_ptr<torch::optim::OptimizerOptions>>> groups;
  torch::optim::detail::serialize<torch::optim::AdamOptions>(groups_archive, groups);
  if (groups.size() != param_groups().size())
    throw Error("the optimizer state has " + std::to_string(groups.size()) + " parameter groups, this optimizer " +
                std::to_string(param_groups().size()));
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto& names = groups[i].first;
    const auto params = param_groups()[i].params();
    if (names.size() != params.size())
      throw Error("the optimizer state's parameter group " + std::to_string(i) + " has " +
                  std::to_string(names.size()) + " parameters, this optimizer's " + std::to_string(params.size()));
    for (std::size_t k = 0; k < params.size(); ++k) {
      auto found = saved.find(address(names[k]));
      if (found == saved.end()) continue;  // no step taken for it yet: Adam creates its state then
      if (!found->second) throw Error("the optimizer state names one parameter's state twice");
      state()[compat::optimizer_state_key(state(), params[k])] = std::move(found->second);
    }
    static_cast<torch::optim::AdamOptions&>(param_groups()[i].options()) =
        static_cast<const torch::optim::AdamOptions&>(*groups[i].second);
  }
}

torch::optim::AdamParamState& FusedAdam::state_for(const torch::Tensor& p, bool float_moments) {
  auto& states = state();
  const auto key = compat::optimizer_state_key(states, p);
  auto found = states.find(key);
  if (found == states.end()) {
    auto fresh = std::make_unique<torch::optim::AdamParamState>();
    fresh->step(0);
    fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));  // the parameter's layout
    fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    found = states.emplace(key, std::move(fresh)).first;
  }
  auto& s = static_cast<torch::optim::AdamParamState&>(*found->second);
  // Moments loaded in another dtype or layout (a checkpoint of a run in the other layout, or
  // another tool's) take the parameter's float layout once.
  if ((float_moments && !float_moment(s.exp_avg(), p)) || !same_layout(s.exp_avg(), p))
    s.exp_avg(like_parameter(p, s.exp_avg()));
  if ((float_moments && !float_moment(s.exp_avg_sq(), p)) || !same_layout(s.exp_avg_sq(), p))
    s.exp_avg_sq(like_parameter(p, s.exp_avg_sq()));
  return s;
}

void FusedAdam::make_state() {
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups())
    for (auto& p : group.params()) state_for(p, /*float_moments=*/true);
}

torch::optim::AdamParamState& FusedAdam::advance_state(const torch::Tensor& p, bool float_moments) {
  auto& s = state_for(p, float_moments);
  s.step(s.step() + 1);
  return s;
}

torch::Tensor& FusedAdam::device_step(const torch::Tensor& p, const torch::optim::AdamParamState& s) {
  auto [entry, fresh] = device_steps_.try_emplace(p.unsafeGetTensorImpl());
  if (fresh)
    entry->second = torch::scalar_tensor(static_cast<double>(s.step()),
                                         torch::TensorOptions().dtype(torch::kFloat32).device(p.device()));
  return entry->second;
}

void FusedAdam::settle_steps(bool keep) {
  if (device_steps_.empty()) return;
  for (auto& group : param_groups())
    for (auto& p : group.params()) {
      const auto found = device_steps_.find(p.unsafeGetTensorImpl());
      if (found == device_steps_.end()) continue;
      // A float32 count is exact to 2^24 steps, as PyTorch's own fused Adam keeps it.
      state_for(p, /*float_moments=*/false).step(std::llround(found->second.item<double>()));
    }
  if (!keep) device_steps_.clear();
}

void FusedAdam::save(torch::serialize::OutputArchive& archive) const {
  // The counts on the device are the state's own, only not yet read back: reading them changes
  // nothing a caller can see, so a const save may. They stay where they are: a CUDA graph of the
  // step holds their addresses (See Note [a step as one CUDA graph]).
  const_cast<FusedAdam*>(this)->settle_steps(/*keep=*/true);
  torch::optim::Adam::save(archive);
}

const torch::Tensor* FusedAdam::device_step_count(const torch::Tensor& p) const {
  const auto found = device_steps_.find(p.unsafeGetTensorImpl());
  return found == device_steps_.end() ? nullptr : &found->second;
}

void FusedAdam::step_unless(const torch::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    if (options.amsgrad()) throw Error("an update decided on the device has no amsgrad (ATen's fused Adam here)");
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& s = state_for(p, /*float_moments=*/true);
      params.push_back(p);
      // backward's own gradients have the parameter's layout already
      grads.push_back(same_layout(p.grad(), p) ? p.grad() : like_parameter(p, p.grad()));
      exp_avgs.push_back(s.exp_avg());
      exp_avg_sqs.push_back(s.exp_avg_sq());
      steps.push_back(device_step(p, s));
    }
    if (params.empty()) continue;
    // As torch.optim.Adam(fused=True) steps under a GradScaler: count, update unless skipped,
    // and take the count back where it was.
    at::_foreach_add_(steps, 1);
    compat::fused_adam(params, grads, exp_avgs, exp_avg_sqs, steps, options.lr(), std::get<0>(options.betas()),
                       std::get<1>(options.betas()), options.weight_decay(), options.eps(), found_inf);
    at::_foreach_sub_(steps, std::vector<torch::Tensor>(steps.size(), found_inf));
  }
  last_kernel_ = Kernel::fused_on_device;
}

torch::Tensor FusedAdam::step(LossClosure closure) {
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  torch::NoGradGuard no_grad;
  settle_steps(/*keep=*/false);  // after updates decided on the device: the host counts from here
  if (can_fuse()) {
    step_cpu_loop();
    last_kernel_ = Kernel::cpu_loop;
  } else if (can_foreach()) {
    step_foreach();
    last_kernel_ = Kernel::foreach_ops;
  } else {
    torch::optim::Adam::step();
    last_kernel_ = Kernel::torch_adam;
  }
  return loss;
}

void FusedAdam::step_cpu_loop() {
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& s = advance_state(p, /*float_moments=*/true);
      const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
      const StepScalars scalars = step_scalars(options, s.step());
      const AdamConstants c{static_cast<float>(beta1),
                            static_cast<float>(1 - beta1),
                            static_cast<float>(beta2),
                            static_cast<float>(1 - beta2),
                            static_cast<float>(scalars.sqrt_bias_correction2),
                            static_cast<float>(options.eps()),
                            static_cast<float>(scalars.minus_step_size),
                            static_cast<float>(options.weight_decay())};
      float* param = p.data_ptr<float>();
      // backward's own gradients have the parameter's layout already
      const torch::Tensor gradient = same_layout(p.grad(), p) ? p.grad() : like_parameter(p, p.grad());
      const float* grad = gradient.data_ptr<float>();
      float* m = s.exp_avg().data_ptr<float>();
      float* v = s.exp_avg_sq().data_ptr<float>();
      at::parallel_for(0, p.numel(), 1 << 16,
                       [&](std::int64_t begin, std::int64_t end) { adam_update(param, grad, m, v, begin, end, c); });
    }
  }
}

void FusedAdam::step_foreach() {
  // See Note [foreach Adam]: torch::optim::Adam::step's expressions, one _foreach op for each.
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs;
    std::vector<c10::Scalar> sqrt_bias_corrections2, minus_step_sizes;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& s = advance_state(p, /*float_moments=*/false);
      const StepScalars scalars = step_scalars(options, s.step());
      params.push_back(p);
      grads.push_back(p.grad());
      exp_avgs.push_back(s.exp_avg());
      exp_avg_sqs.push_back(s.exp_avg_sq());
      sqrt_bias_corrections2.emplace_back(scalars.sqrt_bias_correction2);
      minus_step_sizes.emplace_back(scalars.minus_step_size);
    }
    if (params.empty()) continue;
    if (options.weight_decay() != 0) grads = at::_foreach_add(grads, params, options.weight_decay());
    at::_foreach_mul_(exp_avgs, beta1);
    at::_foreach_add_(exp_avgs, grads, 1 - beta1);
    at::_foreach_mul_(exp_avg_sqs, beta2);
    at::_foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2);
    auto denoms = at::_foreach_sqrt(exp_avg_sqs);
    at::_foreach_div_(denoms, sqrt_bias_corrections2);
    at::_foreach_add_(denoms, options.eps());
    at::_foreach_addcdiv_(params, exp_avgs, denoms, minus_step_sizes);
  }
}

}  // namespace pix2pix::optim
