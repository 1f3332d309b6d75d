// See Note [synchronised batch norm] (nets/sync_batch_norm.hpp) and
// See Note [synchronised batch norm on a GPU] (nets/sync_batch_norm.cpp).
#include "pix2pix/dist/moments_over_ranks.hpp"

namespace pix2pix::dist {

MomentsOverRanks moments_over_ranks(torch::Tensor sums, const torch::Tensor& shift, torch::Tensor& running_mean,
                                    torch::Tensor& running_var, double eps, double momentum, const SumOverRanks& sum) {
  const std::int64_t channels = shift.size(0);
  sum(sums);
  const torch::Tensor total = sums.narrow(0, 2 * channels, 1);
  const torch::Tensor mean_shifted = sums.narrow(0, 0, channels) / total;
  const torch::Tensor var = (sums.narrow(0, channels, channels) / total - mean_shifted.square()).clamp_min(0.0);
  const torch::Tensor mean = mean_shifted + shift;
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
  return {mean.to(torch::kFloat32), (var + eps).rsqrt().to(torch::kFloat32), total};
}

MomentsOverRanks moments_over_ranks_of_stats(const torch::Tensor& mean, const torch::Tensor& invstd, double count,
                                             torch::Tensor& running_mean, torch::Tensor& running_var, double eps,
                                             double momentum, const SumOverRanks& sum) {
  // Σ(x - c) = n·(m - c) and Σ(x - c)² = n·(v + (m - c)²), v recovered from 1/sqrt(v + eps).
  const torch::Tensor shift = running_mean.to(torch::kFloat64);
  const torch::Tensor offset = mean.to(torch::kFloat64) - shift;
  const torch::Tensor var = invstd.to(torch::kFloat64).square().reciprocal() - eps;
  torch::Tensor sums =
      torch::cat({offset * count, (var + offset.square()) * count, torch::full({1}, count, offset.options())});
  return moments_over_ranks(std::move(sums), shift, running_mean, running_var, eps, momentum, sum);
}

}  // namespace pix2pix::dist
