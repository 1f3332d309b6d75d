// The element loops of a training step that ATen would run as several passes, on plain float
// arrays. Their own translation unit, built without the precompiled torch header and with
// -fno-math-errno, so that the compiler vectorises them (with errno, every sqrt is a branch).
#pragma once

#include <cstdint>

namespace pix2pix::optim {

// Per-step constants of one parameter tensor, in float as ATen's CPU kernels apply them.
struct AdamConstants {
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float sqrt_bias_correction2;  // sqrt(1 - beta2^t): divided by, as torch::optim::Adam does
  float eps, minus_step_size, weight_decay;
};

// FusedAdam (See Note [fused Adam]): elements [begin, end) of one parameter p with gradient g and
// moments m, v, read once, p, m and v written once; torch::optim::Adam::step's expressions in
// its order.
void adam_update(float* p, const float* g, float* m, float* v, std::int64_t begin, std::int64_t end,
                 const AdamConstants& c);

// Whether any of x[0, n) is a NaN or an infinity: one read pass (ATen's isfinite().all() is
// four passes and two allocations per tensor).
bool has_non_finite(const float* x, std::int64_t n);

}  // namespace pix2pix::optim
