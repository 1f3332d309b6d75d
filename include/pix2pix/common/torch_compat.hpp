// The one place where LibTorch 1.13 and 2.x differ for us: the autocast switches (2.4 replaced
// set_enabled/set_cpu_enabled/set_autocast_{gpu,cpu}_dtype by per-device-type functions), the
// key of an optimizer's per-parameter state (a string of the TensorImpl address in 1.13, the
// address itself in 2.x), zero-filled CPU allocations under LibTorch 2.x
// (See Note [oneDNN's padded channels]), and ATen's fused Adam, which takes its skip decision from
// a tensor only since 2.4 on CPUs (See Note [updates decided on the device]).
#pragma once

#include <ATen/Functions.h>
#include <ATen/autocast_mode.h>
#include <c10/util/Flags.h>
#include <torch/version.h>

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#define PIX2PIX_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// Note [oneDNN's padded channels]: LibTorch 2.x computes CPU convolutions with oneDNN in blocked
// layouts whose channel count is padded to the block (16 on this AVX-512 machine; oneDNN's verbose
// log shows the output gradient of a 1-channel convolution reordered into 16 channels). For the
// input gradient of a stride-1 convolution with fewer output channels than the block (the
// PatchGAN's last layer has one), that padded copy comes from LibTorch's CPU allocator and its
// padding is not cleared. The result is right while the reused memory held finite numbers and
// NaN where it held a NaN or an infinity that an earlier computation left there: the
// discriminator's whole backward turns NaN and the step is skipped as non-finite. Measured with
// Debian 13's LibTorch 2.6.0 and oneDNN 3.7.2 in a stand-alone repeat with NaNs left in freed
// memory: 64->1 channels, 4x4, stride 1, 3x3 input: 7 of 2,000 backward passes NaN; 8->1
// channels on 8x8: 99 of 100; never with stride 2, transposed convolutions, 16 or 64 output
// channels, oneDNN disabled, or LibTorch 1.13 (MKL-DNN 2.6). It made the 2xB = 1x2B test fail 2
// times in 16. The cure is LibTorch's own switch, c10's caffe2_cpu_allocator_do_zero_fill: every
// CPU allocation zero-filled (0 of 2,000). It is not free: a traced 256x256 step took 24 % longer
// with it (oneDNN's own buffers come from the same allocator; docs/performance.md, "Zero-filled
// CPU allocations"). A narrower cure (zero-filling only inside the backward of the convolutions
// concerned) was not made: a later machine did not show the defect at all, so nothing here can
// check that one. On an AMD EPYC the same convolutions' input gradients were wrong (finite) with
// or without it: See Note [oneDNN's wrong input gradients] for what a CPU trainer does about that.
#if PIX2PIX_TORCH_AT_LEAST(2, 0)
C10_DECLARE_bool(caffe2_cpu_allocator_do_zero_fill);
#endif

namespace pix2pix::compat {

// Whether this LibTorch needs its CPU allocations zero-filled for correct convolution gradients.
inline constexpr bool kZeroFillCpuAllocations = PIX2PIX_TORCH_AT_LEAST(2, 0);

// Makes every later CPU allocation of this process zero-filled (or not: `on` false, for tests)
// where kZeroFillCpuAllocations; nothing otherwise.
inline void zero_fill_cpu_allocations(bool on = true) {
#if PIX2PIX_TORCH_AT_LEAST(2, 0)
  FLAGS_caffe2_cpu_allocator_do_zero_fill = on;
#else
  (void)on;
#endif
}
inline bool cpu_allocations_zero_filled() {
#if PIX2PIX_TORCH_AT_LEAST(2, 0)
  return FLAGS_caffe2_cpu_allocator_do_zero_fill;
#else
  return false;
#endif
}

// Which of the two autocast APIs below was compiled (tests/train/torch_compat_test.cpp checks it
// against the LibTorch the build system found).
inline constexpr bool kPerDeviceTypeAutocast = PIX2PIX_TORCH_AT_LEAST(2, 4);

inline bool autocast_enabled(c10::DeviceType device) {
#if PIX2PIX_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

inline void set_autocast(c10::DeviceType device, bool enabled, c10::ScalarType dtype) {
#if PIX2PIX_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(device, dtype);
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CUDA) {
    at::autocast::set_autocast_gpu_dtype(dtype);
    at::autocast::set_enabled(enabled);
  } else {
    at::autocast::set_autocast_cpu_dtype(dtype);
    at::autocast::set_cpu_enabled(enabled);
  }
#endif
}

inline c10::ScalarType autocast_dtype(c10::DeviceType device) {
#if PIX2PIX_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

// Whether this LibTorch has ATen's fused Adam on CPUs and GPUs with a `found_inf` tensor (2.4):
// what an update decided on the device runs (See Note [updates decided on the device]).
inline constexpr bool kFusedAdamWithSkip = PIX2PIX_TORCH_AT_LEAST(2, 4);

// ATen's fused Adam over equal-length lists (float32 tensors of one layout per index, a float32
// step count per parameter), skipped as a whole where `found_inf` holds 1. Where
// !kFusedAdamWithSkip, a logic error: callers ask kFusedAdamWithSkip first.
inline void fused_adam(at::TensorList params, at::TensorList grads, at::TensorList exp_avgs, at::TensorList exp_avg_sqs,
                       at::TensorList steps, double lr, double beta1, double beta2, double weight_decay, double eps,
                       const at::Tensor& found_inf) {
#if PIX2PIX_TORCH_AT_LEAST(2, 4)
  at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, {}, steps, lr, beta1, beta2, weight_decay, eps,
                   /*amsgrad=*/false, /*maximize=*/false, /*grad_scale=*/std::nullopt, found_inf);
#else
  (void)params, (void)grads, (void)exp_avgs, (void)exp_avg_sqs, (void)steps, (void)lr, (void)beta1, (void)beta2;
  (void)weight_decay, (void)eps, (void)found_inf;
  throw std::logic_error("fused Adam with a skip tensor needs LibTorch 2.4 or newer");
#endif
}

// The key under which torch::optim::Optimizer::state() holds `parameter`'s state, whichever
// of the two key types this LibTorch uses.
template <typename StateMap>
typename StateMap::key_type optimizer_state_key(const StateMap&, const at::Tensor& parameter) {
  if constexpr (std::is_same_v<typename StateMap::key_type, std::string>) {
    std::ostringstream key;  // what c10::guts::to_string writes for a pointer
    key << parameter.unsafeGetTensorImpl();
    return key.str();
  } else
    return parameter.unsafeGetTensorImpl();
}

}  // namespace pix2pix::compat
