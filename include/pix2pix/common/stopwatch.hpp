// Seconds on the steady clock since a point, as the run loops and the benches time their parts.
#pragma once

#include <chrono>

namespace pix2pix {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace pix2pix
