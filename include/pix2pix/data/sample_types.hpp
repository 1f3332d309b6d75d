// What one domain's stored values are: their sample type (uint8, uint16, float32) and the range
// [lo, hi] that maps them to the networks' [-1, 1]. A domain keeps one sample type and one range
// in every split of a file (format version 4; older files are uint8 on [0, 255]). No LibTorch
// here (See Note [sources without LibTorch]); data/samples.hpp converts tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pix2pix::data {

enum class SampleType { uint8, uint16, float32 };

struct ValueRange;

// What a tensor of stored values holds (See Note [uint16 in memory]): samples.cpp makes it a
// LibTorch dtype, h5_layout.cpp the HDF5 type a read converts to.
enum class InMemory { uint8, int32, float32 };

// Note [the sample-type table]
// Everything the code needs to know of a sample type is one row of the table in sample_types.cpp:
// its name, its bytes in the file and in memory, whether its values are whole, its OpenCV depth,
// its .npy descr, its natural range and how a tensor holds it. The HDF5 file type follows from
// the bytes and whether the values are whole (h5_layout.cpp), the LibTorch dtype from `in_memory`
// (samples.cpp), the image formats that hold it from its bytes and wholeness (infer/
// sample_images.cpp). No other file switches on SampleType, so a new type is a new enum value
// and a row.
struct SampleTraits {
  SampleType type;
  const char* name;           // "uint16": the format's attribute value, messages
  std::int64_t stored_bytes;  // one value in the file
  std::int64_t memory_bytes;  // one value in a tensor
  bool integer;               // values are whole
  int cv_depth;               // OpenCV's CV_16U
  const char* npy_descr;      // NumPy's "<u2"
  InMemory in_memory;
  // The range the type implies ([0, 65535]); a float type has none (it must be given or measured).
  bool has_natural_range;
  double natural_lo, natural_hi;
};
const std::vector<SampleTraits>& sample_type_table();  // every row, in the enum's order
const SampleTraits& traits(SampleType type);

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
