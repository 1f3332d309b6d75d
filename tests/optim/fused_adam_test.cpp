// FusedAdam is torch::optim::Adam in one pass: the same trajectory to float rounding, the same
// state (checkpoints load either way), torch's own step where it does not fuse. And the
// non-finite scan it shares cpu_loops with.
#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include "optim/optimizer_fixtures.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/torch_compat.hpp"
#include "pix2pix/optim/cpu_loops.hpp"
#include "pix2pix/optim/fused_adam.hpp"

using pix2pix::optim::FusedAdam;

using pix2pix::optim_tests::saved;

namespace {

std::vector<torch::Tensor> make_parameters(std::uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> params;
  for (const auto& shape : std::vector<std::vector<std::int64_t>>{{1}, {7}, {33, 31}, {4, 3, 4, 4}, {70000}})
    params.push_back(torch::randn(shape).requires_grad_(true));
  return params;
}

// Both optimizers see the same gradients at every step (random, including zeros and large ones).
void give_gradients(std::vector<torch::Tensor>& a, std::vector<torch::Tensor>& b, int step) {
  torch::manual_seed(100 + static_cast<std::uint64_t>(step));
  for (size_t i = 0; i < a.size(); ++i) {
    auto g = torch::randn_like(a[i]) * (i == 4 ? 100.0 : 0.01);
    if (i == 1) g[3] = 0;
    a[i].mutable_grad() = g.clone();
    b[i].mutable_grad() = g.clone();
  }
}

void expect_close(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, const std::string& what) {
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(torch::allclose(a[i], b[i], 1e-5, 1e-7))
        << what << ", parameter " << i << ": max difference " << (a[i] - b[i]).abs().max().item<float>();
}

// Steps [first, last) of both optimizers on the same gradients.
void step_both(torch::optim::Optimizer& reference, std::vector<torch::Tensor>& reference_params,
               torch::optim::Optimizer& fused, std::vector<torch::Tensor>& fused_params, int first, int last) {
  for (int step = first; step < last; ++step) {
    give_gradients(reference_params, fused_params, step);
    reference.step();
    fused.step();
  }
}

void load(torch::optim::Optimizer& optimizer, const std::string& bytes) {
  std::istringstream in(bytes);
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  optimizer.load(archive);
}

}  // namespace

TEST(FusedAdam, FollowsTorchAdamWithAndWithoutWeightDecay) {
  for (const double weight_decay : {0.0, 0.01}) {
    auto reference_params = make_parameters(1), fused_params = make_parameters(1);
    const auto options = torch::optim::AdamOptions(2e-3).betas({0.5, 0.999}).weight_decay(weight_decay);
    torch::optim::Adam reference(reference_params, options);
    FusedAdam fused(fused_params, options);
    step_both(reference, reference_params, fused, fused_params, 0, 20);
    expect_close(reference_params, fused_params, "weight decay " + std::to_string(weight_decay));
    // The parameters moved: the comparison is not between two untouched sets.
    EXPECT_FALSE(torch::allclose(fused_params[4], make_parameters(1)[4], 1e-3, 1e-3));
  }
}

// See Note [the optimiser's state before the first step]: the state made ahead is the one the first
// step makes, so the steps after are the same bit for bit; a state that exists stays.
TEST(FusedAdam, MakesItsStateBeforeTheFirstStepAsTheStepWould) {
  auto ahead_params = make_parameters(5), lazy_params = make_parameters(5);
  const auto options = torch::optim::AdamOptions(1e-3).betas({0.5, 0.999});
  FusedAdam ahead(ahead_params, options), lazy(lazy_params, options);
  ahead.make_state();
  ASSERT_EQ(ahead.state().size(), ahead_params.size());
  EXPECT_TRUE(lazy.state().empty());
  step_both(ahead, ahead_params, lazy, lazy_params, 0, 3);
  for (size_t i = 0; i < ahead_params.size(); ++i) EXPECT_TRUE(torch::equal(ahead_params[i], lazy_params[i])) << i;
  const std::string before = saved(ahead);
  ahead.make_state();
  EXPECT_EQ(saved(ahead), before) << "make_state after steps changed the state";
}

TEST(FusedAdam, StateIsTorchAdamsSoCheckpointsLoadEitherWay) {
  auto reference_params = make_parameters(2), fused_params = make_parameters(2);
  const auto options = torch::optim::AdamOptions(1e-3).betas({0.5, 0.999});
  torch::optim::Adam reference(reference_params, options);
  FusedAdam fused(fused_params, options);
  step_both(reference, reference_params, fused, fused_params, 0, 3);
  // Swap the optimizer states through torch::optim's own serialization, then go on.
  const std::string fused_saved = saved(fused), reference_saved = saved(reference);
  auto loaded_reference_params = make_parameters(2), loaded_fused_params = make_parameters(2);
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < fused_params.size(); ++i) {
      loaded_reference_params[i].copy_(fused_params[i]);
      loaded_fused_params[i].copy_(reference_params[i]);
    }
  }
  torch::optim::Adam loaded_reference(loaded_reference_params, options);
  FusedAdam loaded_fused(loaded_fused_params, options);
  load(loaded_reference, fused_saved);
  load(loaded_fused, reference_saved);
  step_both(reference, reference_params, fused, fused_params, 3, 6);
  step_both(loaded_reference, loaded_reference_params, loaded_fused, loaded_fused_params, 3, 6);
  expect_close(reference_params, loaded_fused_params, "torch state continued by FusedAdam");
  expect_close(fused_params, loaded_reference_params, "FusedAdam state continued by torch::optim::Adam");
}

// See Note [optimizer state across LibTorch versions]: torch::optim's archive as LibTorch 1.x
// (hex names) and 2.x (decimal names) write it, made by hand so that both run on either version:
// each parameter gets its own state back, named the other way round to the parameters' order.
std::string adam_archive(bool hex_names) {
  const auto name = [&](unsigned long long address) {
    std::ostringstream text;
    if (hex_names)
      text << "0x" << std::hex << address;
    else
      text << address;
    return text.str();
  };
  torch::serialize::OutputArchive archive, state, groups, group, options;
  archive.write("pytorch_version", c10::IValue(std::string("1.5.0")));
  const unsigned long long addresses[] = {0x55d3c0a1b2c0ULL, 0x55d3c0a1b000ULL};
  for (int i = 0; i < 2; ++i) {
    torch::optim::AdamParamState s;
    s.step(3 + 2 * i);
    s.exp_avg(torch::full({4}, 0.5 + i));
    s.exp_avg_sq(torch::full({4}, 0.25 + i));
    torch::serialize::OutputArchive one;
    s.serialize(one);
    state.write(name(addresses[i]), one);
  }
  archive.write("state", state);
  groups.write("param_groups/size", torch::tensor(static_cast<std::int64_t>(1)));
  group.write("params/size", torch::tensor(static_cast<std::int64_t>(2)));
  group.write("params/0", c10::IValue(name(addresses[1])));  // the first parameter's state is the second written
  group.write("params/1", c10::IValue(name(addresses[0])));
  torch::optim::AdamOptions(7e-4).betas({0.5, 0.999}).serialize(options);
  group.write("options", options);
  groups.write("param_groups/0", group);
  archive.write("param_groups", groups);
  std::ostringstream bytes;
  archive.save_to(bytes);
  return bytes.str();
}

TEST(FusedAdam, LoadsTheStateOfEitherLibTorchVersionsArchive) {
  for (const bool hex : {true, false}) {
    std::vector<torch::Tensor> params = {torch::zeros({4}, torch::requires_grad()),
                                         torch::zeros({4}, torch::requires_grad())};
    FusedAdam adam(params, torch::optim::AdamOptions(1e-3));
    std::istringstream bytes(adam_archive(hex));
    torch::serialize::InputArchive archive;
    archive.load_from(bytes);
    adam.load(archive);
    const auto& state = adam.state();
    ASSERT_EQ(state.size(), 2u) << (hex ? "hex" : "decimal") << " names";
    for (int k = 0; k < 2; ++k) {
      const auto& s = static_cast<const torch::optim::AdamParamState&>(
          *state.at(pix2pix::compat::optimizer_state_key(state, params[static_cast<size_t>(k)])));
      const int written = 1 - k;  // params/0 names the second state written
      EXPECT_EQ(s.step(), 3 + 2 * written) << "parameter " << k << (hex ? ", hex" : ", decimal");
      EXPECT_TRUE(torch::equal(s.exp_avg(), torch::full({4}, 0.5 + written)));
    }
    EXPECT_DOUBLE_EQ(static_cast<torch::optim::AdamOptions&>(adam.param_groups()[0].options()).lr(), 7e-4);
  }
  // A state for a parameter group of another size is refused, not half loaded.
  FusedAdam three({torch::zeros({4}, torch::requires_grad()), torch::zeros({4}, torch::requires_grad()),
                   torch::zeros({4}, torch::requires_grad())},
                  torch::optim::AdamOptions(1e-3));
  std::istringstream bytes(adam_archive(true));
  torch::serialize::InputArchive archive;
  archive.load_from(bytes);
  EXPECT_THROW(three.load(archive), pix2pix::Error);
}

// See Note [foreach Adam]: where the CPU loop does not apply (here a double parameter; on GPUs every
// parameter) the _foreach ops run, which on CPUs equal torch::optim::Adam bit for bit; amsgrad
// takes torch's own step.
TEST(FusedAdam, RunsForeachOpsWhereItDoesNotFuseAndTorchsStepForAmsgrad) {
  using Kernel = FusedAdam::Kernel;
  for (const auto& [amsgrad, weight_decay] :
       std::vector<std::pair<bool, double>>{{true, 0.0}, {false, 0.0}, {false, 0.01}}) {
    auto a = make_parameters(3), b = make_parameters(3);
    if (!amsgrad) {
      a[2] = a[2].detach().to(torch::kFloat64).requires_grad_(true);
      b[2] = b[2].detach().to(torch::kFloat64).requires_grad_(true);
    }
    const auto options = torch::optim::AdamOptions(1e-3).amsgrad(amsgrad).weight_decay(weight_decay);
    torch::optim::Adam reference(a, options);
    FusedAdam fused(b, options);
    for (int step = 0; step < 4; ++step) {
      give_gradients(a, b, step);
      if (!amsgrad) {
        a[2].mutable_grad() = a[2].grad().to(torch::kFloat64);
        b[2].mutable_grad() = b[2].grad().to(torch::kFloat64);
      }
      if (step == 2) b[1].mutable_grad() = a[1].mutable_grad() = torch::Tensor();  // one without a gradient
      reference.step();
      fused.step();
      EXPECT_EQ(fused.last_kernel(), amsgrad ? Kernel::torch_adam : Kernel::foreach_ops);
    }
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_TRUE(torch::equal(a[i], b[i]))
          << "amsgrad " << amsgrad << ", weight decay " << weight_decay << ", parameter " << i;
    EXPECT_FALSE(torch::equal(b[2].detach(), make_parameters(3)[2].to(torch::kFloat64)));
  }
  auto params = make_parameters(3), twins = make_parameters(3);
  FusedAdam fused(params, torch::optim::AdamOptions(1e-3));
  give_gradients(params, twins, 0);
  fused.step();
  EXPECT_EQ(fused.last_kernel(), Kernel::cpu_loop);
}

TEST(FusedAdam, AParameterWithoutGradientIsLeftAlone) {
  auto params = make_parameters(4);
  const auto before = params[1].detach().clone();
  FusedAdam fused(params, torch::optim::AdamOptions(1e-2));
  for (auto& p : params) p.mutable_grad() = torch::ones_like(p);
  params[1].mutable_grad() = torch::Tensor();
  fused.step();
  EXPECT_TRUE(torch::equal(params[1], before));
  EXPECT_FALSE(torch::equal(params[0].detach(), make_parameters(4)[0]));
}

TEST(CpuLoops, HasNonFiniteFindsEveryNaNAndInfinityAnywhere) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(37, 1.0f);
  x[5] = std::numeric_limits<float>::max();
  x[6] = std::numeric_limits<float>::denorm_min();
  x[7] = -0.0f;
  EXPECT_FALSE(pix2pix::optim::has_non_finite(x.data(), static_cast<std::int64_t>(x.size())));
  for (const float bad : {inf, -inf, std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()})
    for (size_t i = 0; i < x.size(); ++i) {
      auto y = x;
      y[i] = bad;
      EXPECT_TRUE(pix2pix::optim::has_non_finite(y.data(), static_cast<std::int64_t>(y.size()))) << i;
      EXPECT_FALSE(pix2pix::optim::has_non_finite(y.data(), static_cast<std::int64_t>(i))) << "before " << i;
    }
}
