// IDX reading through zlib's gz* API, which reads compressed and plain files alike.
#include "pix2pix/data/idx_reader.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/format.hpp"

namespace pix2pix::data {
namespace {

constexpr std::uint32_t kMagicImages = 0x00000803;  // unsigned byte, 3 dimensions
constexpr std::uint32_t kMagicLabels = 0x00000801;  // unsigned byte, 1 dimension

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzCloser>;

GzFile open_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw Error(path + ": cannot open IDX file");
  return GzFile(f);
}

void read_exact(gzFile f, void* out, size_t bytes, const std::string& path) {
  auto* cursor = static_cast<unsigned char*>(out);
  while (bytes > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(bytes, 1u << 30));
    const int got = gzread(f, cursor, chunk);
    if (got <= 0) throw Error(path + ": IDX file is truncated or corrupt");
    cursor += got;
    bytes -= static_cast<size_t>(got);
  }
}

std::uint32_t read_be32(gzFile f, const std::string& path) {
  unsigned char b[4];
  read_exact(f, b, 4, path);
  return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
}

std::string hex32(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof(text), "0x%08x", value);
  return text;
}

std::int64_t take(std::int64_t count, std::int64_t limit) {
  return limit < 0 ? count : std::min(count, limit);
}

}  // namespace

IdxImages read_idx_images(const std::string& path, std::int64_t limit) {
  GzFile f = open_gz(path);
  const std::uint32_t magic = read_be32(f.get(), path);
  if (magic != kMagicImages)
    throw Error(path + ": not an IDX image file (magic " + hex32(magic) +
                ", expected 0x00000803: unsigned bytes, 3 dimensions)");
  IdxImages images;
  const std::int64_t count = read_be32(f.get(), path);
  images.rows = read_be32(f.get(), path);
  images.cols = read_be32(f.get(), path);
  if (images.rows < 1 || images.cols < 1 || images.rows > format::kMaxSide || images.cols > format::kMaxSide)
    throw Error(path + ": IDX image size " + std::to_string(images.rows) + "x" + std::to_string(images.cols) +
                " is not plausible");
  images.count = take(count, limit);
  images.pixels.resize(static_cast<size_t>(images.count * images.rows * images.cols));
  read_exact(f.get(), images.pixels.data(), images.pixels.size(), path);
  return images;
}

std::vector<std::int32_t> read_idx_labels(const std::string& path, std::int64_t limit) {
  GzFile f = open_gz(path);
  const std::uint32_t magic = read_be32(f.get(), path);
  if (magic != kMagicLabels)
    throw Error(path + ": not an IDX label file (magic " + hex32(magic) + ", expected 0x00000801)");
  const std::int64_t count = take(read_be32(f.get(), path), limit);
  std::vector<std::uint8_t> raw(static_cast<size_t>(count));
  read_exact(f.get(), raw.data(), raw.size(), path);
  return std::vector<std::int32_t>(raw.begin(), raw.end());
}

std::string idx_labels_path_for(const std::string& images_path) {
  const std::string from = "images-idx3", to = "labels-idx1";
  const auto slash = images_path.find_last_of('/');
  const auto pos = images_path.rfind(from);
  if (pos == std::string::npos || (slash != std::string::npos && pos < slash)) return "";
  std::string labels = images_path;
  labels.replace(pos, from.size(), to);
  return labels;
}

}  // namespace pix2pix::data
