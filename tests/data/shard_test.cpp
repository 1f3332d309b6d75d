// plan_shard: disjoint, covering (up to the reported remainder), equal sizes, stable, and the
// unshuffled interleaving that makes a global batch equal a single process's batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/shard.hpp"

using pix2pix::data::plan_shard;
using pix2pix::data::ShardRequest;

class ShardProperties : public ::testing::TestWithParam<std::tuple<std::int64_t, int, bool>> {};

TEST_P(ShardProperties, DisjointCoveringEqualAndStable) {
  const auto [n, world, shuffle] = GetParam();
  std::set<std::int64_t> seen;
  std::int64_t total = 0;
  for (int rank = 0; rank < world; ++rank) {
    const auto plan = plan_shard({n, world, rank, 42, 3, shuffle});
    EXPECT_EQ(plan.per_rank, n / world);
    EXPECT_EQ(static_cast<std::int64_t>(plan.indices.size()), n / world);
    EXPECT_EQ(plan.dropped, n % world);
    for (auto i : plan.indices) {
      EXPECT_GE(i, 0);
      EXPECT_LT(i, n);
      EXPECT_TRUE(seen.insert(i).second) << "index " << i << " given to two ranks";
    }
    total += static_cast<std::int64_t>(plan.indices.size());
    EXPECT_EQ(plan.indices, plan_shard({n, world, rank, 42, 3, shuffle}).indices) << "not stable across calls";
  }
  EXPECT_EQ(total, n - n % world);
}

INSTANTIATE_TEST_SUITE_P(ManySizes, ShardProperties,
                         ::testing::Combine(::testing::Values<std::int64_t>(0, 1, 2, 7, 64, 101, 1000, 4099),
                                            ::testing::Values(1, 2, 3, 4, 8, 16), ::testing::Bool()));

TEST(Shard, UnshuffledGlobalBatchIsTheSingleProcessBatch) {
  const std::int64_t n = 96, batch = 4;
  const int world = 3;
  std::vector<ShardRequest> ranks;
  for (int steps = 0; steps < n / (batch * world); ++steps) {
    std::set<std::int64_t> global;
    for (int rank = 0; rank < world; ++rank) {
      const auto plan = plan_shard({n, world, rank, 7, 0, false});
      for (std::int64_t k = steps * batch; k < (steps + 1) * batch; ++k)
        global.insert(plan.indices[static_cast<size_t>(k)]);
    }
    std::set<std::int64_t> expected;
    for (std::int64_t i = steps * batch * world; i < (steps + 1) * batch * world; ++i) expected.insert(i);
    EXPECT_EQ(global, expected) << "step " << steps;
  }
}

TEST(Shard, ShuffleDependsOnSeedAndEpochButNotOnTheCaller) {
  const auto a = plan_shard({1000, 2, 0, 1, 0, true}).indices;
  EXPECT_NE(a, plan_shard({1000, 2, 0, 2, 0, true}).indices);
  EXPECT_NE(a, plan_shard({1000, 2, 0, 1, 1, true}).indices);
  std::vector<std::int64_t> sorted(a);
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(a, sorted) << "shuffle on gave file order";
}

TEST(Shard, RejectsImpossibleRequests) {
  EXPECT_THROW(plan_shard({10, 0, 0, 0, 0, true}), pix2pix::Error);
  EXPECT_THROW(plan_shard({10, 2, 2, 0, 0, true}), pix2pix::Error);
  EXPECT_THROW(plan_shard({10, 2, -1, 0, 0, true}), pix2pix::Error);
  EXPECT_THROW(plan_shard({-1, 2, 0, 0, 0, true}), pix2pix::Error);
}
