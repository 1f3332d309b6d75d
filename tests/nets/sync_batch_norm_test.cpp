// See Note [synchronised batch norm]: ranks that each hold a slice of a batch normalise, update their
// running statistics and get input gradients as one BatchNorm2d does over the whole batch; the
// scale's and shift's gradients are each rank's share of the whole one.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>
#include <vector>

#include "pix2pix/nets/networks.hpp"
#include "pix2pix/nets/sync_batch_norm.hpp"
#include "support/thread_communicator.hpp"

using namespace pix2pix;

namespace {

double relative(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item<double>();
}

struct Reference {
  torch::Tensor output, input_grad, weight_grad, bias_grad, running_mean, running_var;
};

// One BatchNorm2d over the whole batch `x`, loss Σ y·g.
Reference whole_batch(const torch::Tensor& x, const torch::Tensor& g, const torch::Tensor& weight,
                      const torch::Tensor& bias) {
  torch::nn::BatchNorm2d bn(x.size(1));
  {
    torch::NoGradGuard no_grad;
    bn->weight.copy_(weight);
    bn->bias.copy_(bias);
  }
  const auto input = x.clone().requires_grad_(true);
  const auto y = bn->forward(input);
  (y * g).sum().backward();
  return {
      y.detach(), input.grad(), bn->weight.grad(), bn->bias.grad(), bn->running_mean.clone(), bn->running_var.clone()};
}

}  // namespace

class SyncBatchNormAtWorld : public ::testing::TestWithParam<std::tuple<int, std::vector<std::int64_t>>> {};

TEST_P(SyncBatchNormAtWorld, RanksOfSlicesEqualOneBatchNormOfTheWholeBatch) {
  const auto [world, sizes] = GetParam();  // each rank's batch (they may differ)
  torch::manual_seed(3);
  std::int64_t total = 0;
  for (const auto n : sizes) total += n;
  // An offset mean, as activations have: the shifted sums must keep the variance exact.
  const auto x = torch::randn({total, 5, 6, 7}) * 3 + 40;
  const auto g = torch::randn({total, 5, 6, 7});
  const auto weight = torch::rand({5}) + 0.5, bias = torch::randn({5});
  const Reference ref = whole_batch(x, g, weight, bias);

  std::mutex mutex;
  std::vector<torch::Tensor> outputs(static_cast<size_t>(world)), input_grads(outputs.size());
  torch::Tensor weight_grad = torch::zeros({5}), bias_grad = torch::zeros({5});
  fixtures::run_ranks(world, [&](fixtures::ThreadCommunicator& comm) {
    const int r = comm.rank();
    std::int64_t first = 0;
    for (int k = 0; k < r; ++k) first += sizes[static_cast<size_t>(k)];
    nets::SyncBatchNorm2d bn(5, [&comm](torch::Tensor& sums) { comm.allreduce_sum(sums); });
    {
      torch::NoGradGuard no_grad;
      bn->weight.copy_(weight);
      bn->bias.copy_(bias);
    }
    const auto input = x.narrow(0, first, sizes[static_cast<size_t>(r)]).clone().requires_grad_(true);
    const auto y = bn->forward(input);
    (y * g.narrow(0, first, sizes[static_cast<size_t>(r)])).sum().backward();
    EXPECT_LT(relative(bn->running_mean, ref.running_mean), 1e-5) << "rank " << r;
    EXPECT_LT(relative(bn->running_var, ref.running_var), 1e-5) << "rank " << r;
    EXPECT_EQ(bn->num_batches_tracked.item<std::int64_t>(), 1);
    std::lock_guard<std::mutex> lock(mutex);
    outputs[static_cast<size_t>(r)] = y.detach();
    input_grads[static_cast<size_t>(r)] = input.grad();
    weight_grad += bn->weight.grad();
    bias_grad += bn->bias.grad();
  });
  EXPECT_LT(relative(torch::cat(outputs), ref.output), 1e-5);
  EXPECT_LT(relative(torch::cat(input_grads), ref.input_grad), 1e-4);
  EXPECT_LT(relative(weight_grad, ref.weight_grad), 1e-4);
  EXPECT_LT(relative(bias_grad, ref.bias_grad), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Worlds, SyncBatchNormAtWorld,
                         ::testing::Values(std::make_tuple(1, std::vector<std::int64_t>{4}),
                                           std::make_tuple(2, std::vector<std::int64_t>{2, 2}),
                                           std::make_tuple(3, std::vector<std::int64_t>{1, 1, 1}),
                                           std::make_tuple(4, std::vector<std::int64_t>{3, 1, 2, 2}),
                                           std::make_tuple(8, std::vector<std::int64_t>{1, 1, 1, 1, 1, 1, 1, 1})));

// Without the sum each rank normalises with its own batch (--sync-bn off): not the whole batch's.
TEST(SyncBatchNorm, PerRankBatchNormIsNotTheWholeBatchs) {
  torch::manual_seed(4);
  const auto x = torch::randn({4, 3, 5, 5}) + torch::arange(4).view({4, 1, 1, 1}).to(torch::kFloat32);
  const auto g = torch::randn({4, 3, 5, 5});
  const Reference ref = whole_batch(x, g, torch::ones({3}), torch::zeros({3}));
  torch::nn::BatchNorm2d own(3);
  const auto half = own->forward(x.narrow(0, 0, 2));
  EXPECT_GT(relative(half.detach(), ref.output.narrow(0, 0, 2)), 0.1);
}

// In eval mode the layer is a BatchNorm2d of its running statistics, and the networks build it
// only for batch norm with a sum.
TEST(SyncBatchNorm, EvalUsesTheRunningStatisticsAndTheNetworksBuildItWhenAsked) {
  nets::SyncBatchNorm2d bn(3, [](torch::Tensor&) { FAIL() << "no sum in eval mode"; });
  bn->eval();
  {
    torch::NoGradGuard no_grad;
    bn->running_mean.fill_(2);
    bn->running_var.fill_(4);
  }
  const auto y = bn->forward(torch::full({1, 3, 2, 2}, 4.0));
  EXPECT_NEAR(y.max().item<double>(), 1.0, 1e-4);
  int sums = 0;
  const nets::BatchStatsSum count = [&sums](torch::Tensor&) { ++sums; };
  nets::GeneratorOptions o{1, 1, 5, 4, nets::Norm::batch, false};
  o.batch_stats_sum = count;
  auto generator = nets::make_generator(o);
  int synced = 0, plain = 0;
  for (const auto& m : generator->modules()) {
    synced += m->as<nets::SyncBatchNorm2d>() != nullptr ? 1 : 0;
    plain += m->as<torch::nn::BatchNorm2d>() != nullptr ? 1 : 0;
  }
  EXPECT_GT(synced, 0);
  EXPECT_EQ(plain, 0) << "every batch norm of the generator is synchronised";
  generator->train();
  generator->forward(torch::randn({2, 1, 32, 32})).sum().backward();
  EXPECT_EQ(sums, 2 * synced) << "one sum in forward and one in backward for each layer";
  o.norm = nets::Norm::instance;
  auto instance = nets::make_generator(o);
  for (const auto& m : instance->modules()) EXPECT_EQ(m->as<nets::SyncBatchNorm2d>(), nullptr);
  // Its state has BatchNorm2d's names and shapes: a checkpoint of one loads into the other.
  torch::nn::BatchNorm2d plain_bn(3);
  nets::SyncBatchNorm2d synced_bn(3, count);
  std::vector<std::string> plain_names, synced_names;
  for (const auto& p : plain_bn->named_parameters()) plain_names.push_back(p.key());
  for (const auto& b : plain_bn->named_buffers()) plain_names.push_back(b.key());
  for (const auto& p : synced_bn->named_parameters()) synced_names.push_back(p.key());
  for (const auto& b : synced_bn->named_buffers()) synced_names.push_back(b.key());
  EXPECT_EQ(synced_names, plain_names);
}
