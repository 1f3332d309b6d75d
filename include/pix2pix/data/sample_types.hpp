// What one domain's stored values are: their sample type (uint8, uint16, float32) and the range
// [lo, hi] that maps them to the networks' [-1, 1]. A domain keeps one sample type and one range
// in every split of a file (format version 4; older files are uint8 on [0, 255]). No LibTorch
// here (See Note [sources without LibTorch]); data/samples.hpp converts tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pix2pix::data {

enum class SampleType { uint8, uint16, float32 };
std::string to_string(SampleType type);                  // "uint8", "uint16", "float32"
SampleType parse_sample_type(const std::string& text);   // the names above; Error otherwise
std::int64_t stored_bytes(SampleType type);              // 1, 2, 4: one value in the file
std::int64_t memory_bytes(SampleType type);              // 1, 4, 4: one value in a tensor (See Note [uint16 in memory])
bool is_integer(SampleType type);                        // uint8 and uint16: values are whole
std::optional<SampleType> sample_type_of(int cv_depth);  // CV_8U, CV_16U, CV_32F; nullopt for others

struct ValueRange {
  double lo = 0;
  double hi = 255;
  double peak() const { return hi - lo; }  // the PSNR peak on this range
  bool operator==(const ValueRange& other) const { return lo == other.lo && hi == other.hi; }
  bool operator!=(const ValueRange& other) const { return !(*this == other); }
};
std::string to_string(const ValueRange& range);  // "[0, 65535]"
// The range a sample type implies: [0, 255] and [0, 65535]; nullopt for float32, whose data has
// no natural range (it must be given or measured).
std::optional<ValueRange> natural_range(SampleType type);
// Error naming `what` unless lo and hi are finite and lo < hi.
void check_range(const ValueRange& range, const std::string& what);
// "lo,hi" (as --range-a takes it) → a checked range; UsageError naming `option` otherwise.
ValueRange parse_range(const std::string& text, const std::string& option);

struct DomainSamples {
  SampleType type = SampleType::uint8;
  ValueRange range;
  // uint8 on [0, 255]: what every file before format version 4 holds.
  bool is_byte_default() const { return type == SampleType::uint8 && range == ValueRange{}; }
  bool operator==(const DomainSamples& other) const { return type == other.type && range == other.range; }
  bool operator!=(const DomainSamples& other) const { return !(*this == other); }
};
std::string to_string(const DomainSamples& samples);  // "uint16 on [0, 65535]"

}  // namespace pix2pix::data
