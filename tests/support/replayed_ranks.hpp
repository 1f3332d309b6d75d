// Ranks of one process run one after another, with their sums over ranks replayed: ranks on one
// GPU without a communicator.
#pragma once

#include <torch/torch.h>

#include <functional>

namespace pix2pix::fixtures {

// A rank's sum over every rank, in place (nets::BatchStatsSum).
using RankSum = std::function<void(torch::Tensor&)>;

// Note [ranks replayed one after another]
// Ranks as threads of one process (thread_communicator.hpp) cannot test a layer whose backward
// sums over ranks on a GPU: LibTorch's autograd engine runs every thread's GPU backward on the
// device's one worker thread, so the first rank's backward would wait for the others' sums while
// theirs wait behind it in that thread's queue. Here the ranks run one at a time, in rounds: a
// rank's k-th sum records its contribution and becomes the total of every rank's k-th
// contribution once an earlier round has made it. A round makes the total of the first sum that
// lacked one (every contribution to it came after every earlier sum had its total, so it is what
// ranks summing together would sum); the rounds end with one in which every sum had its total,
// which therefore computed what the ranks compute together. `body(rank, sum)` must do the same
// in every round (a fresh layer each time, the same inputs); what it leaves from the last round
// is the result. Error when a round's sums are fewer than the totals made.
void run_replayed_ranks(int world, const std::function<void(int rank, const RankSum& sum)>& body);

}  // namespace pix2pix::fixtures
