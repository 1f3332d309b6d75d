// What a CPU training process does before its first step so that its convolutions' gradients are
// right on this machine's LibTorch: zero-filled allocations (See Note [oneDNN's padded channels])
// and, where oneDNN's input gradients are wrong, convolutions without oneDNN.
//
// Note [oneDNN's wrong input gradients]
// On an AMD EPYC (Zen 5, AVX-512) CI-2c, Debian 13's LibTorch 2.6 with oneDNN 3.7.2 returns wrong
// input gradients for stride-1 convolutions whose output channels are not a multiple of oneDNN's
// block of 16: against a float64 reference, a relative error of 0.35 to 1.1 (8 -> 1, 4 or 15
// channels; 64 -> 3 with a 7x7 kernel, the ResNet generator's last layer; 512 -> 1 with 4x4, the
// PatchGAN's head), or NaN (16 -> 4). Zero-filled allocations do not change it; the outputs and the
// weight gradients are right; so are stride-2 layers and 16, 32 or 512 output channels; with oneDNN
// off every shape is right (docs/performance.md, "oneDNN's wrong input gradients"). Training there
// learns through wrong gradients: the discriminator's lower layers and the generator's adversarial
// term through the PatchGAN's head, and the whole ResNet generator through its last layer. A Xeon
// with the same LibTorch showed only the NaNs of the note above, so the defect depends on the CPU
// and cannot be decided by version: each CPU training process measures it. It computes the input
// gradients of such convolutions with oneDNN and without (milliseconds), and where they part by
// more than rounding turns oneDNN off for the rest of the process (every CPU convolution then runs
// ATen's own kernels; on that machine they were not slower: docs/performance.md). Once per process:
// oneDNN's switch is global, and trainers on threads (the tests' ranks) must not flip it under each
// other's steps.
#pragma once

#include <string>

namespace pix2pix {

struct CpuConvolutions {
  // The largest relative difference of oneDNN's convolution input gradients from ATen's own
  // kernels' over the probed shapes (infinity for a non-finite one; 0 where oneDNN was off).
  double onednn_error = 0;
  // Whether the measurement turned oneDNN off for this process's CPU convolutions.
  bool onednn_turned_off = false;
};

// The bar on onednn_error: the rounding of float convolutions is below 1e-5 of the largest element.
inline constexpr double kOneDnnErrorBar = 1e-3;

// Zero-fills later CPU allocations where the LibTorch needs it, then checked_cpu_convolutions().
// dist::apply_convolution_settings calls it for a CPU training rank (and names the result among the
// rank's kernels); the trainers again for library callers; the test mains too, so that the tests'
// own CPU backward passes run as the product's do. Leaves the RNG untouched.
CpuConvolutions prepare_cpu_convolutions();

// The first time in the process, measure_cpu_convolutions(); later calls, from any thread, return
// that first result. Inference on CPUs (evaluate, translate) calls it alone: its forward passes
// need no zero-filled allocations, but must run the kernels that training's validation ran, or a
// validation figure and evaluate's part in the last bits (FID: 3e-7 relative, on the AMD EPYC).
CpuConvolutions checked_cpu_convolutions();

// The measurement itself, each time it is called (where oneDNN is on): oneDNN's input gradients
// against ATen's own, and oneDNN turned off where they exceed kOneDnnErrorBar. It flips oneDNN's
// global switch while it measures, so nothing else may compute meanwhile.
CpuConvolutions measure_cpu_convolutions();

// The start-up line's text where oneDNN was turned off ("" otherwise).
std::string describe(const CpuConvolutions& convolutions);

}  // namespace pix2pix
