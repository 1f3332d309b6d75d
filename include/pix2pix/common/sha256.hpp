// SHA-256 (FIPS 180-4) of bytes and of files: the identity recorded beside a result that depends on
// a file's exact contents (the feature network of FID/KID; the cache of real-set features).
// See Note [a SHA-256 of our own] (src/common/sha256.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace pix2pix {

class Sha256 {
 public:
  Sha256();
  void add(const void* data, size_t n);
  std::string hex();  // lower-case, 64 characters, of everything added (call once)

 private:
  void compress(const unsigned char* block);
  std::array<std::uint32_t, 8> state_{};
  std::array<unsigned char, 64> buffer_{};
  size_t buffered_ = 0;
  std::uint64_t length_ = 0;
};

std::string sha256_hex(std::string_view bytes);
// Of the whole file; Error naming `path` when it cannot be read.
std::string file_sha256(const std::string& path);

}  // namespace pix2pix
