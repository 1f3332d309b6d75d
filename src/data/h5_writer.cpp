// Extendible, chunked datasets (one image per chunk) grown geometrically while appending and
// trimmed at the end of a split, so prepare never needs to know the final count in advance.
// Format version 2: HDF5 1.10 object formats (every metadata object checksummed), Fletcher-32 on
// every chunk, fixed-length strings (data/format.hpp says why).
#include "pix2pix/data/h5_writer.hpp"

#include <algorithm>

#include "pix2pix/data/format.hpp"

namespace pix2pix::data {
namespace {

constexpr hsize_t kMetaChunk = 4096;        // elements per chunk of labels/names
constexpr std::int64_t kRowsPerWrite = 64;  // pairs buffered per H5Dwrite (per-pair writes cost 3x)

h5::Handle create_extendible(hid_t group, const char* name, hid_t type, const std::vector<hsize_t>& chunk,
                             int compression) {
  // Filters run in order on write: shuffle and deflate shrink the chunk, Fletcher-32 then sums
  // what is stored, so a reader checks the bytes it reads before inflating them.
  std::vector<hsize_t> dims(chunk), maxdims(chunk);
  dims[0] = 0;
  maxdims[0] = H5S_UNLIMITED;
  h5::Handle space =
      h5::take_space(H5_CHECK(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), maxdims.data())));
  h5::Handle plist = h5::take_plist(H5_CHECK(H5Pcreate(H5P_DATASET_CREATE)));
  H5_CHECK(H5Pset_chunk(plist.get(), static_cast<int>(chunk.size()), chunk.data()));
  if (compression > 0) {
    H5_CHECK(H5Pset_shuffle(plist.get()));
    H5_CHECK(H5Pset_deflate(plist.get(), static_cast<unsigned>(compression)));
  }
  H5_CHECK(H5Pset_fletcher32(plist.get()));
  return h5::take_dataset(H5_CHECK(H5Dcreate2(group, name, type, space.get(), H5P_DEFAULT, plist.get(), H5P_DEFAULT)));
}

void set_first_extent(hid_t dataset, hsize_t n) {
  std::vector<hsize_t> dims = h5::dataset_dims(dataset);
  dims[0] = n;
  H5_CHECK(H5Dset_extent(dataset, dims.data()));
}

// Writes `rows` elements along dimension 0 at `index` from `data` (memory type `mem_type`).
void write_rows(hid_t dataset, hid_t mem_type, hsize_t index, hsize_t rows, const void* data) {
  std::vector<hsize_t> dims = h5::dataset_dims(dataset);
  std::vector<hsize_t> start(dims.size(), 0), count(dims);
  start[0] = index;
  count[0] = rows;
  h5::Handle file_space = h5::take_space(H5_CHECK(H5Dget_space(dataset)));
  H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr));
  h5::Handle mem_space =
      h5::take_space(H5_CHECK(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr)));
  H5_CHECK(H5Dwrite(dataset, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, data));
}

}  // namespace

PairedFileWriter::PairedFileWriter(const std::string& path, int compression) : path_(path), compression_(compression) {
  h5::initialise_library();
  if (compression < 0 || compression > 9) throw Error("--compression must be 0-9, got " + std::to_string(compression));
  // 1.10 object formats, and no later ones: checksummed metadata that HDF5 1.10 readers (and
  // h5py built on them) still open.
  h5::Handle fapl = h5::take_plist(H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)));
  H5_CHECK(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V110, H5F_LIBVER_V110));
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get());
  if (id < 0) throw Error("cannot create output file '" + path + "': " + h5::last_error_message());
  file_ = h5::take_file(id);
}

PairedFileWriter::~PairedFileWriter() {
  // Destruction after an error just releases the handles; the caller removes the temporary file.
}

void PairedFileWriter::write_root_attributes(const std::string& source, const std::string& pairing,
                                             const std::string& created_by) {
  h5::write_string_attribute(file_.get(), format::kAttrFormat, format::kFormatName);
  h5::write_int_attribute(file_.get(), format::kAttrVersion, format::kVersion);
  h5::write_string_attribute(file_.get(), format::kAttrSource, source);
  h5::write_string_attribute(file_.get(), format::kAttrPairing, pairing);
  h5::write_string_attribute(file_.get(), format::kAttrCreatedBy, created_by);
}

void PairedFileWriter::begin_split(const std::string& split, const SplitLayout& layout) {
  if (!file_.valid()) throw Error("PairedFileWriter: file '" + path_ + "' is already closed");
  if (group_.valid()) end_split();
  layout_ = layout;
  count_ = 0;
  written_ = 0;
  capacity_ = 0;
  group_ = h5::take_group(H5_CHECK(H5Gcreate2(file_.get(), split.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  const auto h = static_cast<hsize_t>(layout.height), w = static_cast<hsize_t>(layout.width);
  a_ = create_extendible(group_.get(), format::kImagesA, H5T_STD_U8LE,
                         {1, h, w, static_cast<hsize_t>(layout.channels_a)}, compression_);
  b_ = create_extendible(group_.get(), format::kImagesB, H5T_STD_U8LE,
                         {1, h, w, static_cast<hsize_t>(layout.channels_b)}, compression_);
  if (layout.with_labels) labels_ = create_extendible(group_.get(), format::kLabels, H5T_STD_I32LE, {kMetaChunk}, 0);
  if (layout.with_names) {
    if (layout.name_bytes < 1 || layout.name_bytes > format::kMaxNameBytes)
      throw Error("PairedFileWriter: name size " + std::to_string(layout.name_bytes) + " outside 1.." +
                  std::to_string(format::kMaxNameBytes));
    h5::Handle type = h5::fixed_string_type(static_cast<size_t>(layout.name_bytes));
    names_ = create_extendible(group_.get(), format::kNames, type.get(), {kMetaChunk}, compression_);
  }
}

void PairedFileWriter::grow_to(std::int64_t capacity) {
  for (const h5::Handle* d : {&a_, &b_, &labels_, &names_})
    if (d->valid()) set_first_extent(d->get(), static_cast<hsize_t>(capacity));
  capacity_ = capacity;
}

void PairedFileWriter::append(const std::uint8_t* a, const std::uint8_t* b, std::int32_t label,
                              const std::string& name) {
  if (!group_.valid()) throw Error("PairedFileWriter: append before begin_split");
  const auto bytes_a = static_cast<size_t>(layout_.height * layout_.width * layout_.channels_a);
  const auto bytes_b = static_cast<size_t>(layout_.height * layout_.width * layout_.channels_b);
  buffer_a_.insert(buffer_a_.end(), a, a + bytes_a);
  buffer_b_.insert(buffer_b_.end(), b, b + bytes_b);
  buffer_labels_.push_back(label);
  if (layout_.with_names) {
    if (static_cast<std::int64_t>(name.size()) > layout_.name_bytes)
      throw Error("PairedFileWriter: name '" + name + "' is longer than the split's " +
                  std::to_string(layout_.name_bytes) + " bytes");
    const size_t at = buffer_names_.size();
    buffer_names_.resize(at + static_cast<size_t>(layout_.name_bytes), '\0');
    std::copy(name.begin(), name.end(), buffer_names_.begin() + static_cast<std::ptrdiff_t>(at));
  }
  ++count_;
  if (count_ - written_ >= kRowsPerWrite) flush_rows();
}

void PairedFileWriter::flush_rows() {
  const std::int64_t rows = count_ - written_;
  if (rows == 0) return;
  if (count_ > capacity_) grow_to(std::max<std::int64_t>({1024, capacity_ * 2, count_}));
  const auto index = static_cast<hsize_t>(written_);
  const auto n = static_cast<hsize_t>(rows);
  write_rows(a_.get(), H5T_NATIVE_UINT8, index, n, buffer_a_.data());
  write_rows(b_.get(), H5T_NATIVE_UINT8, index, n, buffer_b_.data());
  if (labels_.valid()) write_rows(labels_.get(), H5T_NATIVE_INT32, index, n, buffer_labels_.data());
  if (names_.valid()) {
    h5::Handle type = h5::fixed_string_type(static_cast<size_t>(layout_.name_bytes));
    write_rows(names_.get(), type.get(), index, n, buffer_names_.data());
  }
  written_ = count_;
  buffer_a_.clear();
  buffer_b_.clear();
  buffer_labels_.clear();
  buffer_names_.clear();
}

std::int64_t PairedFileWriter::end_split() {
  if (!group_.valid()) return 0;
  flush_rows();
  grow_to(count_);
  for (h5::Handle* d : {&a_, &b_, &labels_, &names_}) d->reset();
  group_.reset();
  return count_;
}

void PairedFileWriter::close() {
  end_split();
  if (file_.valid()) {
    H5_CHECK(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL));
    const hid_t id = file_.release();
    H5_CHECK(H5Fclose(id));
  }
}

}  // namespace pix2pix::data
