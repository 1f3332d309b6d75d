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
  if (settings.tf32.value_or(false) && !device.is_cuda())
    throw UsageError("--tf32 on needs GPU ranks (--device cuda): a CPU computes float32 convolutions in float32");
  const bool autotune = device.is_cuda() && !settings.deterministic && settings.autotune.value_or(true);
  // Note [TF32 convolutions]: float32 convolutions on a GPU run on TF32 tensor cores unless told
  // off, as PyTorch's do by default (torch.backends.cudnn.allow_tf32): products of 10-bit
  // mantissas, a relative error near 1e-3 a layer instead of float32's 1e-7. Training does not
  // mind; comparisons of runs that differ in rounding only do: 4 GPU ranks x 1 parted from 1 GPU
  // x 4 by 2.7e-3 after an epoch with batch norm over ranks (2026-11-30), where CPUs part by
  // 3e-8 to 5e-6 (tests/dist/sync_bn_epoch_test.sh runs with --tf32 off).
  const bool tf32 = device.is_cuda() && settings.tf32.value_or(true);
  at::globalContext().setAllowTF32CuDNN(tf32);
  const std::string precision = !device.is_cuda() ? ""
                                : tf32 ? std::string("; float32 convolutions on TF32 tensor cores (--tf32 ") +
                                             (settings.tf32 ? "on" : "auto") + "; off: in float32)"
                                       : "; float32 convolutions in float32 (--tf32 off)";
  at::globalContext().setBenchmarkCuDNN(autotune);
  at::globalContext().setDeterministicCuDNN(settings.deterministic);
  at::globalContext().setDeterministicAlgorithms(settings.deterministic, /*warn_only=*/true);
  // A CPU rank trains on right gradients (zero-filled allocations, oneDNN measured once per process).
  const std::string cpu = device.is_cuda() ? "" : cpu_kernels(prepare_cpu_convolutions());
  if (settings.deterministic)
    return std::string("kernels: deterministic (--deterministic: ") +
           (device.is_cuda() ? "cuDNN's deterministic algorithms, no autotuning; " : "") +
           "an op without a deterministic kernel is warned of)" + (cpu.empty() ? "" : "; " + cpu) + precision;
  if (!device.is_cuda()) return cpu.empty() ? "" : "kernels: " + cpu;
  if (!autotune) return "kernels: cuDNN's heuristic algorithms (--cudnn-benchmark off)" + precision;
  return std::string("kernels: cuDNN autotuned for the fixed training shapes (--cudnn-benchmark ") +
         (settings.autotune ? "on" : "auto") + "; off: cuDNN's heuristics)" + precision;
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
