#include "pix2pix/optim/cpu_loops.hpp"

#include <cmath>
#include <cstring>

namespace pix2pix::optim {
namespace {

// No branch in the loop: weight decay is a template argument.
template <bool kWeightDecay>
void update(float* p, const float* g, float* m, float* v, std::int64_t begin, std::int64_t end,
            const AdamConstants& c) {
  for (std::int64_t i = begin; i < end; ++i) {
    float grad = g[i];
    if constexpr (kWeightDecay) grad = grad + c.weight_decay * p[i];
    const float mi = m[i] * c.beta1 + c.one_minus_beta1 * grad;
    const float vi = v[i] * c.beta2 + c.one_minus_beta2 * (grad * grad);
    const float denom = std::sqrt(vi) / c.sqrt_bias_correction2 + c.eps;
    p[i] = p[i] + c.minus_step_size * (mi / denom);
    m[i] = mi;
    v[i] = vi;
  }
}

}  // namespace

void adam_update(float* p, const float* g, float* m, float* v, std::int64_t begin, std::int64_t end,
                 const AdamConstants& c) {
  if (c.weight_decay != 0.0f)
    update<true>(p, g, m, v, begin, end, c);
  else
    update<false>(p, g, m, v, begin, end, c);
}

bool has_non_finite(const float* x, std::int64_t n) {
  // An all-ones exponent is an infinity or a NaN. Integer OR is associative, so this vectorises
  // without -ffast-math, and it never traps.
  std::uint32_t found = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, sizeof bits);
    found |= static_cast<std::uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return found != 0;
}

}  // namespace pix2pix::optim
