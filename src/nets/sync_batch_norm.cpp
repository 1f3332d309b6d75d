// See Note [synchronised batch norm] (sync_batch_norm.hpp).
#include "pix2pix/nets/sync_batch_norm.hpp"

#include "pix2pix/common/error.hpp"

namespace pix2pix::nets {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Per channel of NCHW, as [1, C, 1, 1] for broadcasting.
torch::Tensor per_channel(const torch::Tensor& values) {
  return values.view({1, -1, 1, 1});
}

// The global batch's normalisation, its running statistics' update, and its backward.
class SyncBatchNormFunction : public torch::autograd::Function<SyncBatchNormFunction> {
 public:
  // `sum`: the BatchStatsSum to use (a pointer that lives as long as the layer does).
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& input, const torch::Tensor& weight,
                               const torch::Tensor& bias, torch::Tensor running_mean, torch::Tensor running_var,
                               double eps, double momentum, const BatchStatsSum* sum) {
    const std::int64_t channels = input.size(1);
    const torch::Tensor x = input.to(torch::kFloat32);
    // Shifted by the running mean (equal on every rank) so that Σ(x - c)² - n·mean² does not cancel.
    const torch::Tensor shift = running_mean.to(torch::kFloat32);
    const torch::Tensor centred = x - per_channel(shift);
    const double count = static_cast<double>(input.numel() / channels);
    torch::Tensor sums =
        torch::cat({centred.sum({0, 2, 3}).to(torch::kFloat64), centred.square().sum({0, 2, 3}).to(torch::kFloat64),
                    torch::full({1}, count, centred.options().dtype(torch::kFloat64))});
    (*sum)(sums);
    const torch::Tensor total = sums.narrow(0, 2 * channels, 1);
    const torch::Tensor mean_shifted = sums.narrow(0, 0, channels) / total;
    const torch::Tensor var = (sums.narrow(0, channels, channels) / total - mean_shifted.square()).clamp_min(0.0);
    const torch::Tensor mean = mean_shifted + shift.to(torch::kFloat64);
    // Note [the global count stays on the device]: the global batch's count n (summed over ranks)
    // is used as a tensor, never read: a read would wait for the device at every layer of every
    // step (the host's lead over a GPU lost some twenty times a step) and could not be captured in
    // a CUDA graph (See Note [a step as one CUDA graph]).
    {
      torch::NoGradGuard no_grad;
      const torch::Tensor unbiased = total / (total - 1.0).clamp_min(1.0);  // n / max(n - 1, 1)
      running_mean.mul_(1.0 - momentum).add_(mean.to(running_mean.scalar_type()), momentum);
      running_var.mul_(1.0 - momentum).add_((var * unbiased).to(running_var.scalar_type()), momentum);
    }
    const torch::Tensor invstd = (var + eps).rsqrt().to(torch::kFloat32);
    const torch::Tensor normalised = (x - per_channel(mean.to(torch::kFloat32))) * per_channel(invstd);
    ctx->save_for_backward({normalised, invstd, weight, total});
    ctx->saved_data["sum"] = reinterpret_cast<std::int64_t>(sum);
    ctx->saved_data["dtype"] = static_cast<std::int64_t>(input.scalar_type());
    return (normalised * per_channel(weight.to(torch::kFloat32)) + per_channel(bias.to(torch::kFloat32)))
        .to(input.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& normalised = saved[0];
    const torch::Tensor& invstd = saved[1];
    const torch::Tensor& weight = saved[2];
    const torch::Tensor& n = saved[3];  // See Note [the global count stays on the device]
    const auto* sum = reinterpret_cast<const BatchStatsSum*>(ctx->saved_data["sum"].toInt());
    const auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["dtype"].toInt());
    const torch::Tensor dy = grads[0].to(torch::kFloat32);
    const std::int64_t channels = normalised.size(1);
    // This rank's sums: the scale's and shift's gradients (averaged over ranks by the gradient sync).
    const torch::Tensor sum_dy = dy.sum({0, 2, 3});
    const torch::Tensor sum_dy_normalised = (dy * normalised).sum({0, 2, 3});
    torch::Tensor global = torch::cat({sum_dy, sum_dy_normalised}).to(torch::kFloat64);
    (*sum)(global);
    const torch::Tensor mean_dy = (global.narrow(0, 0, channels) / n).to(torch::kFloat32);
    const torch::Tensor mean_dy_normalised = (global.narrow(0, channels, channels) / n).to(torch::kFloat32);
    const torch::Tensor grad_input = (dy - per_channel(mean_dy) - normalised * per_channel(mean_dy_normalised)) *
                                     per_channel(invstd * weight.to(torch::kFloat32));
    return {grad_input.to(dtype),
            sum_dy_normalised.to(weight.scalar_type()),
            sum_dy.to(weight.scalar_type()),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor(),
            torch::Tensor()};
  }
};

}  // namespace

SyncBatchNorm2dImpl::SyncBatchNorm2dImpl(std::int64_t channels, BatchStatsSum sum)
    : channels_(channels), sum_(std::move(sum)) {
  reset();
}

void SyncBatchNorm2dImpl::reset() {
  weight = register_parameter("weight", torch::ones({channels_}));
  bias = register_parameter("bias", torch::zeros({channels_}));
  running_mean = register_buffer("running_mean", torch::zeros({channels_}));
  running_var = register_buffer("running_var", torch::ones({channels_}));
  num_batches_tracked = register_buffer("num_batches_tracked", torch::tensor(0, torch::kLong));
}

void SyncBatchNorm2dImpl::pretty_print(std::ostream& stream) const {
  stream << "pix2pix::model::SyncBatchNorm2d(" << channels_ << ", eps=" << kEps << ", momentum=" << kMomentum
         << (sum_ ? ", over every rank)" : ", over this rank)");
}

torch::Tensor SyncBatchNorm2dImpl::forward(const torch::Tensor& input) {
  if (input.dim() != 4)
    throw Error("SyncBatchNorm2d: expected an NCHW input, got " + std::to_string(input.dim()) + " dimensions");
  if (is_training()) num_batches_tracked.add_(1);
  if (!is_training() || !sum_)
    return torch::batch_norm(input, weight, bias, running_mean, running_var, is_training(), kMomentum, kEps,
                             /*cudnn_enabled=*/true);
  return SyncBatchNormFunction::apply(input, weight, bias, running_mean, running_var, kEps, kMomentum, &sum_);
}

}  // namespace pix2pix::nets
