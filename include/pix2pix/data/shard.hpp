// Which samples each rank trains on: a pure function of (N, world, rank, seed, epoch).
#pragma once

#include <cstdint>
#include <vector>

namespace pix2pix::data {

struct ShardRequest {
  std::int64_t count = 0;  // N samples in the split
  int world = 1;           // number of ranks
  int rank = 0;
  std::uint64_t seed = 0;
  std::int64_t epoch = 0;
  bool shuffle = true;  // false: the global order is the file order
};

struct ShardPlan {
  std::vector<std::int64_t> indices;  // this rank's samples, in the order it should visit them
  std::int64_t per_rank = 0;          // floor(N / world), identical on every rank
  std::int64_t dropped = 0;           // N - world * per_rank samples no rank sees
};

// One global permutation (seeded by seed and epoch, identical on every rank; the identity when
// shuffle is off) of which rank r takes positions r, r+W, r+2W, ... (like PyTorch's
// DistributedSampler), truncated so every rank gets exactly floor(N/W). With shuffle off, the
// samples [s*B*W, (s+1)*B*W) form the global batch at step s, as in one process with batch B*W.
ShardPlan plan_shard(const ShardRequest& request);

}  // namespace pix2pix::data
