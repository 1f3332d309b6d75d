// See Note [synchronised batch norm]: ranks that each hold a slice of a batch normalise, update their
// running statistics and get input gradients as one BatchNorm2d does over the whole batch; the
// scale's and shift's gradients are each rank's share of the whole one.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "pix2pix/common/error.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/nets/sync_batch_norm.hpp"
#include "support/replayed_ranks.hpp"

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

// Each rank's layer on its slice of `x` (on `device`, in `dtype` and `format`), loss Σ y·g: the
// ranks' outputs and input gradients in rank order, the sums of their scale's and shift's gradients,
// and each rank's running statistics and the name of the autograd function its output came from.
struct Ranks {
  torch::Tensor output, input_grad, weight_grad, bias_grad;
  std::vector<torch::Tensor> running_means, running_vars;
  std::vector<std::string> functions;
};
Ranks run_slices(const std::vector<std::int64_t>& sizes, const torch::Tensor& x, const torch::Tensor& g,
                 const torch::Tensor& weight, const torch::Tensor& bias, const torch::TensorOptions& as,
                 c10::MemoryFormat format) {
  const std::size_t world = sizes.size();
  Ranks ranks;
  std::vector<torch::Tensor> outputs(world), input_grads(world), weight_grads(world), bias_grads(world);
  ranks.running_means.resize(world);
  ranks.running_vars.resize(world);
  ranks.functions.resize(world);
  // See Note [ranks replayed one after another]: on a GPU, ranks as threads would deadlock.
  fixtures::run_replayed_ranks(static_cast<int>(world), [&](int rank, const fixtures::RankSum& sum) {
    const auto r = static_cast<std::size_t>(rank);
    std::int64_t first = 0;
    for (std::size_t k = 0; k < r; ++k) first += sizes[k];
    nets::SyncBatchNorm2d bn(x.size(1), sum);
    bn->to(as.device());
    {
      torch::NoGradGuard no_grad;
      bn->weight.copy_(weight);
      bn->bias.copy_(bias);
    }
    const auto input = x.narrow(0, first, sizes[r]).to(as).contiguous(format).requires_grad_(true);
    const auto y = bn->forward(input);
    (y.to(torch::kFloat32) * g.narrow(0, first, sizes[r]).to(as.device())).sum().backward();
    EXPECT_EQ(bn->num_batches_tracked.item<std::int64_t>(), 1);
    EXPECT_EQ(y.scalar_type(), input.scalar_type());
    EXPECT_TRUE(y.is_contiguous(format));
    outputs[r] = y.detach().to(torch::kCPU, torch::kFloat32);
    input_grads[r] = input.grad().to(torch::kCPU, torch::kFloat32);
    weight_grads[r] = bn->weight.grad().cpu();
    bias_grads[r] = bn->bias.grad().cpu();
    ranks.running_means[r] = bn->running_mean.cpu();
    ranks.running_vars[r] = bn->running_var.cpu();
    ranks.functions[r] = y.grad_fn()->name();
  });
  ranks.output = torch::cat(outputs);
  ranks.input_grad = torch::cat(input_grads);
  ranks.weight_grad = torch::stack(weight_grads).sum(0);
  ranks.bias_grad = torch::stack(bias_grads).sum(0);
  return ranks;
}

// `ranks` against one BatchNorm2d over the whole batch, relative to the largest value: values
// within `tolerance`, gradients within `grad_tolerance`; and every rank's output from `function`.
void expect_the_whole_batch(const Ranks& ranks, const Reference& ref, double tolerance, double grad_tolerance,
                            const std::string& function) {
  for (size_t r = 0; r < ranks.functions.size(); ++r) {
    EXPECT_NE(ranks.functions[r].find(function), std::string::npos) << "rank " << r << ": " << ranks.functions[r];
    EXPECT_LT(relative(ranks.running_means[r], ref.running_mean), tolerance) << "rank " << r;
    EXPECT_LT(relative(ranks.running_vars[r], ref.running_var), tolerance) << "rank " << r;
  }
  EXPECT_LT(relative(ranks.output, ref.output), tolerance);
  EXPECT_LT(relative(ranks.input_grad, ref.input_grad), grad_tolerance);
  EXPECT_LT(relative(ranks.weight_grad, ref.weight_grad), grad_tolerance);
  EXPECT_LT(relative(ranks.bias_grad, ref.bias_grad), grad_tolerance);
}

// An offset mean, as activations have: the shifted sums must keep the variance exact.
struct Batch {
  torch::Tensor x, g, weight, bias;
};
Batch batch_of(std::int64_t total) {
  torch::manual_seed(3);
  return {torch::randn({total, 5, 6, 7}) * 3 + 40, torch::randn({total, 5, 6, 7}), torch::rand({5}) + 0.5,
          torch::randn({5})};
}

}  // namespace

class SyncBatchNormAtWorld : public ::testing::TestWithParam<std::tuple<int, std::vector<std::int64_t>>> {};

TEST_P(SyncBatchNormAtWorld, RanksOfSlicesEqualOneBatchNormOfTheWholeBatch) {
  const auto sizes = std::get<1>(GetParam());  // each rank's batch (they may differ)
  ASSERT_EQ(static_cast<size_t>(std::get<0>(GetParam())), sizes.size());
  std::int64_t total = 0;
  for (const auto n : sizes) total += n;
  const Batch b = batch_of(total);
  const Reference ref = whole_batch(b.x, b.g, b.weight, b.bias);
  const Ranks ranks = run_slices(sizes, b.x, b.g, b.weight, b.bias, torch::kFloat32, c10::MemoryFormat::Contiguous);
  expect_the_whole_batch(ranks, ref, 1e-5, 1e-4, "SyncBatchNormFunction");
}

// See Note [synchronised batch norm on a GPU]: there the layer runs PyTorch's SyncBatchNorm
// kernels, in float32 and in bf16, NCHW and NHWC, and equals the whole batch's BatchNorm2d as the
// CPU's layer does (bf16: the whole batch of the same bf16 values, to a rounding of bf16).
TEST(SyncBatchNorm, OnAGpuRanksOfSlicesRunAtensKernelsAndEqualOneBatchNormOfTheWholeBatch) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  const std::vector<std::int64_t> sizes{3, 1, 2, 2};
  const Batch b = batch_of(8);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16})
    for (const auto format : {c10::MemoryFormat::Contiguous, c10::MemoryFormat::ChannelsLast}) {
      SCOPED_TRACE(std::string(c10::toString(dtype)) + (format == c10::MemoryFormat::ChannelsLast ? " NHWC" : " NCHW"));
      // The values the layer sees, and the output gradient backward hands it, in float32.
      const auto x = b.x.to(dtype).to(torch::kFloat32), g = b.g.to(dtype).to(torch::kFloat32);
      const Reference ref = whole_batch(x, g, b.weight, b.bias);
      const Ranks ranks =
          run_slices(sizes, x, g, b.weight, b.bias, torch::TensorOptions(torch::kCUDA).dtype(dtype), format);
      // bf16: the output and the input's gradient are rounded to bf16 (2^-8 of a value). float32:
      // the CPU's reference sums in another order (the CPU's own layer on NHWC is 1.2e-5 from it).
      const double tolerance = dtype == torch::kFloat32 ? 3e-5 : 1e-2;
      expect_the_whole_batch(ranks, ref, tolerance, 10 * tolerance, "SyncBatchNormKernels");
    }
}

INSTANTIATE_TEST_SUITE_P(Worlds, SyncBatchNormAtWorld,
                         ::testing::Values(std::make_tuple(1, std::vector<std::int64_t>{4}),
                                           std::make_tuple(2, std::vector<std::int64_t>{2, 2}),
                                           std::make_tuple(3, std::vector<std::int64_t>{1, 1, 1}),
                                           std::make_tuple(4, std::vector<std::int64_t>{3, 1, 2, 2}),
                                           std::make_tuple(8, std::vector<std::int64_t>{1, 1, 1, 1, 1, 1, 1, 1})));

// --sync-bn as resolved for a run: batch norm sums over ranks only with batch norm, another rank and
// a communicator that takes backward's sums (MPI on GPU ranks does not: auto is off there, on refused).
TEST(SyncBnOption, SumsOnlyWithBatchNormAnotherRankAndACommunicatorThatTakesBackwardsThreads) {
  using nets::SyncBn;
  for (const SyncBn option : {SyncBn::automatic, SyncBn::on}) {
    const std::string name = nets::to_string(option);
    EXPECT_TRUE(nets::resolve_sync_bn(option, true, 2, true, "nccl")) << name;
    EXPECT_TRUE(nets::resolve_sync_bn(option, true, 4, true, "mpi")) << name;
    EXPECT_FALSE(nets::resolve_sync_bn(option, false, 4, true, "nccl")) << name;  // nothing to synchronise
    EXPECT_FALSE(nets::resolve_sync_bn(option, true, 1, true, "nccl")) << name;   // no other rank
    EXPECT_FALSE(nets::resolve_sync_bn(option, false, 2, false, "mpi")) << name;
  }
  EXPECT_FALSE(nets::resolve_sync_bn(SyncBn::off, true, 4, true, "nccl"));
  EXPECT_FALSE(nets::resolve_sync_bn(SyncBn::automatic, true, 2, false, "mpi"));
  try {
    nets::resolve_sync_bn(SyncBn::on, true, 2, false, "mpi");
    ADD_FAILURE() << "--sync-bn on with a communicator bound to the main thread was taken";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--sync-bn on:"), std::string::npos) << what;
    EXPECT_NE(what.find("the mpi communicator may only be called from the main thread"), std::string::npos) << what;
  }
  EXPECT_EQ(nets::parse_sync_bn("auto"), SyncBn::automatic);
  EXPECT_EQ(nets::to_string(nets::parse_sync_bn("off")), "off");
}

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

// See Note [ranks replayed one after another]: a second sum that depends on the first gets the
// totals of ranks summing together; ranks whose sums disagree are an error, not a wrong total.
TEST(ReplayedRanks, SumWhatRanksSummingTogetherSumAndRefuseRanksThatDisagree) {
  std::vector<double> firsts(3), seconds(3);
  int rounds = 0;
  fixtures::run_replayed_ranks(3, [&](int rank, const fixtures::RankSum& sum) {
    if (rank == 0) ++rounds;
    torch::Tensor t = torch::full({1}, rank + 1.0, torch::kFloat64);
    sum(t);
    firsts[static_cast<std::size_t>(rank)] = t.item<double>();
    t = t * 10 + rank;
    sum(t);
    seconds[static_cast<std::size_t>(rank)] = t.item<double>();
  });
  EXPECT_EQ(rounds, 3) << "a round for each sum and one with every total";
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_EQ(firsts[static_cast<std::size_t>(rank)], 6.0);
    EXPECT_EQ(seconds[static_cast<std::size_t>(rank)], 3 * 60.0 + 0 + 1 + 2);
  }
  EXPECT_THROW(fixtures::run_replayed_ranks(2,
                                            [](int rank, const fixtures::RankSum& sum) {
                                              torch::Tensor t = torch::ones({1});
                                              sum(t);
                                              if (rank == 0) sum(t);
                                            }),
               Error);
}
