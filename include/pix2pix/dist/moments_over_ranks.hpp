// Batch norm's moments over every rank's batch: the reductions that --sync-bn's layer
// (nets::SyncBatchNorm2d) and the fused kernels' layer over ranks share.
// See Note [synchronised batch norm] (nets/sync_batch_norm.hpp).
#pragma once

#include <torch/torch.h>

#include <functional>

namespace pix2pix::dist {

// Sums a tensor over every rank, in place: nets::BatchStatsSum, a Communicator's allreduce_sum.
using SumOverRanks = std::function<void(torch::Tensor&)>;

// The global batch's mean and 1/sqrt(var + eps) (float32 [C]) and its count (float64 [1], on the
// device: See Note [the global count stays on the device]).
struct MomentsOverRanks {
  torch::Tensor mean, invstd, count;
};

// From this rank's [Σ(x - c), Σ(x - c)², n] (float64 [2C + 1], c = `shift`, float64 [C]): the sums
// over every rank (`sum`, in place on `sums`), the global batch's moments, and the running
// statistics updated from them as BatchNorm2d updates its own (`momentum`, the unbiased variance).
MomentsOverRanks moments_over_ranks(torch::Tensor sums, const torch::Tensor& shift, torch::Tensor& running_mean,
                                    torch::Tensor& running_var, double eps, double momentum, const SumOverRanks& sum);

// The same from this rank's mean and 1/sqrt(var + eps) (float32 [C], at::batch_norm_stats's) of
// `count` values a channel, shifted by the running mean. See Note [synchronised batch norm on a GPU].
MomentsOverRanks moments_over_ranks_of_stats(const torch::Tensor& mean, const torch::Tensor& invstd, double count,
                                             torch::Tensor& running_mean, torch::Tensor& running_var, double eps,
                                             double momentum, const SumOverRanks& sum);

}  // namespace pix2pix::dist
