// Batch norm over the global batch of every rank (--sync-bn on). See Note [synchronised batch norm].
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <string>

namespace pix2pix::nets {

// Sums a tensor over every rank, in place: a Communicator's allreduce_sum, handed to the networks
// by the run loop so that they need not know about ranks. Empty: one replica, nothing to sum.
using BatchStatsSum = std::function<void(torch::Tensor&)>;

// --sync-bn: batch norm over every rank's batch (on), each rank's own (off), or on when there is
// batch norm and more than one rank (automatic). See Note [synchronised batch norm].
enum class SyncBn { off, on, automatic };
SyncBn parse_sync_bn(const std::string& text);  // UsageError naming --sync-bn otherwise
std::string to_string(SyncBn choice);

// Whether this run's batch norm layers sum over ranks: only where there is batch norm and another
// rank to sum with, and only where the communicator takes backward's sums. `any_thread`: it may be
// called from LibTorch's GPU threads, where backward runs on GPUs (NCCL; MPI is FUNNELED), or the
// ranks compute on CPUs. automatic is then off; on is a UsageError naming the `communicator`.
bool resolve_sync_bn(SyncBn option, bool batch_norm, int world, bool any_thread, const std::string& communicator);

// Note [synchronised batch norm]
// With batch norm, N ranks of batch B are not one process of batch NB: each rank normalises with
// the moments of its own B images (with B = 1 batch norm is instance norm), so the model changes
// with the rank count. This layer is PyTorch's SyncBatchNorm: in training, forward sums over every
// rank [Σ(x - c), Σ(x - c)², n] per channel in one all-reduce (c: the running mean, equal on every
// rank, so that the variance is not the difference of two large sums), normalises with the global
// moments and updates the running statistics from them (so they stay equal on every rank); backward
// sums [Σ dy, Σ dy·x̂] in one all-reduce for the input gradient. The scale and shift get this rank's
// own sums: the gradient sync averages them over ranks like every other parameter, which gives the
// global batch's gradient because every rank's loss is its own batch's mean. Counts are summed,
// so ranks with batches of different sizes stay right. Its parameters and buffers have
// BatchNorm2d's names, shapes and defaults, so checkpoints, exports and state dicts cannot tell
// them apart. (It cannot derive from BatchNorm2dImpl: LibTorch 1.13 does not export the base's
// virtual functions a derived class's vtable names.) On a GPU it runs PyTorch's SyncBatchNorm
// kernels (See Note [synchronised batch norm on a GPU]).
class SyncBatchNorm2dImpl : public torch::nn::Cloneable<SyncBatchNorm2dImpl> {
 public:
  SyncBatchNorm2dImpl(std::int64_t channels, BatchStatsSum sum);
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  // Training: the global batch's moments (the sums reach every rank), or without a sum this
  // rank's, as BatchNorm2d; eval: the running ones.
  torch::Tensor forward(const torch::Tensor& input);
  // The sum over ranks it was built with (empty: this rank's batch only).
  const BatchStatsSum& sum() const { return sum_; }

  static constexpr double kEps = 1e-5, kMomentum = 0.1;  // BatchNorm2d's defaults, as the reference's
  torch::Tensor weight, bias, running_mean, running_var, num_batches_tracked;

 private:
  std::int64_t channels_;
  BatchStatsSum sum_;
};
TORCH_MODULE(SyncBatchNorm2d);

}  // namespace pix2pix::nets
