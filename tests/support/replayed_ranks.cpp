// See Note [ranks replayed one after another].
#include "support/replayed_ranks.hpp"

#include <cstddef>
#include <string>
#include <vector>

#include "pix2pix/common/error.hpp"

namespace pix2pix::fixtures {

void run_replayed_ranks(int world, const std::function<void(int rank, const RankSum& sum)>& body) {
  std::vector<torch::Tensor> totals;  // of the first sums, in call order
  for (;;) {
    std::vector<torch::Tensor> first_missing(static_cast<std::size_t>(world));  // each rank's contribution
    bool complete = true;
    for (int rank = 0; rank < world; ++rank) {
      std::size_t call = 0;
      body(rank, [&](torch::Tensor& t) {
        if (call < totals.size()) {
          t.copy_(totals[call]);
        } else {
          if (call == totals.size()) first_missing[static_cast<std::size_t>(rank)] = t.clone();
          complete = false;
        }
        ++call;
      });
      if (call < totals.size())
        throw Error("replayed ranks: rank " + std::to_string(rank) + " summed " + std::to_string(call) +
                    " times, fewer than the " + std::to_string(totals.size()) + " sums of an earlier round");
    }
    if (complete) return;
    torch::Tensor total;
    for (int rank = 0; rank < world; ++rank) {
      const torch::Tensor& part = first_missing[static_cast<std::size_t>(rank)];
      if (!part.defined())
        throw Error("replayed ranks: rank " + std::to_string(rank) + " made no sum number " +
                    std::to_string(totals.size() + 1) + ", which another rank made");
      total = total.defined() ? total + part : part.clone();
    }
    totals.push_back(total);
  }
}

}  // namespace pix2pix::fixtures
