#include "pix2pix/train/fused_adam.hpp"

#include <ATen/Parallel.h>

#include <cmath>

#include "pix2pix/train/cpu_loops.hpp"
#include "pix2pix/train/torch_compat.hpp"

namespace pix2pix::train {
namespace {

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

torch::Tensor FusedAdam::step(LossClosure closure) {
  if (!can_fuse()) return torch::optim::Adam::step(std::move(closure));
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  auto& states = state();
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
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
      if (!fusable(s.exp_avg()) || !fusable(s.exp_avg_sq())) {
        s.exp_avg(s.exp_avg().to(torch::kFloat32).contiguous());
        s.exp_avg_sq(s.exp_avg_sq().to(torch::kFloat32).contiguous());
      }
      s.step(s.step() + 1);
      const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
      const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(s.step()));
      const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(s.step()));
      const AdamConstants c{static_cast<float>(beta1),
                            static_cast<float>(1 - beta1),
                            static_cast<float>(beta2),
                            static_cast<float>(1 - beta2),
                            static_cast<float>(std::sqrt(bias_correction2)),
                            static_cast<float>(options.eps()),
                            static_cast<float>(-(options.lr() / bias_correction1)),
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
  return loss;
}

}  // namespace pix2pix::train
