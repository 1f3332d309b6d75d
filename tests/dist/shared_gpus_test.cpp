// See Note [ranks sharing a GPU]: the logic that lets several ranks share a GPU on request (the
// GPU each local rank takes, the refusal without the request, what NCCL is told) runs on CPUs;
// NCCL itself meets it on a GPU node (scripts/gpu-smoke.sh).
#include <gtest/gtest.h>

#include <string>

#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/device.hpp"
#include "support/fixtures.hpp"

using pix2pix::dist::gpu_of_local_rank;
using pix2pix::dist::shared_gpu_nccl_settings;
using pix2pix::fixtures::error_of;

TEST(SharedGpus, EachLocalRankTakesItsGpuAndMoreRanksThanGpusNeedTheRequest) {
  for (int r = 0; r < 4; ++r) EXPECT_EQ(gpu_of_local_rank(r, 4, 4, false), r);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(gpu_of_local_rank(r, 4, 8, false), r) << "fewer ranks than GPUs";
  const std::string refused = error_of([] { gpu_of_local_rank(1, 4, 1, false); });
  EXPECT_NE(refused.find("4 ranks on this node but 1 visible GPUs: NCCL needs one GPU per rank"), std::string::npos)
      << refused;
  EXPECT_NE(refused.find("PIX2PIX_SHARE_GPUS=1 lets ranks share GPUs"), std::string::npos) << refused;
  for (int r = 0; r < 4; ++r) EXPECT_EQ(gpu_of_local_rank(r, 4, 1, true), 0);
  EXPECT_EQ(gpu_of_local_rank(3, 4, 2, true), 1);
  EXPECT_EQ(gpu_of_local_rank(2, 4, 2, true), 0);
  EXPECT_THROW(gpu_of_local_rank(0, 1, 0, true), pix2pix::Error);
}

TEST(SharedGpus, NcclIsToldADistinctHostPerRankUnlessTheUserSaidOtherwise) {
  using Settings = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(shared_gpu_nccl_settings(3, nullptr, nullptr),
            (Settings{{"NCCL_HOSTID", "pix2pix-rank-3"}, {"NCCL_SOCKET_IFNAME", "lo"}}));
  EXPECT_EQ(shared_gpu_nccl_settings(0, "mine", nullptr), (Settings{{"NCCL_SOCKET_IFNAME", "lo"}}));
  EXPECT_EQ(shared_gpu_nccl_settings(0, nullptr, "eth0"), (Settings{{"NCCL_HOSTID", "pix2pix-rank-0"}}));
  EXPECT_TRUE(shared_gpu_nccl_settings(0, "mine", "eth0").empty());
  EXPECT_NE(shared_gpu_nccl_settings(1, nullptr, nullptr)[0].second,
            shared_gpu_nccl_settings(2, nullptr, nullptr)[0].second);
  // On a machine without a GPU nothing is shared and nothing is set.
  EXPECT_EQ(pix2pix::dist::prepare_shared_gpus(0, 4), "");
}
