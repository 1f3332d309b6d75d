// HDF5 error capture, owning handles and attribute helpers.
#include "pix2pix/data/h5_io.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include "pix2pix/data/format.hpp"

namespace pix2pix::data::h5 {
namespace {

herr_t collect_description(unsigned /*n*/, const H5E_error2_t* err, void* client) {
  // Walking downward visits the API call first and the place the error was detected last;
  // keep both ends, which together say what failed and why.
  auto* messages = static_cast<std::vector<std::string>*>(client);
  if (err->desc != nullptr) messages->emplace_back(err->desc);
  return 0;
}

}  // namespace

std::string last_error_message() {
  std::vector<std::string> messages;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_description, &messages);
  if (messages.empty()) return "";
  // The POSIX driver's messages carry the system's reason among a dump of its call ("file write
  // failed: time = ..., errno = 28, error message = 'No space left on device', buf = 0x..."):
  // the reason is what a user needs.
  for (const std::string& message : messages) {
    const std::string key = "error message = '";
    const auto at = message.find(key);
    if (at == std::string::npos) continue;
    const auto end = message.find('\'', at + key.size());
    return messages.front() + ": " + message.substr(at + key.size(), end - at - key.size());
  }
  if (messages.size() == 1 || messages.front() == messages.back()) return messages.back();
  return messages.front() + " (" + messages.back() + ")";
}

void initialise_library() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Many ranks open one file on Lustre/GPFS/NFS mounts that may lack lock support; readers
    // never need the lock. HDF5 1.10 reads this variable at every H5Fopen. The user's value wins.
    setenv("HDF5_USE_FILE_LOCKING", "FALSE", /*overwrite=*/0);
    H5open();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

std::string library_version() {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

void throw_failed_call(const char* call, const char* file, int line) {
  throw Error(describe_failed_call("HDF5", call, file, line, last_error_message()));
}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    closer_ = other.closer_;
    other.id_ = -1;
  }
  return *this;
}

void Handle::reset() {
  if (id_ >= 0 && closer_ != nullptr) closer_(id_);
  id_ = -1;
}

hid_t Handle::release() {
  const hid_t id = id_;
  id_ = -1;
  return id;
}

Handle take_file(hid_t id) {
  return Handle(id, H5Fclose);
}
Handle take_group(hid_t id) {
  return Handle(id, H5Gclose);
}
Handle take_dataset(hid_t id) {
  return Handle(id, H5Dclose);
}
Handle take_space(hid_t id) {
  return Handle(id, H5Sclose);
}
Handle take_type(hid_t id) {
  return Handle(id, H5Tclose);
}
Handle take_plist(hid_t id) {
  return Handle(id, H5Pclose);
}
Handle take_attr(hid_t id) {
  return Handle(id, H5Aclose);
}

bool link_exists(hid_t location, const std::string& name) {
  return H5_CHECK(H5Lexists(location, name.c_str(), H5P_DEFAULT)) > 0;
}

bool attribute_exists(hid_t object, const std::string& name) {
  return H5_CHECK(H5Aexists(object, name.c_str())) > 0;
}

Handle variable_string_type(H5T_cset_t cset) {
  Handle type = take_type(H5_CHECK(H5Tcopy(H5T_C_S1)));
  H5_CHECK(H5Tset_size(type.get(), H5T_VARIABLE));
  H5_CHECK(H5Tset_cset(type.get(), cset));
  return type;
}

Handle fixed_string_type(size_t bytes) {
  Handle type = take_type(H5_CHECK(H5Tcopy(H5T_C_S1)));
  H5_CHECK(H5Tset_size(type.get(), bytes));
  H5_CHECK(H5Tset_strpad(type.get(), H5T_STR_NULLPAD));
  H5_CHECK(H5Tset_cset(type.get(), H5T_CSET_UTF8));
  return type;
}

std::string fixed_string_text(const char* data, size_t bytes) {
  size_t length = 0;
  while (length < bytes && data[length] != '\0') ++length;
  return std::string(data, length);
}

namespace {

// Creates (replacing) a scalar attribute of `file_type`.
Handle create_scalar_attribute(hid_t object, const std::string& name, hid_t file_type) {
  Handle space = take_space(H5_CHECK(H5Screate(H5S_SCALAR)));
  if (attribute_exists(object, name)) H5_CHECK(H5Adelete(object, name.c_str()));
  return take_attr(H5_CHECK(H5Acreate2(object, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT)));
}

const char* type_class_name(H5T_class_t type_class) {
  switch (type_class) {
    case H5T_INTEGER:
      return "an integer";
    case H5T_FLOAT:
      return "a floating-point number";
    case H5T_STRING:
      return "a string";
    case H5T_COMPOUND:
      return "a compound";
    case H5T_ARRAY:
      return "an array";
    case H5T_ENUM:
      return "an enum";
    case H5T_VLEN:
      return "a variable-length sequence";
    default:
      return "of another HDF5 type";
  }
}

// Opens a single-valued attribute of type class `type_class`; nullopt when absent. One of another
// type, or of several values, is an Error saying so: "missing" would send the user looking for
// an attribute that is there.
struct OpenAttribute {
  Handle attr, file_type;
};
std::optional<OpenAttribute> open_single_attribute(hid_t object, const std::string& name, H5T_class_t type_class) {
  if (!attribute_exists(object, name)) return std::nullopt;
  OpenAttribute open;
  open.attr = take_attr(H5_CHECK(H5Aopen(object, name.c_str(), H5P_DEFAULT)));
  open.file_type = take_type(H5_CHECK(H5Aget_type(open.attr.get())));
  const H5T_class_t found = H5Tget_class(open.file_type.get());
  if (found != type_class)
    throw Error("attribute '" + name + "' is " + type_class_name(found) + ", not " + type_class_name(type_class));
  Handle space = take_space(H5_CHECK(H5Aget_space(open.attr.get())));
  const hssize_t values = H5_CHECK(H5Sget_simple_extent_npoints(space.get()));
  if (values != 1) throw Error("attribute '" + name + "' holds " + std::to_string(values) + " values, not one");
  return open;
}
}  // namespace

void write_string_attribute(hid_t object, const std::string& name, const std::string& value) {
  Handle type = fixed_string_type(std::max<size_t>(1, value.size()));
  Handle attr = create_scalar_attribute(object, name, type.get());
  std::string padded = value;
  padded.resize(std::max<size_t>(1, value.size()), '\0');
  H5_CHECK(H5Awrite(attr.get(), type.get(), padded.data()));
}

void write_int_attribute(hid_t object, const std::string& name, std::int32_t value) {
  Handle attr = create_scalar_attribute(object, name, H5T_STD_I32LE);
  H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_INT32, &value));
}

std::optional<std::string> read_string_attribute(hid_t object, const std::string& name) {
  auto open = open_single_attribute(object, name, H5T_STRING);
  if (!open) return std::nullopt;
  const hid_t file_type = open->file_type.get();
  if (H5_CHECK(H5Tis_variable_str(file_type)) > 0)
    throw Error("attribute '" + name +
                "' is a variable-length string; this format version stores strings "
                "fixed-length");
  const size_t size = H5Tget_size(file_type);
  if (size == 0 || size > static_cast<size_t>(format::kMaxAttributeBytes))
    throw Error("attribute '" + name + "' declares " + std::to_string(size) + " bytes (at most " +
                std::to_string(format::kMaxAttributeBytes) + ")");
  std::string value(size, '\0');
  H5_CHECK(H5Aread(open->attr.get(), file_type, value.data()));
  return fixed_string_text(value.data(), size);
}

std::optional<std::string> read_variable_string_attribute(hid_t object, const std::string& name) {
  auto open = open_single_attribute(object, name, H5T_STRING);
  if (!open || H5_CHECK(H5Tis_variable_str(open->file_type.get())) <= 0) return std::nullopt;
  // Same character set as stored: HDF5 does not convert between ASCII and UTF-8.
  Handle type = variable_string_type(H5Tget_cset(open->file_type.get()));
  char* data = nullptr;
  H5_CHECK(H5Aread(open->attr.get(), type.get(), &data));
  std::string value = data != nullptr ? data : "";
  H5free_memory(data);
  return value;
}

std::optional<std::int64_t> read_int_attribute(hid_t object, const std::string& name) {
  auto open = open_single_attribute(object, name, H5T_INTEGER);
  if (!open) return std::nullopt;
  std::int64_t value = 0;
  H5_CHECK(H5Aread(open->attr.get(), H5T_NATIVE_INT64, &value));
  return value;
}

void write_double_array_attribute(hid_t object, const std::string& name, const std::vector<double>& values) {
  const hsize_t n = values.size();
  Handle space = take_space(H5_CHECK(H5Screate_simple(1, &n, nullptr)));
  Handle attr =
      take_attr(H5_CHECK(H5Acreate2(object, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  H5_CHECK(H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, values.data()));
}

std::optional<std::vector<double>> read_double_array_attribute(hid_t object, const std::string& name,
                                                               std::int64_t count) {
  if (!attribute_exists(object, name)) return std::nullopt;
  Handle attr = take_attr(H5_CHECK(H5Aopen(object, name.c_str(), H5P_DEFAULT)));
  Handle type = take_type(H5_CHECK(H5Aget_type(attr.get())));
  const H5T_class_t found = H5Tget_class(type.get());
  if (found != H5T_FLOAT && found != H5T_INTEGER)
    throw Error("attribute '" + name + "' is " + type_class_name(found) + ", not numbers");
  Handle space = take_space(H5_CHECK(H5Aget_space(attr.get())));
  const hssize_t values = H5_CHECK(H5Sget_simple_extent_npoints(space.get()));
  if (values != count)
    throw Error("attribute '" + name + "' holds " + std::to_string(values) + " values, not " + std::to_string(count));
  std::vector<double> out(static_cast<size_t>(count));
  H5_CHECK(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, out.data()));
  return out;
}

namespace {
// Rows per H5Dread. See Note [one read per run] below for why reads are not merged.
constexpr hsize_t kMaxRowsPerRead = 16;
}  // namespace

std::vector<Run> contiguous_runs(const std::vector<std::int64_t>& sorted_unique) {
  std::vector<Run> runs;
  for (std::int64_t index : sorted_unique) {
    const auto i = static_cast<hsize_t>(index);
    if (!runs.empty() && runs.back().start + runs.back().count == i) {
      ++runs.back().count;
    } else {
      runs.push_back({i, 1});
    }
  }
  return runs;
}

// Note [one read per run]
// Merging runs into one hyperslab union (H5S_SELECT_OR) means fewer H5Dread calls, but in
// HDF5 1.10 it is 30-50x slower than one H5Dread per run: building the union and mapping it
// onto chunks costs far more than the calls it saves (docs/performance.md has the figures).
// Long runs are read in pieces, since one selection over thousands of chunks is also slower.
void read_rows(hid_t dataset, hid_t mem_type, const std::vector<Run>& runs, void* out, size_t row_bytes) {
  const std::vector<hsize_t> dims = dataset_dims(dataset);
  Handle file_space = take_space(H5_CHECK(H5Dget_space(dataset)));
  auto* cursor = static_cast<unsigned char*>(out);
  std::vector<hsize_t> start(dims.size(), 0), count(dims);
  for (const Run& run : runs) {
    for (hsize_t done = 0; done < run.count; done += kMaxRowsPerRead) {
      start[0] = run.start + done;
      count[0] = std::min(kMaxRowsPerRead, run.count - done);
      H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr));
      Handle mem_space = take_space(H5_CHECK(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr)));
      H5_CHECK(H5Dread(dataset, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, cursor));
      cursor += count[0] * row_bytes;
    }
  }
}

std::vector<hsize_t> dataset_dims(hid_t dataset) {
  Handle space = take_space(H5_CHECK(H5Dget_space(dataset)));
  const int rank = H5_CHECK(H5Sget_simple_extent_ndims(space.get()));
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  if (rank > 0) H5_CHECK(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr));
  return dims;
}

}  // namespace pix2pix::data::h5
