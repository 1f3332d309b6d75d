// PairedDataset: layout validation on open and hyperslab-union reads (see paired_dataset.hpp).
#include <algorithm>
#include <filesystem>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/data/h5_io.hpp"
#include "pix2pix/data/paired_dataset.hpp"

namespace pix2pix::data {
namespace {

// Rows per H5Dread. See Note [one read per run] below for why reads are not merged.
constexpr hsize_t kMaxRowsPerRead = 16;

struct Run {
  hsize_t start;
  hsize_t count;
};

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
// Reads the rows in `runs` (dimension 0) of `dataset` into `out`, packed in run order.
void read_rows(hid_t dataset, hid_t mem_type, const std::vector<Run>& runs, void* out, size_t row_bytes) {
  const std::vector<hsize_t> dims = h5::dataset_dims(dataset);
  h5::Handle file_space = h5::take_space(H5_CHECK(H5Dget_space(dataset)));
  auto* cursor = static_cast<unsigned char*>(out);
  std::vector<hsize_t> start(dims.size(), 0), count(dims);
  for (const Run& run : runs) {
    for (hsize_t done = 0; done < run.count; done += kMaxRowsPerRead) {
      start[0] = run.start + done;
      count[0] = std::min(kMaxRowsPerRead, run.count - done);
      H5_CHECK(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr));
      h5::Handle mem_space =
          h5::take_space(H5_CHECK(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr)));
      H5_CHECK(H5Dread(dataset, mem_type, mem_space.get(), file_space.get(), H5P_DEFAULT, cursor));
      cursor += count[0] * row_bytes;
    }
  }
}

struct SplitHandles {
  h5::Handle a, b, labels, names;
};

[[noreturn]] void invalid(const std::string& path, const std::string& where, const std::string& why) {
  throw Error(path + ": " + where + ": " + why);
}

bool is_uint8(hid_t dataset) {
  h5::Handle type = h5::take_type(H5_CHECK(H5Dget_type(dataset)));
  return H5Tget_class(type.get()) == H5T_INTEGER && H5Tget_size(type.get()) == 1 &&
         H5Tget_sign(type.get()) == H5T_SGN_NONE;
}

std::string describe_type(hid_t dataset) {
  h5::Handle type = h5::take_type(H5_CHECK(H5Dget_type(dataset)));
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
  h5::Handle plist = h5::take_plist(H5_CHECK(H5Dget_create_plist(dataset)));
  if (H5Pget_layout(plist.get()) != H5D_CHUNKED) return false;
  std::vector<hsize_t> chunk(dims.size(), 0);
  if (H5_CHECK(H5Pget_chunk(plist.get(), static_cast<int>(chunk.size()), chunk.data())) !=
      static_cast<int>(dims.size()))
    return false;
  return chunk[0] == 1 && std::equal(chunk.begin() + 1, chunk.end(), dims.begin() + 1);
}

bool is_compressed(hid_t dataset) {
  h5::Handle plist = h5::take_plist(H5_CHECK(H5Dget_create_plist(dataset)));
  return H5_CHECK(H5Pget_nfilters(plist.get())) > 0;
}

}  // namespace

struct PairedDataset::Impl {
  h5::Handle file;
  std::map<std::string, SplitHandles> handles;
};

namespace {
const Choices<H5Driver> kH5DriverChoices = {{"serial", H5Driver::serial}, {"mpio", H5Driver::mpio}};
}  // namespace

H5Driver parse_h5_driver(const std::string& text) {
  return parse_choice(text, "--h5-driver", kH5DriverChoices);
}
std::string to_string(H5Driver value) {
  return choice_name(value, kH5DriverChoices);
}

bool mpio_driver_available() {
#ifdef H5_HAVE_PARALLEL
  return true;
#else
  return false;
#endif
}

PairedDataset::PairedDataset(std::string path, H5Driver driver)
    : path_(std::move(path)), driver_(driver), impl_(std::make_unique<Impl>()) {}

PairedDataset::~PairedDataset() = default;

std::shared_ptr<PairedDataset> PairedDataset::open(const std::string& path, H5Driver driver) {
  try {
    return open_validated(path, driver);
  } catch (const Error& e) {
    // Every message names the file, also those of failed HDF5 calls deep inside validation.
    const std::string what = e.what();
    if (what.rfind(path, 0) == 0) throw;
    throw Error(path + ": " + what);
  }
}

std::shared_ptr<PairedDataset> PairedDataset::open_validated(const std::string& path, H5Driver driver) {
  h5::initialise_library();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw Error(path + ": is a directory, not an HDF5 file");

  std::shared_ptr<PairedDataset> ds(new PairedDataset(path, driver));
  h5::Handle fapl = h5::take_plist(H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)));
  if (driver == H5Driver::mpio) {
#ifdef H5_HAVE_PARALLEL
    H5_CHECK(H5Pset_fapl_mpio(fapl.get(), MPI_COMM_WORLD, MPI_INFO_NULL));
#else
    throw Error("--h5-driver mpio: this build uses serial HDF5; rebuild against parallel HDF5");
#endif
  }
  if (H5Fis_hdf5(path.c_str()) <= 0) throw Error(path + ": not an HDF5 file (or it is damaged)");
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (file < 0) throw Error(path + ": cannot open as HDF5: " + h5::last_error_message());
  ds->impl_->file = h5::take_file(file);

  FileAttributes& attrs = ds->attributes_;
  attrs.format = h5::read_string_attribute(file, format::kAttrFormat).value_or("");
  if (attrs.format != format::kFormatName)
    invalid(path, "root attribute 'format'",
            attrs.format.empty() ? "missing; not a pix2pix-h5 file (see docs/data-format.md)"
                                 : "is '" + attrs.format + "', expected '" + format::kFormatName + "'");
  attrs.version = h5::read_int_attribute(file, format::kAttrVersion).value_or(-1);
  if (attrs.version != format::kVersion)
    invalid(path, "root attribute 'version'",
            "is " + std::to_string(attrs.version) + ", this build reads version " + std::to_string(format::kVersion));
  attrs.source = h5::read_string_attribute(file, format::kAttrSource).value_or("");
  attrs.pairing = h5::read_string_attribute(file, format::kAttrPairing).value_or("");
  attrs.created_by = h5::read_string_attribute(file, format::kAttrCreatedBy).value_or("");

  for (const char* split_name : format::kSplits) {
    const std::string split = split_name;
    if (!h5::link_exists(file, split)) {
      if (format::is_required_split(split)) invalid(path, "/" + split, "required split is missing");
      continue;
    }
    SplitHandles handles;
    SplitInfo info;
    info.name = split;
    std::vector<hsize_t> dims_a;
    for (const char* side : {format::kImagesA, format::kImagesB}) {
      const std::string where = "/" + split + "/" + side;
      if (!h5::link_exists(file, where)) invalid(path, where, "dataset is missing");
      h5::Handle d = h5::take_dataset(H5_CHECK(H5Dopen2(file, where.c_str(), H5P_DEFAULT)));
      if (!is_uint8(d.get())) invalid(path, where, "expected uint8, got " + describe_type(d.get()));
      const std::vector<hsize_t> dims = h5::dataset_dims(d.get());
      if (dims.size() != 4) invalid(path, where, "expected shape [N, H, W, C], got " + dims_text(dims));
      if (dims[0] < 1 || dims[0] > static_cast<hsize_t>(format::kMaxPairs))
        invalid(path, where, "pair count " + std::to_string(dims[0]) + " outside [1, 2^31]");
      if (dims[1] < 1 || dims[2] < 1 || dims[1] > static_cast<hsize_t>(format::kMaxSide) ||
          dims[2] > static_cast<hsize_t>(format::kMaxSide))
        invalid(path, where,
                "image size " + dims_text(dims) + " outside 1.." + std::to_string(format::kMaxSide) + " per side");
      if (!format::is_valid_channels(static_cast<std::int64_t>(dims[3])))
        invalid(path, where, "channels must be 1 or 3, got " + std::to_string(dims[3]));
      if (dims[1] * dims[2] * dims[3] > static_cast<hsize_t>(format::kMaxImageBytes))
        invalid(path, where, "one image would take more than 256 MiB");
      if (side == format::kImagesA) {
        dims_a = dims;
        info.count = static_cast<std::int64_t>(dims[0]);
        info.height = static_cast<std::int64_t>(dims[1]);
        info.width = static_cast<std::int64_t>(dims[2]);
        info.channels_a = static_cast<std::int64_t>(dims[3]);
        info.compressed = is_compressed(d.get());
        info.one_image_per_chunk = is_one_image_per_chunk(d.get(), dims);
        handles.a = std::move(d);
      } else {
        if (dims[0] != dims_a[0])
          invalid(path, where, "has " + std::to_string(dims[0]) + " pairs but A has " + std::to_string(dims_a[0]));
        if (dims[1] != dims_a[1] || dims[2] != dims_a[2])
          invalid(path, where, "image size " + dims_text(dims) + " differs from A " + dims_text(dims_a));
        info.channels_b = static_cast<std::int64_t>(dims[3]);
        info.one_image_per_chunk = info.one_image_per_chunk && is_one_image_per_chunk(d.get(), dims);
        handles.b = std::move(d);
      }
    }
    const std::string labels_path = "/" + split + "/" + format::kLabels;
    if (h5::link_exists(file, labels_path)) {
      h5::Handle d = h5::take_dataset(H5_CHECK(H5Dopen2(file, labels_path.c_str(), H5P_DEFAULT)));
      h5::Handle type = h5::take_type(H5_CHECK(H5Dget_type(d.get())));
      if (H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_size(type.get()) != 4 ||
          H5Tget_sign(type.get()) != H5T_SGN_2)
        invalid(path, labels_path, "expected int32, got " + describe_type(d.get()));
      const auto dims = h5::dataset_dims(d.get());
      if (dims.size() != 1 || static_cast<std::int64_t>(dims[0]) != info.count)
        invalid(path, labels_path, "expected shape [" + std::to_string(info.count) + "], got " + dims_text(dims));
      info.has_labels = true;
      handles.labels = std::move(d);
    }
    const std::string names_path = "/" + split + "/" + format::kNames;
    if (h5::link_exists(file, names_path)) {
      h5::Handle d = h5::take_dataset(H5_CHECK(H5Dopen2(file, names_path.c_str(), H5P_DEFAULT)));
      h5::Handle type = h5::take_type(H5_CHECK(H5Dget_type(d.get())));
      if (H5Tget_class(type.get()) != H5T_STRING || H5_CHECK(H5Tis_variable_str(type.get())) <= 0)
        invalid(path, names_path, "expected variable-length strings");
      const auto dims = h5::dataset_dims(d.get());
      if (dims.size() != 1 || static_cast<std::int64_t>(dims[0]) != info.count)
        invalid(path, names_path, "expected shape [" + std::to_string(info.count) + "], got " + dims_text(dims));
      info.has_names = true;
      handles.names = std::move(d);
    }
    ds->splits_[split] = info;
    ds->impl_->handles[split] = std::move(handles);
  }
  return ds;
}

const SplitInfo& PairedDataset::split(const std::string& split) const {
  auto it = splits_.find(split);
  if (it == splits_.end()) throw Error(path_ + ": has no split '" + split + "'");
  return it->second;
}

std::vector<std::string> PairedDataset::split_names() const {
  std::vector<std::string> names;
  for (const char* s : format::kSplits)
    if (has_split(s)) names.emplace_back(s);
  return names;
}

namespace {
// Sorted unique copy of `indices` (checked against `count`) and, for each requested index,
// its position in that copy.
std::vector<std::int64_t> sorted_unique_checked(const std::vector<std::int64_t>& indices, std::int64_t count,
                                                const std::string& what, std::vector<std::int64_t>* positions) {
  std::vector<std::int64_t> unique(indices);
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  if (!unique.empty() && (unique.front() < 0 || unique.back() >= count))
    throw Error(what + ": index " + std::to_string(unique.front() < 0 ? unique.front() : unique.back()) +
                " out of range [0, " + std::to_string(count) + ")");
  positions->resize(indices.size());
  for (size_t i = 0; i < indices.size(); ++i)
    (*positions)[i] = std::lower_bound(unique.begin(), unique.end(), indices[i]) - unique.begin();
  return unique;
}
}  // namespace

PairBatch PairedDataset::read(const std::string& split_name, const std::vector<std::int64_t>& indices) const {
  const SplitInfo& info = split(split_name);
  const SplitHandles& handles = impl_->handles.at(split_name);
  std::vector<std::int64_t> positions;
  const auto unique = sorted_unique_checked(indices, info.count, path_ + ": /" + split_name, &positions);
  const auto runs = contiguous_runs(unique);
  const auto n = static_cast<std::int64_t>(unique.size());

  PairBatch batch;
  batch.a = torch::empty({n, info.height, info.width, info.channels_a}, torch::kUInt8);
  batch.b = torch::empty({n, info.height, info.width, info.channels_b}, torch::kUInt8);
  if (n > 0) {
    read_rows(handles.a.get(), H5T_NATIVE_UINT8, runs, batch.a.data_ptr(),
              static_cast<size_t>(info.height * info.width * info.channels_a));
    read_rows(handles.b.get(), H5T_NATIVE_UINT8, runs, batch.b.data_ptr(),
              static_cast<size_t>(info.height * info.width * info.channels_b));
  }
  if (info.has_labels) {
    batch.labels = torch::empty({n}, torch::kInt32);
    if (n > 0) read_rows(handles.labels.get(), H5T_NATIVE_INT32, runs, batch.labels.data_ptr(), 4);
  }
  const bool in_order =
      static_cast<std::int64_t>(indices.size()) == n && std::equal(indices.begin(), indices.end(), unique.begin());
  if (!in_order) {
    const auto order = torch::tensor(positions, torch::kInt64);
    batch.a = batch.a.index_select(0, order);
    batch.b = batch.b.index_select(0, order);
    if (batch.labels.defined()) batch.labels = batch.labels.index_select(0, order);
  }
  return batch;
}

std::vector<std::string> PairedDataset::read_names(const std::string& split_name,
                                                   const std::vector<std::int64_t>& indices) const {
  const SplitInfo& info = split(split_name);
  std::vector<std::string> names(indices.size());
  if (!info.has_names || indices.empty()) return names;
  std::vector<std::int64_t> positions;
  const auto unique = sorted_unique_checked(indices, info.count, path_ + ": /" + split_name, &positions);
  const hid_t dataset = impl_->handles.at(split_name).names.get();
  h5::Handle file_type = h5::take_type(H5_CHECK(H5Dget_type(dataset)));
  h5::Handle type = h5::variable_string_type(H5Tget_cset(file_type.get()));
  std::vector<char*> raw(unique.size(), nullptr);
  read_rows(dataset, type.get(), contiguous_runs(unique), raw.data(), sizeof(char*));
  for (size_t i = 0; i < indices.size(); ++i) {
    const char* text = raw[static_cast<size_t>(positions[i])];
    names[i] = text != nullptr ? text : "";
  }
  for (char* text : raw) H5free_memory(text);
  return names;
}

}  // namespace pix2pix::data
