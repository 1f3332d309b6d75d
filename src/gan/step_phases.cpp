#include "pix2pix/gan/step_phases.hpp"

#include <torch/cuda.h>

namespace pix2pix::gan {
namespace {

void wait_for(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

}  // namespace

void StepPhases::begin() {
  wait_for(device_);
  last_ = Clock::now();
}

void StepPhases::end(StepPhase phase) {
  wait_for(device_);
  const auto now = Clock::now();
  seconds_.at(static_cast<std::size_t>(phase)) += std::chrono::duration<double>(now - last_).count() - carved_;
  seconds_.at(static_cast<std::size_t>(StepPhase::bn_sync)) += carved_;
  carved_ = 0;
  last_ = now;
}

const char* StepPhases::name(StepPhase phase) {
  switch (phase) {
    case StepPhase::forward_g:
      return "forward G";
    case StepPhase::d_step:
      return "D step (forward, backward)";
    case StepPhase::d_sync:
      return "D gradient averaging";
    case StepPhase::d_optimizer:
      return "D check + Adam";
    case StepPhase::g_step:
      return "G step (D forward, backward)";
    case StepPhase::g_sync:
      return "G gradient averaging";
    case StepPhase::g_optimizer:
      return "G check + Adam";
    case StepPhase::bn_sync:
      return "batch-norm sync (--sync-bn)";
    case StepPhase::count:
      break;
  }
  return "?";
}

}  // namespace pix2pix::gan
