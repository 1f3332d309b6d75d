// What a dataset's type, creation properties and storage say (see h5_layout.hpp).
#include "pix2pix/data/h5_layout.hpp"

#include <algorithm>
#include <limits>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/memory_budget.hpp"
#include "pix2pix/data/h5_io.hpp"

namespace pix2pix::data::h5 {
namespace {

// a * b, saturating at the largest hsize_t (declared shapes are hostile until checked).
hsize_t saturating_multiply(hsize_t a, hsize_t b) {
  if (a != 0 && b > std::numeric_limits<hsize_t>::max() / a) return std::numeric_limits<hsize_t>::max();
  return a * b;
}

// HDF5's predefined types for values of a width, whole (unsigned) or not: a sample type's file
// and native types follow from its row of the sample-type table (See Note [the sample-type table]).
struct Predefined {
  bool integer;
  std::int64_t bytes;
  hid_t file, native;
};
Predefined predefined(bool integer, std::int64_t bytes) {
  const std::vector<Predefined> types = {{true, 1, H5T_STD_U8LE, H5T_NATIVE_UINT8},
                                         {true, 2, H5T_STD_U16LE, H5T_NATIVE_UINT16},
                                         {true, 4, H5T_STD_U32LE, H5T_NATIVE_UINT32},
                                         {false, 4, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT},
                                         {false, 8, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE}};
  for (const Predefined& p : types)
    if (p.integer == integer && p.bytes == bytes) return p;
  throw Error(std::string("HDF5: no predefined ") + (integer ? "unsigned integer" : "float") + " type of " +
              std::to_string(bytes) + " bytes");
}

}  // namespace

std::optional<SampleType> sample_type(hid_t dataset) {
  Handle type = take_type(H5_CHECK(H5Dget_type(dataset)));
  const H5T_class_t type_class = H5Tget_class(type.get());
  const auto size = static_cast<std::int64_t>(H5Tget_size(type.get()));
  const bool whole = type_class == H5T_INTEGER && H5Tget_sign(type.get()) == H5T_SGN_NONE;
  if (!whole && type_class != H5T_FLOAT) return std::nullopt;
  for (const SampleTraits& row : sample_type_table())
    if (row.integer == whole && row.stored_bytes == size) return row.type;
  return std::nullopt;
}

hid_t file_type(SampleType type) {
  return predefined(traits(type).integer, traits(type).stored_bytes).file;
}

hid_t stored_native_type(SampleType type) {
  return predefined(traits(type).integer, traits(type).stored_bytes).native;
}

hid_t memory_type(SampleType type) {
  switch (traits(type).in_memory) {  // See Note [uint16 in memory]
    case InMemory::uint8:
      return H5T_NATIVE_UINT8;
    case InMemory::int32:
      return H5T_NATIVE_INT32;
    case InMemory::float32:
      break;
  }
  return H5T_NATIVE_FLOAT;
}

std::string describe_type(hid_t dataset) {
  Handle type = take_type(H5_CHECK(H5Dget_type(dataset)));
  switch (H5Tget_class(type.get())) {
    case H5T_INTEGER:
      return std::string(H5Tget_sign(type.get()) == H5T_SGN_NONE ? "uint" : "int") +
             std::to_string(8 * H5Tget_size(type.get()));
    case H5T_FLOAT:
      return "float" + std::to_string(8 * H5Tget_size(type.get()));
    case H5T_STRING:
      return "string";
    default:
      return "a non-numeric type";
  }
}

std::string dims_text(const std::vector<hsize_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

bool is_one_image_per_chunk(hid_t dataset, const std::vector<hsize_t>& dims) {
  Handle plist = take_plist(H5_CHECK(H5Dget_create_plist(dataset)));
  if (H5Pget_layout(plist.get()) != H5D_CHUNKED) return false;
  std::vector<hsize_t> chunk(dims.size(), 0);
  if (H5_CHECK(H5Pget_chunk(plist.get(), static_cast<int>(chunk.size()), chunk.data())) !=
      static_cast<int>(dims.size()))
    return false;
  return chunk[0] == 1 && std::equal(chunk.begin() + 1, chunk.end(), dims.begin() + 1);
}

bool has_filter(hid_t dataset, H5Z_filter_t wanted) {
  Handle plist = take_plist(H5_CHECK(H5Dget_create_plist(dataset)));
  const int n = H5_CHECK(H5Pget_nfilters(plist.get()));
  for (int i = 0; i < n; ++i) {
    unsigned flags = 0, config = 0;
    size_t values = 0;
    char name[64];
    if (H5Pget_filter2(plist.get(), static_cast<unsigned>(i), &flags, &values, nullptr, sizeof(name), name, &config) ==
        wanted)
      return true;
  }
  return false;
}

// Note [declared vs stored]
// A dataset's shape is a header field: a 94 KB file can declare [10^9, 4096, 4096, 3] with no
// chunk written, and every reader that sizes an allocation (a shard permutation, a cache) from
// that shape is then at the mercy of the file. So a pair count is trusted only when the file
// really stores that many pairs: every chunk of a chunked dataset is allocated (HDF5 counts
// them from the chunk index, whose entries take room in the file), and contiguous or compact
// data is allocated in full; either way within the file's size. One chunk index stores no
// entries: the implicit index of an early-allocated, unfiltered dataset claims every chunk, so
// there the storage it implies is compared with the file's size. (Summing the storage of other
// indexes walks every entry a second time: ~3 ms per 1,000 chunks, measured.) External and
// virtual storage point outside the file and are refused. Unwritten chunks would read as fill
// values, so a dataset with some missing is incomplete either way.
std::optional<std::string> storage_problem(hid_t dataset, const std::vector<hsize_t>& dims, std::int64_t file_size) {
  Handle plist = take_plist(H5_CHECK(H5Dget_create_plist(dataset)));
  const H5D_layout_t layout = H5Pget_layout(plist.get());
  if (layout == H5D_VIRTUAL) return "is a virtual dataset (data in other files), which is not supported";
  if (H5_CHECK(H5Pget_external_count(plist.get())) > 0)
    return "keeps its data in external files, which is not supported";
  Handle type = take_type(H5_CHECK(H5Dget_type(dataset)));
  hsize_t declared_bytes = H5Tget_size(type.get());
  for (hsize_t d : dims) declared_bytes = saturating_multiply(declared_bytes, d);
  const std::string declared = "declares " + std::to_string(dims[0]) + " pairs " + dims_text(dims) + " (" +
                               format_bytes(static_cast<std::int64_t>(std::min<hsize_t>(
                                   declared_bytes, static_cast<hsize_t>(std::numeric_limits<std::int64_t>::max())))) +
                               ")";
  bool check_storage = true;  // compare the storage HDF5 reports with the file (see the Note)
  if (layout == H5D_CHUNKED) {
    H5D_alloc_time_t alloc_time = H5D_ALLOC_TIME_DEFAULT;
    H5_CHECK(H5Pget_alloc_time(plist.get(), &alloc_time));
    check_storage = alloc_time == H5D_ALLOC_TIME_EARLY && H5_CHECK(H5Pget_nfilters(plist.get())) == 0;
    std::vector<hsize_t> chunk(dims.size(), 0);
    H5_CHECK(H5Pget_chunk(plist.get(), static_cast<int>(chunk.size()), chunk.data()));
    hsize_t expected = 1;
    for (size_t i = 0; i < dims.size(); ++i)
      expected = saturating_multiply(expected, chunk[i] == 0 ? 0 : (dims[i] + chunk[i] - 1) / chunk[i]);
    Handle space = take_space(H5_CHECK(H5Dget_space(dataset)));
    hsize_t stored = 0;
    H5_CHECK(H5Dget_num_chunks(dataset, space.get(), &stored));
    if (stored < expected)
      return declared + " but stores only " + std::to_string(stored) + " of its " + std::to_string(expected) +
             " chunks: the file is incomplete or damaged (a reader would size its memory from the declared "
             "shape)";
  }
  if (!check_storage) return std::nullopt;
  const hsize_t storage = H5Dget_storage_size(dataset);
  if (layout != H5D_CHUNKED && storage < declared_bytes)
    return declared + " but its storage holds " + format_bytes(static_cast<std::int64_t>(storage)) +
           ": the file is incomplete or damaged";
  if (storage > static_cast<hsize_t>(file_size))
    return declared + " and claims " + format_bytes(static_cast<std::int64_t>(storage)) +
           " of storage, more than the whole file (" + format_bytes(file_size) + "): the file is damaged";
  return std::nullopt;
}

}  // namespace pix2pix::data::h5
