// One epoch's loss sums on this rank, for any model: one sum per loss name of the model, summed
// on the device as steps come (See Note [no host reads in the step]) and read at the end of the
// epoch or at a graceful stop, when a checkpoint holds them so that the resumed epoch reports
// what an uninterrupted one would.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "pix2pix/dist/communicator.hpp"
#include "pix2pix/gan/gan_model.hpp"

namespace pix2pix::train {

struct EpochSums {
  explicit EpochSums(std::size_t loss_count) : losses(loss_count, 0.0) {}

  std::int64_t steps = 0;
  std::vector<double> losses;    // read so far (a resumed epoch's, global()), in the model's loss order
  std::int64_t skipped = 0;      // updates skipped (non-finite gradients), all update groups, read so far
  torch::Tensor unread;          // float64 [losses.size()]: the sums of the steps add() took since, on their device
  torch::Tensor unread_skipped;  // float64 [update groups]: their skip flags summed, on the device that decided

  void add(const gan::StepLosses& step);  // no host read
  // The updates skipped per update group in the steps add() took (a host read; `groups` zeros before any).
  std::vector<std::int64_t> skipped_by_group(std::size_t groups) const;
  // Collective: rank means of the loss sums (one host read) and the total of skipped updates.
  EpochSums global(dist::Communicator& comm) const;
  // A graceful stop's sums (global() ones) from a checkpoint; Error when the count is not the
  // model's.
  static EpochSums resumed(const std::vector<double>& losses, std::int64_t skipped, std::int64_t steps,
                           std::size_t loss_count);
};

}  // namespace pix2pix::train
