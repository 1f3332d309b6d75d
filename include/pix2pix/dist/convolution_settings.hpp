// How convolutions pick their kernels on this rank: cuDNN's autotuner, or deterministic kernels.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>

namespace pix2pix::dist {

// Note [cuDNN's autotuner and determinism]
// Every training step has the same shapes (a rank's batch is --batch-size, its crops one size), the
// case cuDNN's autotuner is for: on first use of a shape it times each convolution's algorithms
// and keeps the fastest (PyTorch's torch.backends.cudnn.benchmark). So GPU ranks tune by default
// (--cudnn-benchmark auto); validation's batches (at most two more shapes) are tuned once each.
// What it picks follows noisy timings and may differ between processes, and some algorithms add
// with atomics, so two runs are not bit-identical with it. --deterministic turns it off, asks
// cuDNN for deterministic algorithms only and ATen to warn of every op that has no deterministic
// kernel (warn, not refuse: ATen's check also covers ops that are not ours to change): what an
// exact resume on GPUs needs. On CPUs the kernels are already deterministic at a fixed thread count.
struct ConvolutionSettings {
  std::optional<bool> autotune;  // --cudnn-benchmark on | off | auto (nullopt: on for GPU ranks)
  bool deterministic = false;    // --deterministic
  std::optional<bool> tf32;      // --tf32 on | off | auto (nullopt: on for GPU ranks, as in PyTorch)
};

// Sets ATen's process-wide flags for a training rank on `device`, and prepares a CPU's convolutions
// (prepare_cpu_convolutions, common/cpu_convolutions.hpp); returns what to say of them at start-up
// ("" when there is nothing to say: a CPU rank without --deterministic that kept oneDNN).
// UsageError for a contradiction: autotune on with --deterministic, or on for a CPU rank.
std::string apply_convolution_settings(const ConvolutionSettings& settings, const torch::Device& device);

// Note [inference kernels are deterministic]: evaluate and translate write files that users compare
// (one process's against N ranks', a rerun's, a colleague's), and on a GPU a transposed
// convolution's forward is cuDNN's backward-data, whose fastest algorithms add with atomics: the
// same image could come out one ulp apart from one run to the next. So inference asks cuDNN for
// its deterministic algorithms and does not autotune (the autotuner's picks follow timings, and
// inference's shapes change with each last batch and tile anyway). CPU kernels are deterministic
// already; a CPU runs the convolutions a CPU trainer would (checked_cpu_convolutions). Returns what
// to say of it ("" on a CPU, unless oneDNN was turned off there).
std::string apply_inference_convolution_settings(const torch::Device& device);

}  // namespace pix2pix::dist
