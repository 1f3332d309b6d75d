// Sample types and value ranges (see sample_types.hpp).
#include "pix2pix/data/sample_types.hpp"

#include <opencv2/core.hpp>

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "pix2pix/common/error.hpp"

namespace pix2pix::data {

// See Note [the sample-type table].
const std::vector<SampleTraits>& sample_type_table() {
  static const std::vector<SampleTraits> table = {
      // type, name, bytes in the file and in memory, whole, OpenCV depth, .npy descr, held as, natural range
      {SampleType::uint8, "uint8", 1, 1, true, CV_8U, "|u1", InMemory::uint8, true, 0, 255},
      {SampleType::uint16, "uint16", 2, 4, true, CV_16U, "<u2", InMemory::int32, true, 0, 65535},
      {SampleType::float32, "float32", 4, 4, false, CV_32F, "<f4", InMemory::float32, false, 0, 0},
  };
  return table;
}

const SampleTraits& traits(SampleType type) {
  for (const SampleTraits& row : sample_type_table())
    if (row.type == type) return row;
  throw Error("sample type " + std::to_string(static_cast<int>(type)) + " has no row in the sample-type table");
}

std::string to_string(SampleType type) {
  return traits(type).name;
}

SampleType parse_sample_type(const std::string& text) {
  std::string names;
  for (const SampleTraits& row : sample_type_table()) {
    if (text == row.name) return row.type;
    names += (names.empty() ? "" : ", ") + std::string(row.name);
  }
  throw Error("unknown sample type '" + text + "' (" + names + ")");
}

std::int64_t stored_bytes(SampleType type) {
  return traits(type).stored_bytes;
}

// Note [uint16 in memory]
// LibTorch 1.13 has no uint16 tensors (2.x has the type, but few operations on it), and an int16
// tensor would turn values above 32767 negative for every later `.to(kFloat)`. So uint16 data is
// read into int32 tensors (HDF5 converts while reading): every operation on them is then exact,
// at twice the memory of the file's values. The loader's cache of such a split is 4 bytes a value.
std::int64_t memory_bytes(SampleType type) {
  return traits(type).memory_bytes;
}

bool is_integer(SampleType type) {
  return traits(type).integer;
}

std::optional<SampleType> sample_type_of(int cv_depth) {
  for (const SampleTraits& row : sample_type_table())
    if (row.cv_depth == cv_depth) return row.type;
  return std::nullopt;
}

std::string to_string(const ValueRange& range) {
  std::ostringstream text;
  text.precision(9);
  text << "[" << range.lo << ", " << range.hi << "]";
  return text.str();
}

std::optional<ValueRange> natural_range(SampleType type) {
  const SampleTraits& row = traits(type);
  if (!row.has_natural_range) return std::nullopt;
  return ValueRange{row.natural_lo, row.natural_hi};
}

void check_range(const ValueRange& range, const std::string& what) {
  if (!std::isfinite(range.lo) || !std::isfinite(range.hi))
    throw Error(what + ": the range " + to_string(range) + " is not finite");
  if (!(range.lo < range.hi)) throw Error(what + ": the range " + to_string(range) + " is empty: lo must be below hi");
  // Values map to (v - lo) / ((hi - lo) / 2) - 1: a width beyond a double's range would make every value 0 or -1.
  if (!std::isfinite(range.hi - range.lo))
    throw Error(what + ": the range " + to_string(range) + " is wider than a double can hold (hi - lo overflows)");
}

ValueRange parse_range(const std::string& text, const std::string& option) {
  const size_t comma = text.find(',');
  const auto number = [&](const std::string& part) {
    char* end = nullptr;
    const double value = std::strtod(part.c_str(), &end);
    if (part.empty() || end == part.c_str() || *end != '\0')
      throw UsageError(option + " takes lo,hi (two numbers) or auto; got '" + text + "'");
    return value;
  };
  if (comma == std::string::npos) throw UsageError(option + " takes lo,hi (two numbers) or auto; got '" + text + "'");
  const ValueRange range{number(text.substr(0, comma)), number(text.substr(comma + 1))};
  try {
    check_range(range, option);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
  return range;
}

std::string to_string(const DomainSamples& samples) {
  return to_string(samples.type) + " on " + to_string(samples.range);
}

}  // namespace pix2pix::data
