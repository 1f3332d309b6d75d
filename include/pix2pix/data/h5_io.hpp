// Raw HDF5 plumbing shared by the reader and the writer: the H5_CHECK macro, an owning handle,
// and typed attribute helpers. Raw H5* calls live only in data/h5_*.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pix2pix/common/error.hpp"

namespace pix2pix::data::h5 {

// The innermost message of HDF5's error stack for the current thread ("" when empty).
std::string last_error_message();

// Silences HDF5's automatic error-stack printing (we report through exceptions instead) and
// applies HDF5_USE_FILE_LOCKING=FALSE unless the user set it. Idempotent, call before any H5 use.
void initialise_library();

std::string library_version();

[[noreturn]] void throw_failed_call(const char* call, const char* file, int line);

}  // namespace pix2pix::data::h5

// Evaluates an HDF5 call once; a negative return throws pix2pix::Error naming call, file, line,
// rank and HDF5's own reason. Yields the call's value.
#define H5_CHECK(call)                                                                           \
  ([&]() {                                                                                       \
    auto h5_check_result_ = (call);                                                              \
    if (h5_check_result_ < 0) ::pix2pix::data::h5::throw_failed_call(#call, __FILE__, __LINE__); \
    return h5_check_result_;                                                                     \
  }())

namespace pix2pix::data::h5 {

// Owns one hid_t and closes it with the matching H5*close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept { *this = std::move(other); }
  Handle& operator=(Handle&& other) noexcept;
  ~Handle() { reset(); }

  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }
  void reset();
  // Gives up ownership without closing (for a close whose return code the caller checks).
  hid_t release();

 private:
  hid_t id_ = -1;
  Closer closer_ = nullptr;
};

Handle take_file(hid_t id);
Handle take_group(hid_t id);
Handle take_dataset(hid_t id);
Handle take_space(hid_t id);
Handle take_type(hid_t id);
Handle take_plist(hid_t id);
Handle take_attr(hid_t id);

bool link_exists(hid_t location, const std::string& name);
bool attribute_exists(hid_t object, const std::string& name);

// Attributes: strings are fixed-length UTF-8, null-padded (their bytes live in the attribute
// itself, never in the global heap); integers int32.
void write_string_attribute(hid_t object, const std::string& name, const std::string& value);
void write_int_attribute(hid_t object, const std::string& name, std::int32_t value);
// Return nullopt when the attribute is absent or has another type class. A string attribute
// must be fixed-length and at most format::kMaxAttributeBytes: else Error (a variable-length one
// would be read from the global heap; only read_variable_string_attribute does that).
std::optional<std::string> read_string_attribute(hid_t object, const std::string& name);
std::optional<std::int64_t> read_int_attribute(hid_t object, const std::string& name);
// Numeric arrays (float64 in the file): nullopt when absent; Error when the attribute is not
// numeric or does not hold exactly `count` values.
void write_double_array_attribute(hid_t object, const std::string& name, const std::vector<double>& values);
std::optional<std::vector<double>> read_double_array_attribute(hid_t object, const std::string& name,
                                                               std::int64_t count);
// Format version 1's variable-length string attributes (called in an isolated process only:
// data/h5_isolated_read.hpp). nullopt when absent or not a variable-length string.
std::optional<std::string> read_variable_string_attribute(hid_t object, const std::string& name);

// String types: variable-length (format version 1) and fixed-length of `bytes` (version 2),
// both UTF-8.
Handle variable_string_type(H5T_cset_t cset = H5T_CSET_UTF8);
Handle fixed_string_type(size_t bytes);
// The text of a fixed-length string element: up to the first NUL, padding removed.
std::string fixed_string_text(const char* data, size_t bytes);

// Dimensions of a dataset's dataspace.
std::vector<hsize_t> dataset_dims(hid_t dataset);

// A run of consecutive rows (along dimension 0).
struct Run {
  hsize_t start;
  hsize_t count;
};
// Runs covering `sorted_unique` rows, in order.
std::vector<Run> contiguous_runs(const std::vector<std::int64_t>& sorted_unique);
// Reads the rows in `runs` of `dataset` as `mem_type` into `out`, packed in run order
// (`row_bytes` per row in memory).
void read_rows(hid_t dataset, hid_t mem_type, const std::vector<Run>& runs, void* out, size_t row_bytes);

}  // namespace pix2pix::data::h5
