// Where a training step's time goes, for `pix2pix bench --what train --phases`: the model's step
// marks the end of each phase and the time since the previous mark is charged to it. On a GPU
// each mark first waits for the device, so the phases add up to the step, but the step is slower
// than without them: read shares from it, time runs without it.
#pragma once

#include <torch/torch.h>

#include <array>
#include <chrono>
#include <cstddef>

namespace pix2pix::gan {

enum class StepPhase : std::size_t {
  forward_g,    // G(A)
  d_step,       // D on the fake and the real pair, D's loss and backward
  d_sync,       // averaging D's gradients over ranks (includes waiting for the slowest rank)
  d_optimizer,  // D's non-finite check, loss scaler and Adam
  g_step,       // D on the fake pair for G, G's loss and backward
  g_sync,
  g_optimizer,
  // --sync-bn's all-reduces inside the forward and backward passes above, carved out of the
  // phase they happened in (so the phases still add up to the step).
  bn_sync,
  count
};

class StepPhases {
 public:
  static constexpr std::size_t kCount = static_cast<std::size_t>(StepPhase::count);
  explicit StepPhases(torch::Device device) : device_(device) {}
  void begin();               // a step starts now
  void end(StepPhase phase);  // `phase` ends now
  // `seconds` of the running phase were batch-norm sync: charged to bn_sync at the next end().
  void carve_bn_sync(double seconds) { carved_ += seconds; }
  const std::array<double, kCount>& seconds() const { return seconds_; }
  static const char* name(StepPhase phase);

 private:
  using Clock = std::chrono::steady_clock;
  torch::Device device_;
  Clock::time_point last_;
  std::array<double, kCount> seconds_{};
  double carved_ = 0;
};

}  // namespace pix2pix::gan
