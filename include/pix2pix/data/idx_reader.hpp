// MNIST-format IDX files (plain or .gz): unsigned-byte image stacks and label vectors, such as
// Debian's /usr/share/datasets/fashion-mnist/*-ubyte.gz.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pix2pix::data {

struct IdxImages {
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<std::uint8_t> pixels;  // count * rows * cols, row-major
};

// Reads at most `limit` images (all when limit < 0). Throws Error naming the file on a bad
// magic number, absurd dimensions or a truncated file.
IdxImages read_idx_images(const std::string& path, std::int64_t limit = -1);
std::vector<std::int32_t> read_idx_labels(const std::string& path, std::int64_t limit = -1);

// The label file that belongs to an image file by the MNIST naming convention
// ("…-images-idx3-ubyte[.gz]" → "…-labels-idx1-ubyte[.gz]"); "" when the name does not follow it.
std::string idx_labels_path_for(const std::string& images_path);

}  // namespace pix2pix::data
