// See Note [oneDNN's wrong input gradients]: after prepare_cpu_convolutions(), the input gradients
// of the product's stride-1 convolutions whose output channels are not a multiple of 16 match a
// float64 reference, on machines where oneDNN's are wrong (it turned oneDNN off) as elsewhere.
#include <ATen/Context.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>

#include "pix2pix/common/cpu_convolutions.hpp"
#include "pix2pix/common/torch_compat.hpp"

namespace {

struct Shape {
  std::int64_t in, out, kernel, padding, side, batch;
};

// The input gradient in float through LibTorch's CPU convolution, against the same in float64.
double relative_error(const Shape& s) {
  torch::manual_seed(7);
  const auto x = torch::randn({s.batch, s.in, s.side, s.side});
  const auto w = torch::randn({s.out, s.in, s.kernel, s.kernel}) * 0.1;
  const auto gradient = [&](torch::ScalarType type) {
    const auto input = x.to(type).requires_grad_(true);
    const auto y = torch::conv2d(input, w.to(type), {}, 1, s.padding);
    torch::manual_seed(8);
    const auto upstream = torch::randn(y.sizes()).to(type);
    return torch::autograd::grad({y}, {input}, {upstream})[0].to(torch::kDouble);
  };
  const auto reference = gradient(torch::kDouble);
  return ((gradient(torch::kFloat) - reference).abs().max() / reference.abs().max()).item<double>();
}

TEST(CpuConvolutions, InputGradientsMatchFloat64AfterThePreparation) {
  // The test main prepared this process already (and prepare_cpu_convolutions() answers that first
  // result now): measured again from LibTorch's default.
  auto& context = at::globalContext();
  context.setUserEnabledMkldnn(true);
  const auto prepared = pix2pix::measure_cpu_convolutions();
  std::printf("oneDNN's input gradients here: relative error %g; oneDNN %s\n", prepared.onednn_error,
              prepared.onednn_turned_off ? "turned off" : "kept");
  EXPECT_EQ(pix2pix::compat::cpu_allocations_zero_filled(), pix2pix::compat::kZeroFillCpuAllocations);
  // The product's shapes: the PatchGAN's head, the ResNet generator's last layer, and others the
  // defect touched on an AMD EPYC (16 -> 4 gave NaN there).
  const Shape shapes[] = {{512, 1, 4, 1, 6, 1}, {64, 3, 7, 3, 16, 1}, {64, 1, 4, 1, 3, 8},
                          {16, 4, 3, 1, 4, 2},  {8, 17, 3, 1, 4, 2},  {8, 4, 3, 1, 4, 2}};
  for (const auto& s : shapes) {
    const double error = relative_error(s);
    EXPECT_LE(error, 1e-5) << s.in << " -> " << s.out << ", " << s.kernel << "x" << s.kernel << ": oneDNN "
                           << (prepared.onednn_turned_off ? "turned off" : "kept") << ", measured "
                           << prepared.onednn_error;
  }
  // Where it is off, it said why; where it is kept, it measured rounding.
  EXPECT_EQ(context.userEnabledMkldnn(), !prepared.onednn_turned_off);
  if (prepared.onednn_turned_off) {
    EXPECT_GT(prepared.onednn_error, pix2pix::kOneDnnErrorBar);
    EXPECT_NE(pix2pix::describe(prepared).find("without oneDNN"), std::string::npos);
  } else {
    EXPECT_LE(prepared.onednn_error, pix2pix::kOneDnnErrorBar);
    EXPECT_EQ(pix2pix::describe(prepared), "");
  }
}

}  // namespace
