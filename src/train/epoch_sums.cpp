#include "pix2pix/train/epoch_sums.hpp"

#include <cmath>

#include "pix2pix/common/error.hpp"

namespace pix2pix::train {

void EpochSums::add(const StepLosses& step) {
  if (step.values.numel() != static_cast<std::int64_t>(losses.size()))
    throw Error("EpochSums::add: " + std::to_string(step.values.numel()) + " losses, not " +
                std::to_string(losses.size()));
  ++steps;
  // Note [no host reads in the step]
  unread = unread.defined() ? unread.add_(step.values) : step.values.clone();
  for (bool skip : step.skipped) skipped += skip ? 1 : 0;
}

EpochSums EpochSums::global(dist::Communicator& comm) const {
  const auto n = static_cast<std::int64_t>(losses.size());
  auto t = torch::empty({n + 1}, torch::kFloat64);
  for (std::int64_t i = 0; i < n; ++i) t[i] = losses[static_cast<std::size_t>(i)];
  t[n] = static_cast<double>(skipped);
  if (unread.defined()) t.narrow(0, 0, n).add_(unread.to(torch::kCPU));
  comm.allreduce_sum(t);
  const double world = comm.world();
  EpochSums g(losses.size());
  g.steps = steps;  // the same on every rank
  for (std::int64_t i = 0; i < n; ++i) g.losses[static_cast<std::size_t>(i)] = t[i].item<double>() / world;
  // Every rank skips the same updates (the decision follows averaged gradients): the count is
  // the same on every rank, and their mean is it.
  g.skipped = std::llround(t[n].item<double>() / world);
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
