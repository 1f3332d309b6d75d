// See Note [cuDNN's autotuner and determinism] (convolution_settings.hpp).
#include "pix2pix/dist/convolution_settings.hpp"

#include "pix2pix/common/cpu_convolutions.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::dist {
namespace {

// See Note [oneDNN's wrong input gradients]: the start-up words where a CPU runs its convolutions
// without oneDNN ("" where it kept it).
std::string cpu_kernels(const CpuConvolutions& convolutions) {
  const std::string text = describe(convolutions);
  return text.empty() ? "" : "CPU convolutions " + text;
}

}  // namespace

std::string apply_convolution_settings(const ConvolutionSettings& settings, const torch::Device& device) {
  if (settings.autotune.value_or(false) && !device.is_cuda())
    throw UsageError("--cudnn-benchmark on needs GPU ranks (--device cuda): cuDNN tunes GPU convolutions only");
  if (settings.autotune.value_or(false) && settings.deterministic)
    throw UsageError(
        "--cudnn-benchmark on and --deterministic contradict each other: the autotuner picks "
        "algorithms by timing them, which differs between runs");
  const bool autotune = device.is_cuda() && !settings.deterministic && settings.autotune.value_or(true);
  at::globalContext().setBenchmarkCuDNN(autotune);
  at::globalContext().setDeterministicCuDNN(settings.deterministic);
  at::globalContext().setDeterministicAlgorithms(settings.deterministic, /*warn_only=*/true);
  // A CPU rank trains on right gradients (zero-filled allocations, oneDNN measured once per process).
  const std::string cpu = device.is_cuda() ? "" : cpu_kernels(prepare_cpu_convolutions());
  if (settings.deterministic)
    return std::string("kernels: deterministic (--deterministic: ") +
           (device.is_cuda() ? "cuDNN's deterministic algorithms, no autotuning; " : "") +
           "an op without a deterministic kernel is warned of)" + (cpu.empty() ? "" : "; " + cpu);
  if (!device.is_cuda()) return cpu.empty() ? "" : "kernels: " + cpu;
  if (!autotune) return "kernels: cuDNN's heuristic algorithms (--cudnn-benchmark off)";
  return std::string("kernels: cuDNN autotuned for the fixed training shapes (--cudnn-benchmark ") +
         (settings.autotune ? "on" : "auto") + "; off: cuDNN's heuristics)";
}

// See Note [inference kernels are deterministic] (convolution_settings.hpp).
std::string apply_inference_convolution_settings(const torch::Device& device) {
  at::globalContext().setBenchmarkCuDNN(false);
  at::globalContext().setDeterministicCuDNN(true);
  if (!device.is_cuda()) {
    // See Note [oneDNN's wrong input gradients]: the kernels training's validation ran here.
    const std::string cpu = cpu_kernels(checked_cpu_convolutions());
    return cpu.empty() ? "" : "kernels: " + cpu;
  }
  return "kernels: cuDNN's deterministic algorithms, no autotuning (the same files on any number of ranks)";
}

}  // namespace pix2pix::dist
