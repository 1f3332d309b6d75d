// A seal at the end of every checkpoint: magic, payload length and a 64-bit checksum of the
// payload. A torch archive alone does not notice a flipped byte inside a tensor (measured on
// 1.13: it loads), and a truncated file is only caught when the zip directory went missing;
// the seal catches both before anything is loaded. Torch readers ignore the trailing 24 bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pix2pix::train {

inline constexpr std::int64_t kSealBytes = 24;

// Appends the seal for the file's current contents.
void seal_file(const std::string& path);

// nullopt when the seal is present and matches; otherwise why the file cannot be trusted.
std::optional<std::string> check_seal(const std::string& path);

}  // namespace pix2pix::train
