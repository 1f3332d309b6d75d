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

// Attributes: strings are variable-length UTF-8 (h5py reads them as str), integers int32.
void write_string_attribute(hid_t object, const std::string& name, const std::string& value);
void write_int_attribute(hid_t object, const std::string& name, std::int32_t value);
// Return nullopt when the attribute is absent or has another type class.
std::optional<std::string> read_string_attribute(hid_t object, const std::string& name);
std::optional<std::int64_t> read_int_attribute(hid_t object, const std::string& name);

// A variable-length string type (what names and string attributes are stored as).
Handle variable_string_type(H5T_cset_t cset = H5T_CSET_UTF8);

// Dimensions of a dataset's dataspace.
std::vector<hsize_t> dataset_dims(hid_t dataset);

}  // namespace pix2pix::data::h5
