// The one place where LibTorch 1.13 and 2.x differ for us: the autocast switches (2.4 replaced
// set_enabled/set_cpu_enabled/set_autocast_{gpu,cpu}_dtype by per-device-type functions) and the
// key of an optimizer's per-parameter state (a string of the TensorImpl address in 1.13, the
// address itself in 2.x).
#pragma once

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <sstream>
#include <string>
#include <type_traits>

#define PIX2PIX_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace pix2pix::compat {

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
