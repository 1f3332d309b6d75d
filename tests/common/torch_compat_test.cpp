// The one-place switch between LibTorch 1.13 and 2.x (torch_compat.hpp): the branch compiled must be
// the one for the LibTorch that CMake found and linked, and each function must do what its callers
// rely on, whichever branch it is.
#include "pix2pix/common/torch_compat.hpp"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace pix2pix;

TEST(TorchCompat, TheCompiledBranchIsTheOneForTheLinkedLibTorch) {
  // PIX2PIX_FOUND_TORCH_VERSION: Torch_VERSION from find_package(Torch), i.e. the package linked.
  int major = 0, minor = 0;
  ASSERT_EQ(std::sscanf(PIX2PIX_FOUND_TORCH_VERSION, "%d.%d", &major, &minor), 2) << PIX2PIX_FOUND_TORCH_VERSION;
  EXPECT_EQ(TORCH_VERSION_MAJOR, major) << "headers " << TORCH_VERSION << ", package " << PIX2PIX_FOUND_TORCH_VERSION;
  EXPECT_EQ(TORCH_VERSION_MINOR, minor) << "headers " << TORCH_VERSION << ", package " << PIX2PIX_FOUND_TORCH_VERSION;
  EXPECT_EQ(compat::kPerDeviceTypeAutocast, major > 2 || (major == 2 && minor >= 4));
}

TEST(TorchCompat, AutocastSwitchesAreSeparatePerDeviceTypeAndRestore) {
  using c10::DeviceType;
  const auto cpu_dtype = compat::autocast_dtype(DeviceType::CPU);
  const auto cuda_dtype = compat::autocast_dtype(DeviceType::CUDA);
  ASSERT_FALSE(compat::autocast_enabled(DeviceType::CPU));
  ASSERT_FALSE(compat::autocast_enabled(DeviceType::CUDA));

  compat::set_autocast(DeviceType::CUDA, true, torch::kHalf);  // flags only: no device needed
  EXPECT_TRUE(compat::autocast_enabled(DeviceType::CUDA));
  EXPECT_FALSE(compat::autocast_enabled(DeviceType::CPU));
  EXPECT_EQ(compat::autocast_dtype(DeviceType::CUDA), torch::kHalf);
  compat::set_autocast(DeviceType::CUDA, false, cuda_dtype);

  compat::set_autocast(DeviceType::CPU, true, torch::kBFloat16);
  EXPECT_TRUE(compat::autocast_enabled(DeviceType::CPU));
  EXPECT_FALSE(compat::autocast_enabled(DeviceType::CUDA));
  EXPECT_EQ(compat::autocast_dtype(DeviceType::CPU), torch::kBFloat16);
  EXPECT_EQ(torch::mm(torch::ones({2, 2}), torch::ones({2, 2})).scalar_type(), torch::kBFloat16);
  compat::set_autocast(DeviceType::CPU, false, cpu_dtype);

  EXPECT_FALSE(compat::autocast_enabled(DeviceType::CPU));
  EXPECT_EQ(compat::autocast_dtype(DeviceType::CPU), cpu_dtype);
  EXPECT_EQ(compat::autocast_dtype(DeviceType::CUDA), cuda_dtype);
  EXPECT_EQ(torch::mm(torch::ones({2, 2}), torch::ones({2, 2})).scalar_type(), torch::kFloat32);
}

TEST(TorchCompat, OptimizerStateKeyFindsEveryParametersAdamState) {
  auto a = torch::randn({3}, torch::requires_grad());
  auto b = torch::randn({2, 2}, torch::requires_grad());
  torch::optim::Adam adam({a, b}, torch::optim::AdamOptions(1e-3));
  (a.sum() + b.sum()).backward();
  adam.step();
  const auto& states = adam.state();
  ASSERT_EQ(states.size(), 2u);
  for (const auto& p : {a, b}) {
    const auto it = states.find(compat::optimizer_state_key(states, p));
    ASSERT_NE(it, states.end());
    const auto& state = static_cast<const torch::optim::AdamParamState&>(*it->second);
    EXPECT_EQ(state.exp_avg().sizes(), p.sizes());  // this parameter's state, not the other's
  }
}

// See Note [oneDNN's padded channels]: after zero_fill_cpu_allocations(), the input gradient of a
// stride-1 convolution with one output channel is finite although freed memory held NaNs. Without
// it, LibTorch 2.6 gave NaN in 99 of 100 backward passes of this shape; LibTorch 1.13 in none.
TEST(TorchCompat, ConvolutionInputGradientsStayFiniteOverFreedNaNs) {
  compat::zero_fill_cpu_allocations();
  EXPECT_EQ(compat::cpu_allocations_zero_filled(), compat::kZeroFillCpuAllocations);
  torch::manual_seed(1);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(8, 1, 4).stride(1).padding(1));
  auto input = torch::randn({1, 8, 8, 8}).requires_grad_(true);
  int non_finite = 0;
  for (int pass = 0; pass < 50; ++pass) {
    {  // NaNs in memory the allocator hands out again
      std::vector<torch::Tensor> freed;
      for (std::int64_t n = 1; n <= (1 << 16); n *= 2) freed.push_back(torch::full({n}, NAN));
    }
    input.mutable_grad().reset();
    const auto output = conv->forward(input);
    output.backward(torch::ones_like(output));
    non_finite += input.grad().isfinite().all().item<bool>() ? 0 : 1;
  }
  EXPECT_EQ(non_finite, 0) << "backward passes with a non-finite input gradient, of 50";
}
