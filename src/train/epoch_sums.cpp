#include "pix2pix/train/epoch_sums.hpp"

#include <cmath>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/host_values.hpp"

namespace pix2pix::train {

void EpochSums::add(const gan::StepLosses& step) {
  if (step.values.numel() != static_cast<std::int64_t>(losses.size()))
    throw Error("EpochSums::add: " + std::to_string(step.values.numel()) + " losses, not " +
                std::to_string(losses.size()));
  ++steps;
  // See Note [no host reads in the step]
  unread = unread.defined() ? unread.add_(step.values) : step.values.clone();
  unread_skipped = unread_skipped.defined() ? unread_skipped.add_(step.skipped) : step.skipped.clone();
}

std::vector<std::int64_t> EpochSums::skipped_by_group(std::size_t groups) const {
  std::vector<std::int64_t> out(groups, 0);
  if (!unread_skipped.defined()) return out;
  const std::vector<double> counts = host_doubles(unread_skipped);
  if (counts.size() != groups)
    throw Error("EpochSums: " + std::to_string(counts.size()) + " skip counts, not " + std::to_string(groups));
  for (std::size_t g = 0; g < groups; ++g) out[g] = std::llround(counts[g]);
  return out;
}

EpochSums EpochSums::global(dist::Communicator& comm) const {
  // One collective for the losses and the skipped count: [losses..., skipped].
  std::vector<double> values = losses;
  values.push_back(static_cast<double>(skipped));
  auto t = torch::tensor(values, torch::kFloat64);
  const auto n = static_cast<std::int64_t>(losses.size());
  if (unread.defined()) t.narrow(0, 0, n).add_(unread.to(torch::kCPU));
  if (unread_skipped.defined()) t[n].add_(unread_skipped.sum().to(torch::kCPU));
  comm.allreduce_sum(t);
  t.div_(comm.world());
  const double* mean = t.data_ptr<double>();
  EpochSums g(losses.size());
  g.steps = steps;  // the same on every rank
  g.losses.assign(mean, mean + n);
  // Every rank skips the same updates (the decision follows averaged gradients): the count is
  // the same on every rank, and their mean is it.
  g.skipped = std::llround(mean[n]);
  return g;
}

EpochSums EpochSums::resumed(const std::vector<double>& losses, std::int64_t skipped, std::int64_t steps,
                             std::size_t loss_count) {
  if (losses.size() != loss_count)
    throw Error("checkpoint: the interrupted epoch's sums hold " + std::to_string(losses.size()) +
                " losses, this model reports " + std::to_string(loss_count));
  // Every rank continues from the rank mean, so the mean at the end of the epoch is the same as
  // without the stop; the skipped count is the same on every rank (see global()).
  EpochSums s(loss_count);
  s.steps = steps;
  s.losses = losses;
  s.skipped = skipped;
  return s;
}

}  // namespace pix2pix::train
