// IDX reading through zlib's gz* API, which reads compressed and plain files alike.
#include "pix2pix/data/idx_reader.hpp"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/common/memory_budget.hpp"
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
  require_readable_file(path);  // a FIFO would block gzopen, a device would never end
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

// Reads the `expected` data bytes that a header declares, growing the buffer only as data
// really arrives (and within the memory budget): a 16-byte file that declares 2^31 images costs
// nothing but the error saying it is truncated.
std::vector<std::uint8_t> read_declared(gzFile f, std::uint64_t expected, const std::string& path,
                                        const std::string& declared) {
  constexpr std::uint64_t kPiece = 16 << 20;
  std::vector<std::uint8_t> data;
  while (data.size() < expected) {
    const std::uint64_t want = std::min<std::uint64_t>(kPiece, expected - data.size());
    if (data.capacity() < data.size() + want) {
      const std::uint64_t capacity =
          std::min<std::uint64_t>(expected, std::max<std::uint64_t>(2 * data.capacity(), data.size() + want));
      const auto grow = static_cast<std::int64_t>(capacity - data.capacity());
      require_memory(grow, path + ": IDX data (" + declared + ")");
      allocating(grow, path + ": IDX data (" + declared + ")", [&] { data.reserve(capacity); });
    }
    const size_t at = data.size();
    data.resize(at + want);
    size_t filled = 0;
    while (filled < want) {
      const int got = gzread(f, data.data() + at + filled, static_cast<unsigned>(want - filled));
      if (got < 0) throw Error(path + ": IDX file is corrupt (" + std::string(gzerror(f, nullptr)) + ")");
      if (got == 0)
        throw Error(path + ": IDX file is truncated: its header declares " + declared + " (" +
                    std::to_string(expected) + " bytes of data) but the file holds only " +
                    std::to_string(at + filled) + (gzdirect(f) ? "" : " (decompressed)"));
      filled += static_cast<size_t>(got);
    }
  }
  return data;
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
  const std::string declared =
      std::to_string(images.count) + " images of " + std::to_string(images.rows) + "x" + std::to_string(images.cols);
  images.pixels =
      read_declared(f.get(), static_cast<std::uint64_t>(images.count * images.rows * images.cols), path, declared);
  return images;
}

std::vector<std::int32_t> read_idx_labels(const std::string& path, std::int64_t limit) {
  GzFile f = open_gz(path);
  const std::uint32_t magic = read_be32(f.get(), path);
  if (magic != kMagicLabels)
    throw Error(path + ": not an IDX label file (magic " + hex32(magic) + ", expected 0x00000801)");
  const std::int64_t count = take(read_be32(f.get(), path), limit);
  const std::vector<std::uint8_t> raw =
      read_declared(f.get(), static_cast<std::uint64_t>(count), path, std::to_string(count) + " labels");
  return allocating(count * 4, path + ": " + std::to_string(count) + " labels",
                    [&] { return std::vector<std::int32_t>(raw.begin(), raw.end()); });
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
