#include "pix2pix/common/cpu_convolutions.hpp"

#include <ATen/Context.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>

#include "pix2pix/common/torch_compat.hpp"

namespace pix2pix {
namespace {

// See Note [oneDNN's wrong input gradients]: stride-1 shapes with output channels that are not a
// multiple of 16, as the PatchGAN's head and the ResNet generator's last layer have.
struct ProbedShape {
  std::int64_t in, out, kernel, padding, side, batch;
};
constexpr ProbedShape kProbedShapes[] = {
    {8, 1, 4, 1, 8, 1}, {8, 3, 7, 3, 10, 1}, {16, 4, 3, 1, 4, 2}, {8, 15, 3, 1, 4, 2}};

// Values without the RNG: a trainer seeds it after this call and must draw what it always drew.
torch::Tensor filled(torch::IntArrayRef sizes, double step, double scale) {
  std::int64_t n = 1;
  for (const auto s : sizes) n *= s;
  return (torch::arange(n, torch::kFloat).mul(step).sin() * scale).reshape(sizes);
}

torch::Tensor input_gradient(const ProbedShape& s) {
  const auto x = filled({s.batch, s.in, s.side, s.side}, 0.37, 1.0).requires_grad_(true);
  const auto w = filled({s.out, s.in, s.kernel, s.kernel}, 0.11, 0.1);
  const auto y = torch::conv2d(x, w, {}, 1, s.padding);
  return torch::autograd::grad({y}, {x}, {filled(y.sizes(), 0.53, 1.0)})[0];
}

}  // namespace

CpuConvolutions prepare_cpu_convolutions() {
  compat::zero_fill_cpu_allocations();
  return checked_cpu_convolutions();
}

CpuConvolutions checked_cpu_convolutions() {
  static std::mutex mutex;
  static std::optional<CpuConvolutions> first;
  const std::lock_guard<std::mutex> lock(mutex);
  if (!first) first = measure_cpu_convolutions();
  return *first;
}

CpuConvolutions measure_cpu_convolutions() {
  CpuConvolutions result;
  auto& context = at::globalContext();
  if (!context.userEnabledMkldnn()) return result;
  torch::AutoGradMode grad(true);
  for (const auto& shape : kProbedShapes) {
    const auto with = input_gradient(shape);
    context.setUserEnabledMkldnn(false);
    const auto without = input_gradient(shape);
    context.setUserEnabledMkldnn(true);
    const double error = (with - without).abs().max().item<double>() / without.abs().max().item<double>();
    result.onednn_error =
        std::max(result.onednn_error, std::isfinite(error) ? error : std::numeric_limits<double>::infinity());
  }
  if (result.onednn_error > kOneDnnErrorBar) {
    context.setUserEnabledMkldnn(false);
    result.onednn_turned_off = true;
  }
  return result;
}

std::string describe(const CpuConvolutions& convolutions) {
  if (!convolutions.onednn_turned_off) return "";
  std::ostringstream text;
  text << "without oneDNN: its input gradients were wrong here (relative error " << convolutions.onednn_error
       << "; docs/platforms.md)";
  return text.str();
}

}  // namespace pix2pix
