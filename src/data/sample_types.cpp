// Sample types and value ranges (see sample_types.hpp).
#include "pix2pix/data/sample_types.hpp"

#include <opencv2/core.hpp>

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "pix2pix/common/error.hpp"

namespace pix2pix::data {

std::string to_string(SampleType type) {
  switch (type) {
    case SampleType::uint8:
      return "uint8";
    case SampleType::uint16:
      return "uint16";
    case SampleType::float32:
      return "float32";
  }
  return "?";
}

SampleType parse_sample_type(const std::string& text) {
  for (const SampleType type : {SampleType::uint8, SampleType::uint16, SampleType::float32})
    if (text == to_string(type)) return type;
  throw Error("unknown sample type '" + text + "' (uint8, uint16 or float32)");
}

std::int64_t stored_bytes(SampleType type) {
  return type == SampleType::uint8 ? 1 : type == SampleType::uint16 ? 2 : 4;
}

// Note [uint16 in memory]
// LibTorch 1.13 has no uint16 tensors (2.x has the type, but few operations on it), and an int16
// tensor would turn values above 32767 negative for every later `.to(kFloat)`. So uint16 data is
// read into int32 tensors (HDF5 converts while reading): every operation on them is then exact,
// at twice the memory of the file's values. The loader's cache of such a split is 4 bytes a value.
std::int64_t memory_bytes(SampleType type) {
  return type == SampleType::uint8 ? 1 : 4;
}

bool is_integer(SampleType type) {
  return type != SampleType::float32;
}

std::optional<SampleType> sample_type_of(int cv_depth) {
  switch (cv_depth) {
    case CV_8U:
      return SampleType::uint8;
    case CV_16U:
      return SampleType::uint16;
    case CV_32F:
      return SampleType::float32;
    default:
      return std::nullopt;
  }
}

std::string to_string(const ValueRange& range) {
  std::ostringstream text;
  text.precision(9);
  text << "[" << range.lo << ", " << range.hi << "]";
  return text.str();
}

std::optional<ValueRange> natural_range(SampleType type) {
  if (type == SampleType::uint8) return ValueRange{0, 255};
  if (type == SampleType::uint16) return ValueRange{0, 65535};
  return std::nullopt;
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
