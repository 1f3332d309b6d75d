#include "pix2pix/data/npy_file.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::data {
namespace {

const char kMagic[] = "\x93NUMPY";

std::string descr_of(const torch::Tensor& array, const std::string& path) {
  switch (array.scalar_type()) {
    case torch::kUInt8:
      return "|u1";
    case torch::kFloat32:
      return "<f4";
    case torch::kFloat64:
      return "<f8";
    default:
      throw Error("cannot write " + path + " as .npy: an array of type " +
                  std::string(c10::toString(array.scalar_type())));
  }
}

}  // namespace

void write_npy(const std::string& path, const torch::Tensor& array) {
  const auto data = array.to(torch::kCPU).contiguous();
  write_npy_bytes(path, descr_of(data, path), data.sizes().vec(), data.data_ptr(),
                  static_cast<std::size_t>(data.numel() * data.element_size()));
}

void write_npy_bytes(const std::string& path, const std::string& descr, const std::vector<std::int64_t>& sizes,
                     const void* data, std::size_t data_bytes) {
  std::string shape = "(";
  for (const auto side : sizes) shape += std::to_string(side) + ", ";
  if (sizes.size() > 1) shape.resize(shape.size() - 2);
  if (sizes.size() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic (6), version (2), header length (2), header: padded with spaces so that the data starts
  // at a multiple of 64 bytes, ending in a newline (the format's rule).
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string bytes(kMagic, 6);
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(static_cast<const char*>(data), data_bytes);
  write_file_atomically(path, bytes);
}

torch::Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto bad = [&](const std::string& why) {
    return Error(path + ": not a .npy array this program reads (" + why + ")");
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0) throw bad("no \\x93NUMPY magic");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_length = 0, start = 0;
  if (major == 1) {
    header_length = static_cast<unsigned char>(bytes[8]) | static_cast<size_t>(static_cast<unsigned char>(bytes[9]))
                                                               << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw bad("truncated header");
    for (int i = 0; i < 4; ++i)
      header_length |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    start = 12;
  } else {
    throw bad("format version " + std::to_string(major));
  }
  if (bytes.size() < start + header_length) throw bad("truncated header");
  const std::string header = bytes.substr(start, header_length);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')"))) throw bad("no descr");
  const std::string descr = m[1];
  if (!std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*(True|False))"))) throw bad("no fortran_order");
  if (m[1] == "True") throw bad("Fortran order; save it with numpy.ascontiguousarray");
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) throw bad("no shape");
  std::vector<std::int64_t> shape;
  {
    std::stringstream sides(m[1].str());
    std::string side;
    while (std::getline(sides, side, ',')) {
      if (side.find_first_not_of(" \t") == std::string::npos) continue;
      try {
        shape.push_back(std::stoll(side));
      } catch (const std::exception&) {
        throw bad("shape '" + m[1].str() + "'");
      }
      if (shape.back() < 0) throw bad("shape '" + m[1].str() + "'");
    }
  }
  torch::ScalarType type;
  std::int64_t item = 0;
  if (descr == "|u1" || descr == "<u1")
    type = torch::kUInt8, item = 1;
  else if (descr == "<u2")
    type = torch::kInt32, item = 2;
  else if (descr == "<f4")
    type = torch::kFloat32, item = 4;
  else if (descr == "<f8")
    type = torch::kFloat64, item = 8;
  else
    throw bad("type '" + descr + "'; uint8, uint16, float32 or float64 (little-endian) are read");
  std::int64_t count = 1;
  for (const auto side : shape) {
    // A shape larger than the file can hold is refused before its product can overflow.
    if (side > 0 && count > static_cast<std::int64_t>(bytes.size()) / side)
      throw bad("shape '" + m[1].str() + "' needs more data than the file holds");
    count *= side;
  }
  const size_t data_start = start + header_length;
  if (bytes.size() - data_start < static_cast<size_t>(count * item))
    throw bad("holds " + std::to_string(bytes.size() - data_start) + " data bytes; its shape needs " +
              std::to_string(count * item));
  const char* data = bytes.data() + data_start;
  if (descr == "<u2") {
    auto out = torch::empty(shape, torch::kInt32);
    auto* o = out.data_ptr<std::int32_t>();
    for (std::int64_t i = 0; i < count; ++i)
      o[i] = static_cast<unsigned char>(data[2 * i]) | static_cast<unsigned char>(data[2 * i + 1]) << 8;
    return out;
  }
  auto out = torch::empty(shape, type);
  std::memcpy(out.data_ptr(), data, static_cast<size_t>(count * item));
  return out;
}

}  // namespace pix2pix::data
