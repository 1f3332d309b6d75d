// Interleaved (not blocked) shards: with shuffle off, consecutive global positions go to
// consecutive ranks, which is what makes a global batch equal to a single process's batch.
#include "pix2pix/data/shard.hpp"

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/random.hpp"

namespace pix2pix::data {

ShardPlan plan_shard(const ShardRequest& r) {
  if (r.world < 1) throw Error("plan_shard: world size must be >= 1, got " + std::to_string(r.world));
  if (r.rank < 0 || r.rank >= r.world)
    throw Error("plan_shard: rank " + std::to_string(r.rank) + " outside [0, " + std::to_string(r.world) + ")");
  if (r.count < 0) throw Error("plan_shard: negative sample count");
  ShardPlan plan;
  plan.per_rank = r.count / r.world;
  plan.dropped = r.count - plan.per_rank * r.world;
  std::vector<std::int64_t> order;
  if (r.shuffle) order = seeded_permutation(r.count, mix_seed(r.seed, static_cast<std::uint64_t>(r.epoch)));
  plan.indices.reserve(static_cast<size_t>(plan.per_rank));
  for (std::int64_t k = 0; k < plan.per_rank; ++k) {
    const std::int64_t position = k * r.world + r.rank;
    plan.indices.push_back(r.shuffle ? order[static_cast<size_t>(position)] : position);
  }
  return plan;
}

}  // namespace pix2pix::data
