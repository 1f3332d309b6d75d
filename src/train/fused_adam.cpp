#include "pix2pix/train/fused_adam.hpp"

#include <ATen/Parallel.h>

#include <cmath>

#include "pix2pix/train/cpu_loops.hpp"
#include "pix2pix/train/torch_compat.hpp"

namespace pix2pix::train {
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

bool fusable(const torch::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous() && !t.is_sparse();
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

torch::optim::AdamParamState& FusedAdam::advance_state(const torch::Tensor& p, bool float_moments) {
  auto& states = state();
  const auto key = compat::optimizer_state_key(states, p);
  auto found = states.find(key);
  if (found == states.end()) {
    auto fresh = std::make_unique<torch::optim::AdamParamState>();
    fresh->step(0);
    fresh->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Contiguous));
    fresh->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Contiguous));
    found = states.emplace(key, std::move(fresh)).first;
  }
  auto& s = static_cast<torch::optim::AdamParamState&>(*found->second);
  // Moments loaded in another layout or dtype (not ours: we save contiguous float ones)
  // become contiguous float once.
  if (float_moments && (!fusable(s.exp_avg()) || !fusable(s.exp_avg_sq()))) {
    s.exp_avg(s.exp_avg().to(torch::kFloat32).contiguous());
    s.exp_avg_sq(s.exp_avg_sq().to(torch::kFloat32).contiguous());
  }
  s.step(s.step() + 1);
  return s;
}

torch::Tensor FusedAdam::step(LossClosure closure) {
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  torch::NoGradGuard no_grad;
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
      const torch::Tensor gradient = p.grad().contiguous();  // backward's own are already
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

}  // namespace pix2pix::train
