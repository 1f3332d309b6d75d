// GradientSync's bucketing in one process: a stand-in communicator of world 2 whose "other
// rank" contributes a known value, so every element's average is known exactly. (The real
// multi-rank runs come with the MPI and NCCL communicators.)
#include <gtest/gtest.h>

#include "pix2pix/common/error.hpp"
#include "pix2pix/dist/gradient_sync.hpp"
#include "pix2pix/nets/networks.hpp"
#include "support/thread_communicator.hpp"

namespace {

// Pretends to be rank 0 of 2; the peer's tensor is all `peer_value`.
class PeerConstantCommunicator final : public pix2pix::dist::Communicator {
 public:
  explicit PeerConstantCommunicator(float peer_value) : peer_value_(peer_value) {}
  int rank() const override { return 0; }
  int world() const override { return 2; }
  std::string name() const override { return "peer-constant"; }
  void allreduce_sum(torch::Tensor& t) override {
    t.add_(peer_value_);
    ++collectives;
    summed.push_back(t.scalar_type());
  }
  void allreduce_max(torch::Tensor& t) override { t.clamp_min_(peer_value_); }
  void broadcast(torch::Tensor&, int) override {}
  void barrier() override {}
  // What each started all-reduce saw in its buffer when it started.
  std::unique_ptr<pix2pix::dist::PendingCollective> start_allreduce_mean(torch::Tensor& t) override {
    started.push_back(t.clone());
    return Communicator::start_allreduce_mean(t);
  }
  int collectives = 0;
  std::vector<torch::ScalarType> summed;  // what each all-reduce sent
  std::vector<torch::Tensor> started;

 private:
  float peer_value_;
};

}  // namespace

TEST(GradientSync, EveryElementBecomesTheMeanAcrossRanksWhateverTheBuckets) {
  torch::manual_seed(3);
  std::vector<torch::Tensor> params;
  for (std::int64_t n : {10, 3000, 7, 500, 1}) params.push_back(torch::randn({n}, torch::requires_grad()));
  for (auto& p : params) p.mutable_grad() = torch::randn_like(p);
  params[3].mutable_grad() = torch::Tensor();  // unused this step: must take part as zeros
  std::vector<torch::Tensor> before;
  for (auto& p : params) before.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));

  for (std::int64_t bucket_bytes : {std::int64_t{4}, std::int64_t{4096}, std::int64_t{1} << 30}) {
    PeerConstantCommunicator comm(1.0f);
    std::vector<torch::Tensor> run;
    for (size_t i = 0; i < params.size(); ++i) {
      auto p = params[i].detach().clone().requires_grad_(true);
      p.mutable_grad() = i == 3 ? torch::Tensor() : before[i].clone();
      run.push_back(p);
    }
    pix2pix::dist::GradientSync sync(comm, run, bucket_bytes);
    sync.average();
    EXPECT_EQ(comm.collectives, static_cast<int>(sync.bucket_count())) << "one collective per bucket";
    for (size_t i = 0; i < run.size(); ++i)
      EXPECT_TRUE(torch::allclose(run[i].grad(), (before[i] + 1.0) / 2.0, 0, 0))
          << "bucket bytes " << bucket_bytes << ", parameter " << i;
    if (bucket_bytes == 4) {
      EXPECT_EQ(sync.bucket_count(), 5u);
    }
    if (bucket_bytes == std::int64_t{1} << 30) {
      EXPECT_EQ(sync.bucket_count(), 1u);
    }
  }
}

TEST(GradientSync, AWorldOfOneIsANoOp) {
  pix2pix::dist::LocalCommunicator comm;
  auto p = torch::randn({5}, torch::requires_grad());
  p.mutable_grad() = torch::ones({5});
  pix2pix::dist::GradientSync sync(comm, {p}, 1 << 20);
  sync.average();
  EXPECT_TRUE(torch::equal(p.grad(), torch::ones({5})));
  EXPECT_THROW(pix2pix::dist::GradientSync(comm, {p}, 0), pix2pix::Error);
}

TEST(GradientSync, ThreeThreadRanksWithDifferentGradientsAllGetTheirMean) {
  constexpr int kWorld = 3;
  const std::vector<std::int64_t> sizes = {5, 1000, 3, 64};
  // Rank r's gradient of parameter k is r * 10 + k + arange(n) / n: all different, mean known.
  auto gradient = [&](int rank, size_t k) {
    const auto n = sizes[k];
    return torch::arange(n, torch::kFloat32) / static_cast<float>(n) + static_cast<float>(rank * 10 + k);
  };
  std::vector<std::vector<torch::Tensor>> results(kWorld);
  pix2pix::fixtures::run_ranks(kWorld, [&](pix2pix::fixtures::ThreadCommunicator& comm) {
    std::vector<torch::Tensor> params;
    for (size_t k = 0; k < sizes.size(); ++k) {
      auto p = torch::zeros({sizes[k]}, torch::requires_grad());
      p.mutable_grad() = gradient(comm.rank(), k);
      params.push_back(p);
    }
    pix2pix::dist::GradientSync sync(comm, params, /*bucket_bytes=*/2048);
    sync.average();
    for (auto& p : params) results[static_cast<size_t>(comm.rank())].push_back(p.grad().clone());
    // The scalar helpers agree too.
    EXPECT_DOUBLE_EQ(comm.allreduce_mean(static_cast<double>(comm.rank())), 1.0);
    EXPECT_EQ(comm.any(comm.rank() == 2), true);
    EXPECT_EQ(comm.broadcast_string(comm.rank() == 1 ? "from one" : "", 1), "from one");
  });
  for (size_t k = 0; k < sizes.size(); ++k) {
    const auto expected = (gradient(0, k) + gradient(1, k) + gradient(2, k)) / 3.0f;
    for (int r = 0; r < kWorld; ++r)
      EXPECT_TRUE(torch::allclose(results[static_cast<size_t>(r)][k], expected, 1e-6, 1e-6))
          << "rank " << r << ", parameter " << k;
  }
}

// See Note [gradients as bucket views]: backward writes into the buckets, the all-reduce reads them
// in place, and zero_grad keeps the views.
TEST(GradientSync, GradientsAreViewsOfTheBucketsThatBackwardFillsAndZeroGradKeeps) {
  torch::manual_seed(5);
  torch::nn::Sequential net(torch::nn::Linear(7, 5), torch::nn::ReLU(), torch::nn::Linear(5, 3));
  torch::nn::Sequential twin(torch::nn::Linear(7, 5), torch::nn::ReLU(), torch::nn::Linear(5, 3));
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < net->parameters().size(); ++i) twin->parameters()[i].copy_(net->parameters()[i]);
  }
  PeerConstantCommunicator comm(0.0f);
  pix2pix::dist::GradientSync sync(comm, net->parameters(), /*bucket_bytes=*/64);
  ASSERT_GT(sync.bucket_count(), 1u);
  std::int64_t bucket_numel = 0;
  for (std::size_t k = 0; k < sync.bucket_count(); ++k) bucket_numel += sync.bucket_buffer(k).numel();
  std::int64_t param_numel = 0;
  for (const auto& p : net->parameters()) param_numel += p.numel();
  EXPECT_EQ(bucket_numel, param_numel);

  const auto x = torch::randn({4, 7});
  for (int step = 0; step < 2; ++step) {  // the second step: zero_grad must have cleared the first
    sync.zero_grad();
    twin->zero_grad();
    net->forward(x).square().sum().backward();
    twin->forward(x).square().sum().backward();
    for (size_t i = 0; i < net->parameters().size(); ++i) {
      const torch::Tensor g = net->parameters()[i].grad();
      bool inside_a_bucket = false;
      for (std::size_t k = 0; k < sync.bucket_count(); ++k) {
        const auto& b = sync.bucket_buffer(k);
        const auto* begin = b.data_ptr<float>();
        inside_a_bucket |= g.data_ptr<float>() >= begin && g.data_ptr<float>() + g.numel() <= begin + b.numel();
      }
      EXPECT_TRUE(inside_a_bucket) << "parameter " << i << ", step " << step;
      EXPECT_TRUE(torch::equal(g, twin->parameters()[i].grad())) << "parameter " << i << ", step " << step;
    }
  }
  sync.average();  // the peer sends zeros: the mean halves every element, in the buckets
  for (size_t i = 0; i < net->parameters().size(); ++i)
    EXPECT_TRUE(torch::equal(net->parameters()[i].grad(), twin->parameters()[i].grad() / 2)) << "parameter " << i;
}

TEST(GradientSync, AWorldOfOneDropsGradientsInZeroGrad) {
  pix2pix::dist::LocalCommunicator comm;
  auto p = torch::randn({5}, torch::requires_grad());
  p.mutable_grad() = torch::ones({5});
  pix2pix::dist::GradientSync sync(comm, {p}, 1 << 20);
  sync.zero_grad();
  EXPECT_FALSE(p.grad().defined());  // backward then writes the gradient without an add
  (p * 3).sum().backward();
  EXPECT_TRUE(torch::equal(p.grad(), torch::full({5}, 3.0f)));
}

// See Note [gradients dropped after the update]: after the update a world of one holds no
// gradient; a larger world keeps each as the same view of its bucket, with its value.
TEST(GradientSync, ReleaseDropsAWorldOfOnesGradientsAndKeepsALargerWorldsBucketViews) {
  pix2pix::dist::LocalCommunicator one;
  auto p = torch::randn({5}, torch::requires_grad());
  pix2pix::dist::GradientSync alone(one, {p}, 1 << 20);
  (p * 3).sum().backward();
  alone.average();
  ASSERT_TRUE(p.grad().defined());
  alone.release();
  EXPECT_FALSE(p.grad().defined());

  PeerConstantCommunicator two(1.0f);
  auto q = torch::randn({7}, torch::requires_grad());
  auto r = torch::randn({3}, torch::requires_grad());
  pix2pix::dist::GradientSync pair(two, {q, r}, 1 << 20);
  pair.zero_grad();
  (q * 3).sum().backward();
  (r * 5).sum().backward();
  pair.average();
  const void* q_at = q.grad().data_ptr();
  const void* r_at = r.grad().data_ptr();
  pair.release();
  ASSERT_TRUE(q.grad().defined() && r.grad().defined()) << "a larger world dropped its bucket views";
  EXPECT_EQ(q.grad().data_ptr(), q_at);
  EXPECT_EQ(r.grad().data_ptr(), r_at);
  EXPECT_TRUE(torch::equal(q.grad(), torch::full({7}, 2.0f)));  // (3 + the peer's 1) / 2
  EXPECT_TRUE(torch::equal(r.grad(), torch::full({3}, 3.0f)));
}

// See Note [overlapped all-reduce]: a bucket starts during backward only once all its gradients are
// in, in bucket order, and the result is the blocking path's.
TEST(GradientSync, OverlappedBucketsStartInOrderOnceTheirGradientsAreComplete) {
  torch::manual_seed(9);
  torch::nn::Sequential net(torch::nn::Linear(7, 32), torch::nn::ReLU(), torch::nn::Linear(32, 32), torch::nn::ReLU(),
                            torch::nn::Linear(32, 3));
  torch::nn::Sequential twin(torch::nn::Linear(7, 32), torch::nn::ReLU(), torch::nn::Linear(32, 32), torch::nn::ReLU(),
                             torch::nn::Linear(32, 3));
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < net->parameters().size(); ++i) twin->parameters()[i].copy_(net->parameters()[i]);
  }
  PeerConstantCommunicator comm(0.0f);
  pix2pix::dist::GradientSync sync(comm, net->parameters(), /*bucket_bytes=*/512, /*overlap=*/true);
  ASSERT_TRUE(sync.overlaps());
  ASSERT_GT(sync.bucket_count(), 2u);
  const auto x = torch::randn({4, 7});
  for (int step = 0; step < 2; ++step) {
    comm.started.clear();
    sync.zero_grad();
    twin->zero_grad();
    net->forward(x).square().sum().backward();
    twin->forward(x).square().sum().backward();
    EXPECT_EQ(sync.started_during_backward(), sync.bucket_count()) << "step " << step;
    ASSERT_EQ(comm.started.size(), sync.bucket_count());
    for (std::size_t k = 0; k < sync.bucket_count(); ++k)
      EXPECT_EQ(comm.started[k].numel(), sync.bucket_buffer(k).numel()) << "bucket " << k << " started out of order";
    sync.average();
    for (size_t i = 0; i < net->parameters().size(); ++i)
      EXPECT_TRUE(torch::allclose(net->parameters()[i].grad(), twin->parameters()[i].grad() / 2, 1e-6, 1e-7))
          << "parameter " << i << ", step " << step;
  }
  // Each bucket started with its parameters' complete gradients (twice what average() left; the
  // buckets hold the parameters last first).
  std::vector<torch::Tensor> complete;
  for (std::size_t i = net->parameters().size(); i-- > 0;)
    complete.push_back(net->parameters()[i].grad().flatten() * 2);
  EXPECT_TRUE(torch::allclose(torch::cat(comm.started), torch::cat(complete), 1e-6, 1e-7));
}

TEST(GradientSync, OverlapRefusesASecondBackwardBeforeAverage) {
  auto p = torch::randn({5}, torch::requires_grad());
  PeerConstantCommunicator comm(0.0f);
  pix2pix::dist::GradientSync sync(comm, {p}, 1 << 20, /*overlap=*/true);
  sync.zero_grad();
  (p * 3).sum().backward();
  EXPECT_THROW((p * 3).sum().backward(), pix2pix::Error);
}

// See Note [accumulators made on the step's stream]: renewed, the accumulators are new ones (made
// on whatever stream is current then) and their hooks still start every bucket during backward.
TEST(GradientSync, RenewedHooksSitOnNewAccumulatorsAndStillStartEveryBucket) {
  torch::manual_seed(3);
  torch::nn::Sequential net(torch::nn::Linear(7, 32), torch::nn::ReLU(), torch::nn::Linear(32, 3));
  PeerConstantCommunicator comm(0.0f);
  pix2pix::dist::GradientSync sync(comm, net->parameters(), /*bucket_bytes=*/512, /*overlap=*/true);
  ASSERT_GT(sync.bucket_count(), 1u);
  std::vector<std::weak_ptr<torch::autograd::Node>> before;
  for (const auto& p : net->parameters()) before.push_back(torch::autograd::impl::grad_accumulator(p));
  sync.renew_hooks();
  ASSERT_TRUE(sync.overlaps());
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(before[i].expired()) << "parameter " << i;
  const auto x = torch::randn({4, 7});
  sync.zero_grad();
  net->forward(x).square().sum().backward();
  EXPECT_EQ(sync.started_during_backward(), sync.bucket_count());
  EXPECT_EQ(comm.started.size(), sync.bucket_count());
  sync.average();
  // A second renewal after a whole step: the step's graph is gone, so nothing holds the old ones.
  EXPECT_NO_THROW(sync.renew_hooks());
}

TEST(GradientSync, RenewingHooksThatALiveGraphHoldsIsAClearError) {
  auto p = torch::randn({5}, torch::requires_grad());
  PeerConstantCommunicator comm(0.0f);
  pix2pix::dist::GradientSync sync(comm, {p}, 1 << 20, /*overlap=*/true);
  const auto loss = (p * 3).sum();  // its graph holds p's accumulator
  try {
    sync.renew_hooks();
    FAIL() << "renewed an accumulator that a graph still holds";
  } catch (const pix2pix::Error& e) {
    EXPECT_NE(std::string(e.what()).find("still held by an autograd graph"), std::string::npos) << e.what();
  }
}

// See Note [bf16 gradients on the wire]: float32 buckets are all-reduced as bf16 copies and the mean
// comes back widened; buckets of another dtype travel as they are.
TEST(GradientSync, Bf16WireSendsRoundedCopiesAndWidensTheMeanBack) {
  torch::manual_seed(5);
  auto p = torch::randn({300}, torch::requires_grad());
  auto q = torch::randn({40}, torch::requires_grad());
  auto wide = torch::randn({20}, torch::dtype(torch::kFloat64).requires_grad(true));
  for (bool overlap : {false, true}) {
    PeerConstantCommunicator comm(0.3f);
    pix2pix::dist::GradientSync sync(comm, {p, q, wide}, 1 << 20, overlap, torch::kBFloat16);
    sync.zero_grad();
    const auto g = torch::randn({300}) * 1e-3, h = torch::randn({40}) * 7.0;
    (p * g).sum().backward();
    (q * h).sum().backward();
    (wide * 2).sum().backward();
    sync.average();
    ASSERT_EQ(sync.bucket_count(), 2u);  // the float32 pair, the float64 one
    EXPECT_EQ(sync.wire_dtype(0), torch::kFloat64);
    EXPECT_EQ(sync.wire_dtype(1), torch::kBFloat16);
    EXPECT_EQ(comm.summed, (std::vector<torch::ScalarType>{torch::kFloat64, torch::kBFloat16}));
    // What bf16 arithmetic gives: (round(g) + 0.3) rounded, halved, widened.
    auto expected = [](const torch::Tensor& grad) {
      return ((grad.to(torch::kBFloat16) + 0.3f) / 2).to(torch::kFloat32);
    };
    EXPECT_TRUE(torch::equal(p.grad(), expected(g))) << "overlap " << overlap;
    EXPECT_TRUE(torch::equal(q.grad(), expected(h))) << "overlap " << overlap;
    EXPECT_FALSE(torch::allclose(p.grad(), (g + 0.3f) / 2, 1e-6, 0)) << "not rounded";
    EXPECT_TRUE(torch::allclose(p.grad(), (g + 0.3f) / 2, 1e-2, 1e-3));
    EXPECT_TRUE(torch::equal(wide.grad(), (torch::full({20}, 2.0, torch::kFloat64) + 0.3f) / 2));
  }
}

// Any world (1 to 8 thread ranks) and bucket size: every rank gets the mean over ranks, bit for
// bit the same on each, with parameters whose sizes do not divide the buckets, a parameter of no
// elements (an empty bucket of its own with 4-byte buckets), and one whose gradient is undefined
// on one rank (unused there this step: it takes part as zeros).
class GradientSyncAtWorld : public ::testing::TestWithParam<std::tuple<int, std::int64_t>> {};

TEST_P(GradientSyncAtWorld, EveryRankGetsTheMeanWhateverTheWorldAndTheBuckets) {
  const auto [world, bucket_bytes] = GetParam();
  const std::vector<std::int64_t> sizes = {7, 0, 1000, 3, 1, 333};
  constexpr size_t kUnusedOnRank1 = 3;
  const auto gradient = [&](int rank, size_t k) -> torch::Tensor {
    if (rank == 1 && k == kUnusedOnRank1) return torch::Tensor();
    const auto n = sizes[k];
    return torch::arange(n, torch::kFloat32) / static_cast<float>(std::max<std::int64_t>(n, 1)) *
               static_cast<float>(rank + 1) +
           static_cast<float>(rank * 10 + static_cast<int>(k));
  };
  std::vector<std::vector<torch::Tensor>> results(static_cast<size_t>(world));
  pix2pix::fixtures::run_ranks(world, [&](pix2pix::fixtures::ThreadCommunicator& comm) {
    std::vector<torch::Tensor> params;
    for (size_t k = 0; k < sizes.size(); ++k) {
      auto p = torch::zeros({sizes[k]}, torch::requires_grad());
      p.mutable_grad() = gradient(comm.rank(), k);
      params.push_back(p);
    }
    pix2pix::dist::GradientSync sync(comm, params, bucket_bytes);
    sync.average();
    for (auto& p : params)
      results[static_cast<size_t>(comm.rank())].push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
  });
  for (size_t k = 0; k < sizes.size(); ++k) {
    torch::Tensor expected = torch::zeros({sizes[k]});
    for (int r = 0; r < world; ++r) {
      const auto g = gradient(r, k);
      if (g.defined()) expected += g;
    }
    expected /= static_cast<float>(world);
    for (int r = 0; r < world; ++r) {
      const auto& got = results[static_cast<size_t>(r)][k];
      ASSERT_TRUE(got.defined()) << "rank " << r << ", parameter " << k;
      EXPECT_TRUE(torch::allclose(got, expected, 1e-6, 1e-6))
          << "world " << world << ", rank " << r << ", parameter " << k << ", buckets of " << bucket_bytes << " bytes";
      EXPECT_TRUE(torch::equal(got, results[0][k])) << "rank " << r << " differs from rank 0, parameter " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WorldsAndBuckets, GradientSyncAtWorld,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 8),
                                            ::testing::Values(std::int64_t{4}, std::int64_t{4096},
                                                              std::int64_t{1} << 30)));

// See Note [no tiny buckets]: a bias between two weights larger than the cap joins a neighbour
// instead of paying a collective of its own, and the mean is still every element's.
TEST(GradientSync, TinyTensorsJoinANeighbourInsteadOfABucketOfTheirOwn) {
  std::vector<torch::Tensor> params;
  for (std::int64_t n : {2000, 4, 2000, 4}) params.push_back(torch::randn({n}, torch::requires_grad()));
  for (auto& p : params) p.mutable_grad() = torch::full_like(p, 3.0f);
  PeerConstantCommunicator comm(1.0f);
  // Cap 6400 bytes: each weight (8000 bytes) fills a bucket alone; the 16-byte biases are tiny.
  pix2pix::dist::GradientSync sync(comm, params, 6400);
  ASSERT_EQ(sync.bucket_count(), 2u) << "was 4: weight, bias, weight, bias each alone";
  EXPECT_EQ(sync.bucket_buffer(0).numel(), 4 + 2000 + 4) << "the last bias, its weight and the bias before";
  EXPECT_EQ(sync.bucket_buffer(1).numel(), 2000);
  sync.average();
  EXPECT_EQ(comm.collectives, 2);
  for (const auto& p : params) EXPECT_TRUE(torch::equal(p.grad(), torch::full_like(p, 2.0f)));

  // The reference U-Net (unet_256, ngf 64): its 217.6 MB of gradients in 25 MiB buckets.
  pix2pix::nets::Generator g =
      pix2pix::nets::make_generator(pix2pix::nets::GeneratorOptions{3, 3, 8, 64, pix2pix::nets::Norm::batch, true});
  pix2pix::dist::GradientSync unet(comm, g->parameters(), 25 << 20);
  std::vector<std::int64_t> tiny;
  for (std::size_t k = 0; k < unet.bucket_count(); ++k)
    if (unet.bucket_buffer(k).numel() * 4 <= (64 << 10)) tiny.push_back(unet.bucket_buffer(k).numel());
  EXPECT_TRUE(tiny.empty()) << tiny.size() << " tiny buckets, the first of " << tiny.front() << " values";
  EXPECT_EQ(unet.bucket_count(), 10u);
}
