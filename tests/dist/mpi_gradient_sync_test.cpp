// See Note [overlapped all-reduce] with real MPI ranks: all-reduces started during backward (and
// polled from the gradient hooks) give every rank the mean, the same as the blocking path.
#include <gtest/gtest.h>

#include "pix2pix/dist/gradient_sync.hpp"
#include "pix2pix/dist/mpi_communicator.hpp"
#include "support/mpi_env.hpp"

namespace {

using pix2pix::dist::GradientSync;
using pix2pix::dist::MpiCommunicator;

// The same network on every rank (seeded), fed rank-dependent inputs.
torch::nn::Sequential make_net() {
  torch::manual_seed(7);
  return torch::nn::Sequential(torch::nn::Linear(16, 64), torch::nn::ReLU(), torch::nn::Linear(64, 64),
                               torch::nn::ReLU(), torch::nn::Linear(64, 64), torch::nn::ReLU(),
                               torch::nn::Linear(64, 4));
}

}  // namespace

TEST(MpiCommunicator, StartedAllreducesCompleteInOrderWithTheMean) {
  MpiCommunicator comm(60.0);
  const int rank = comm.rank(), world = comm.world();
  std::vector<torch::Tensor> tensors;
  std::vector<std::unique_ptr<pix2pix::dist::PendingCollective>> pending;
  for (int k = 0; k < 3; ++k) {
    tensors.push_back(torch::full({1000 * (k + 1)}, static_cast<float>(rank * 10 + k)));
    pending.push_back(comm.start_allreduce_mean(tensors.back()));
  }
  for (auto& p : pending) p->poll();  // progress only; the result needs wait()
  for (auto& p : pending) p->wait();
  const float mean_rank = static_cast<float>(world - 1) / 2.0f;
  for (int k = 0; k < 3; ++k)
    EXPECT_TRUE(torch::equal(tensors[static_cast<size_t>(k)],
                             torch::full({1000 * (k + 1)}, 10.0f * mean_rank + static_cast<float>(k))))
        << "tensor " << k;
}

TEST(GradientSync, OverlappedAllreducesStartDuringBackwardAndGiveTheMean) {
  MpiCommunicator comm(60.0);
  auto net = make_net(), twin = make_net();
  GradientSync sync(comm, net->parameters(), /*bucket_bytes=*/8 << 10, /*overlap=*/true);
  ASSERT_TRUE(sync.overlaps());
  ASSERT_GT(sync.bucket_count(), 2u);
  for (int step = 0; step < 2; ++step) {
    torch::manual_seed(100 + 10 * comm.rank() + step);
    const auto x = torch::randn({8, 16});
    sync.zero_grad();
    twin->zero_grad();
    net->forward(x).square().sum().backward();
    // Every bucket's gradients are complete when backward returns, so every bucket started.
    EXPECT_EQ(sync.started_during_backward(), sync.bucket_count()) << "step " << step;
    sync.average();
    twin->forward(x).square().sum().backward();
    for (size_t i = 0; i < twin->parameters().size(); ++i) {
      auto expected = twin->parameters()[i].grad().clone();
      comm.allreduce_mean(expected);
      EXPECT_TRUE(torch::allclose(net->parameters()[i].grad(), expected, 1e-6, 1e-7))
          << "parameter " << i << ", step " << step;
    }
  }
}

// See Note [bf16 gradients on the wire]: MPI has no bf16 type; the user-defined sum adds in float and
// rounds as ATen does, and every rank gets the same bits.
TEST(MpiCommunicator, SumsBf16AsBf16) {
  MpiCommunicator comm(60.0);
  ASSERT_EQ(comm.world(), 2) << "run under mpirun -np 2";
  torch::manual_seed(21);
  const auto both = torch::randn({2, 5000}).to(torch::kBFloat16);
  auto mine = both[comm.rank()].clone();
  comm.allreduce_sum(mine);
  EXPECT_EQ(mine.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(mine, both[0] + both[1]));
  auto mean = both[comm.rank()].clone();
  comm.start_allreduce_mean(mean)->wait();
  EXPECT_TRUE(torch::equal(mean, (both[0] + both[1]) / 2));
  auto largest = both[comm.rank()].clone();
  comm.allreduce_max(largest);  // through float: MPI_MAX does not know bf16
  EXPECT_TRUE(torch::equal(largest, torch::maximum(both[0], both[1])));
  auto root = both[comm.rank()].clone();
  comm.broadcast(root, 1);
  EXPECT_TRUE(torch::equal(root, both[1]));
}

TEST(GradientSync, Bf16WireGivesEveryRankTheRoundedMeanOfTheirGradients) {
  MpiCommunicator comm(60.0);
  ASSERT_EQ(comm.world(), 2) << "run under mpirun -np 2";
  for (bool overlap : {false, true}) {
    auto net = make_net();
    GradientSync sync(comm, net->parameters(), /*bucket_bytes=*/8 << 10, overlap, torch::kBFloat16);
    // Both ranks' gradients, computed here on a twin of the network.
    std::vector<std::vector<torch::Tensor>> per_rank;
    for (int r = 0; r < 2; ++r) {
      auto twin = make_net();
      torch::manual_seed(300 + r);
      twin->forward(torch::randn({8, 16})).square().sum().backward();
      per_rank.emplace_back();
      for (const auto& p : twin->parameters()) per_rank.back().push_back(p.grad().clone());
    }
    torch::manual_seed(300 + comm.rank());
    const auto x = torch::randn({8, 16});
    sync.zero_grad();
    net->forward(x).square().sum().backward();
    sync.average();
    for (size_t i = 0; i < per_rank[0].size(); ++i) {
      const auto expected =
          ((per_rank[0][i].to(torch::kBFloat16) + per_rank[1][i].to(torch::kBFloat16)) / 2).to(torch::kFloat32);
      EXPECT_TRUE(torch::equal(net->parameters()[i].grad(), expected)) << "parameter " << i << ", overlap " << overlap;
    }
  }
}
