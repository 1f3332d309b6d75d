// Extendible, chunked datasets (one image per chunk) grown geometrically while appending and
// trimmed at the end of a split, so prepare never needs to know the final count in advance.
// Format version 2: HDF5 1.10 object formats (every metadata object checksummed), Fletcher-32 on
// every chunk, fixed-length strings (data/format.hpp says why). Version 3 (unpaired files): the
// same, with a `pairing` attribute on each split group. Version 4: uint16/float32 images, up to
// 16 channels, and the domains' value ranges.
#include "pix2pix/data/h5_writer.hpp"

#include <algorithm>

#include "pix2pix/data/format.hpp"
#include "pix2pix/data/h5_layout.hpp"

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
  unpaired_file_ = pairing == format::kPairingUnpaired;
  h5::write_string_attribute(file_.get(), format::kAttrFormat, format::kFormatName);
  h5::write_string_attribute(file_.get(), format::kAttrSource, source);
  h5::write_string_attribute(file_.get(), format::kAttrPairing, pairing);
  h5::write_string_attribute(file_.get(), format::kAttrCreatedBy, created_by);
}

void PairedFileWriter::set_value_ranges(const ValueRange& a, const ValueRange& b) {
  check_range(a, path_ + ": the range of A");
  check_range(b, path_ + ": the range of B");
  range_a_ = a;
  range_b_ = b;
  if (a != ValueRange{} || b != ValueRange{}) needs_samples_version_ = true;
}

void PairedFileWriter::begin_split(const std::string& split, const SplitLayout& layout) {
  if (!file_.valid()) throw Error("PairedFileWriter: file '" + path_ + "' is already closed");
  if (!layout.paired && !unpaired_file_)
    throw Error("PairedFileWriter: split '" + split + "' is unpaired but the file's pairing is not \"" +
                format::kPairingUnpaired + "\"");
  if (!layout.paired && layout.with_labels)
    throw Error("PairedFileWriter: split '" + split + "' is unpaired: labels go with pairs");
  if (group_.valid()) end_split();
  layout_ = layout;
  group_ = h5::take_group(H5_CHECK(H5Gcreate2(file_.get(), split.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)));
  if (unpaired_file_)
    h5::write_string_attribute(group_.get(), format::kAttrPairing,
                               layout.paired ? format::kSplitPaired : format::kSplitUnpaired);
  if (type_a_ && (*type_a_ != layout.type_a || *type_b_ != layout.type_b))
    throw Error("PairedFileWriter: split '" + split + "' changes a domain's sample type");
  type_a_ = layout.type_a;
  type_b_ = layout.type_b;
  for (const std::int64_t channels : {layout.channels_a, layout.channels_b})
    if (!format::is_valid_channels(channels))
      throw Error("PairedFileWriter: " + std::to_string(channels) + " channels; the format allows 1 to " +
                  std::to_string(format::kMaxChannels));
  if (layout.type_a != SampleType::uint8 || layout.type_b != SampleType::uint8 ||
      !format::is_valid_channels(layout.channels_a, format::kUnpairedVersion) ||
      !format::is_valid_channels(layout.channels_b, format::kUnpairedVersion))
    needs_samples_version_ = true;
  const auto h = static_cast<hsize_t>(layout.height), w = static_cast<hsize_t>(layout.width);
  const auto image_column = [&](const char* name, std::int64_t channels, SampleType type) {
    Column c;
    c.dataset = create_extendible(group_.get(), name, h5::file_type(type), {1, h, w, static_cast<hsize_t>(channels)},
                                  compression_);
    c.native_type = h5::stored_native_type(type);
    c.row_bytes = static_cast<size_t>(layout.height * layout.width * channels * stored_bytes(type));
    return c;
  };
  const auto name_column = [&](const char* name, std::int64_t bytes) {
    if (bytes < 1 || bytes > format::kMaxNameBytes)
      throw Error("PairedFileWriter: name size " + std::to_string(bytes) + " outside 1.." +
                  std::to_string(format::kMaxNameBytes));
    Column c;
    c.string_type = h5::fixed_string_type(static_cast<size_t>(bytes));
    c.dataset = create_extendible(group_.get(), name, c.string_type.get(), {kMetaChunk}, compression_);
    c.row_bytes = static_cast<size_t>(bytes);
    return c;
  };
  a_ = image_column(format::kImagesA, layout.channels_a, layout.type_a);
  b_ = image_column(format::kImagesB, layout.channels_b, layout.type_b);
  if (layout.with_labels) {
    labels_.dataset = create_extendible(group_.get(), format::kLabels, H5T_STD_I32LE, {kMetaChunk}, 0);
    labels_.native_type = H5T_NATIVE_INT32;
    labels_.row_bytes = sizeof(std::int32_t);
  }
  if (layout.with_names) {
    names_ = name_column(format::kNames, layout.name_bytes);
    if (!layout.paired) names_b_ = name_column(format::kNamesB, layout.name_bytes_b);
  }
}

void PairedFileWriter::require_split(bool paired) const {
  if (!group_.valid()) throw Error("PairedFileWriter: append before begin_split");
  if (layout_.paired != paired)
    throw Error(std::string("PairedFileWriter: ") +
                (paired ? "a pair appended to an unpaired split" : "a single image appended to a paired split"));
}

void PairedFileWriter::append_row(Column& column, const void* row) {
  const auto* bytes = static_cast<const std::uint8_t*>(row);
  column.buffer.insert(column.buffer.end(), bytes, bytes + column.row_bytes);
  ++column.count;
  if (column.count - column.written >= kRowsPerWrite) flush(column);
}

void PairedFileWriter::append_name(Column& column, const std::string& name, std::int64_t name_bytes) {
  if (!column.dataset.valid()) return;
  if (static_cast<std::int64_t>(name.size()) > name_bytes)
    throw Error("PairedFileWriter: name '" + name + "' is longer than the split's " + std::to_string(name_bytes) +
                " bytes");
  std::vector<char> padded(static_cast<size_t>(name_bytes), '\0');
  std::copy(name.begin(), name.end(), padded.begin());
  append_row(column, padded.data());
}

void PairedFileWriter::append(const void* a, const void* b, std::int32_t label, const std::string& name) {
  require_split(true);
  append_row(a_, a);
  append_row(b_, b);
  if (labels_.dataset.valid()) append_row(labels_, &label);
  append_name(names_, name, layout_.name_bytes);
}

void PairedFileWriter::append_image(format::Domain domain, const void* image, const std::string& name) {
  require_split(false);
  if (domain == format::Domain::A) {
    append_row(a_, image);
    append_name(names_, name, layout_.name_bytes);
  } else {
    append_row(b_, image);
    append_name(names_b_, name, layout_.name_bytes_b);
  }
}

void PairedFileWriter::flush(Column& column) {
  const std::int64_t rows = column.count - column.written;
  if (rows == 0) return;
  if (column.count > column.capacity) {
    column.capacity = std::max<std::int64_t>({1024, column.capacity * 2, column.count});
    set_first_extent(column.dataset.get(), static_cast<hsize_t>(column.capacity));
  }
  const hid_t type = column.string_type.valid() ? column.string_type.get() : column.native_type;
  write_rows(column.dataset.get(), type, static_cast<hsize_t>(column.written), static_cast<hsize_t>(rows),
             column.buffer.data());
  column.written = column.count;
  column.buffer.clear();
}

std::int64_t PairedFileWriter::end_split() {
  if (!group_.valid()) return 0;
  const std::int64_t count = a_.count;
  for (Column* column : {&a_, &b_, &labels_, &names_, &names_b_}) {
    if (column->dataset.valid()) {
      flush(*column);
      set_first_extent(column->dataset.get(), static_cast<hsize_t>(column->count));
    }
    *column = Column();
  }
  group_.reset();
  return count;
}

void PairedFileWriter::close() {
  end_split();
  if (file_.valid()) {
    if (needs_samples_version_) {
      // Version 4 states both ranges, also a natural one: a reader need not know the defaults.
      const auto range_or_natural = [](const std::optional<ValueRange>& range, const std::optional<SampleType>& type,
                                       const char* domain) {
        if (range) return *range;
        const auto natural = natural_range(type.value_or(SampleType::uint8));
        if (!natural) throw Error(std::string("PairedFileWriter: float32 domain ") + domain + " has no value range");
        return *natural;
      };
      const ValueRange a = range_or_natural(range_a_, type_a_, "A"), b = range_or_natural(range_b_, type_b_, "B");
      h5::write_double_array_attribute(file_.get(), format::kAttrRangeA, {a.lo, a.hi});
      h5::write_double_array_attribute(file_.get(), format::kAttrRangeB, {b.lo, b.hi});
    }
    h5::write_int_attribute(file_.get(), format::kAttrVersion,
                            needs_samples_version_ ? format::kSamplesVersion
                            : unpaired_file_       ? format::kUnpairedVersion
                                                   : format::kPairedVersion);
    H5_CHECK(H5Fflush(file_.get(), H5F_SCOPE_GLOBAL));
    const hid_t id = file_.release();
    H5_CHECK(H5Fclose(id));
  }
}

}  // namespace pix2pix::data
