// Seeded permutations that are identical on every rank, compiler and standard library:
// std::mt19937_64 is fully specified, std::shuffle and the std distributions are not.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace pix2pix {

// Mixes several values into one well-spread 64-bit seed (splitmix64 steps).
inline std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0) {
  std::uint64_t x = a;
  for (std::uint64_t v : {b, c}) {
    x += 0x9e3779b97f4a7c15ULL + v;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
  }
  return x;
}

// Fisher–Yates over [0, n) with rejection-free 128-bit multiply range reduction.
inline std::vector<std::int64_t> seeded_permutation(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> p(static_cast<size_t>(n < 0 ? 0 : n));
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<std::int64_t>(i);
  std::mt19937_64 rng(seed);
  for (size_t i = p.size(); i > 1; --i) {
    const auto j = static_cast<size_t>((static_cast<unsigned __int128>(rng()) * i) >> 64);
    std::swap(p[i - 1], p[j]);
  }
  return p;
}

}  // namespace pix2pix
