// PairedDataset: layout validation on open (shapes, limits, stored data) and reads by index list.
#include <algorithm>
#include <array>
#include <cmath>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/common/memory_budget.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/data/h5_io.hpp"
#include "pix2pix/data/h5_isolated_read.hpp"
#include "pix2pix/data/h5_layout.hpp"
#include "pix2pix/data/h5_root_attributes.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/data/samples.hpp"

namespace pix2pix::data {
namespace {

struct SplitHandles {
  h5::Handle a, b, labels, names, names_b;
  size_t name_bytes = 0, name_bytes_b = 0;  // version >= 2: the fixed string sizes of names and names_B
};

[[noreturn]] void invalid(const std::string& path, const std::string& where, const std::string& why) {
  throw Error(path + ": " + where + ": " + why);
}

}  // namespace

std::int64_t pairs_per_read_block(const SplitInfo& info, std::int64_t at_most) {
  constexpr std::int64_t kBlockBytes = 64LL << 20;
  return std::max<std::int64_t>(1, std::min(at_most, kBlockBytes / std::max<std::int64_t>(1, info.pair_bytes())));
}

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
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    // Every message names the file, also those of failed HDF5 calls deep inside validation.
    const std::string what = e.what();
    if (what.rfind(path, 0) == 0) throw;
    throw Error(path + ": " + what);
  }
}

std::shared_ptr<PairedDataset> PairedDataset::open_validated(const std::string& path, H5Driver driver) {
  h5::initialise_library();
  // A FIFO would block H5Fis_hdf5 forever, and an unreadable file would look "not HDF5".
  const std::int64_t file_size = require_readable_file(path);

  std::shared_ptr<PairedDataset> ds(new PairedDataset(path, driver));
  h5::Handle fapl = h5::take_plist(H5_CHECK(H5Pcreate(H5P_FILE_ACCESS)));
  if (driver == H5Driver::mpio) {
#ifdef H5_HAVE_PARALLEL
    H5_CHECK(H5Pset_fapl_mpio(fapl.get(), MPI_COMM_WORLD, MPI_INFO_NULL));
#else
    throw UsageError("--h5-driver mpio: this build uses serial HDF5; rebuild against parallel HDF5");
#endif
  }
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 < 0) throw Error(path + ": cannot be read as HDF5: " + h5::last_error_message());
  if (is_hdf5 == 0) throw Error(path + ": not an HDF5 file (or it is damaged)");
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (file < 0) throw Error(path + ": cannot open as HDF5: " + h5::last_error_message());
  ds->impl_->file = h5::take_file(file);

  // The version comes first: it says how strings are stored, hence how they may be read.
  FileAttributes& attrs = ds->attributes_;
  std::optional<std::int64_t> version;
  try {
    version = h5::read_int_attribute(file, format::kAttrVersion);
  } catch (const Error& e) {
    invalid(path, "root attribute 'version'", e.what());
  }
  if (!version) {
    invalid(path, "root attribute 'version'",
            h5::attribute_exists(file, format::kAttrFormat)
                ? "missing (the file has a 'format' attribute, but no version)"
                : "and 'format' missing; not a pix2pix-h5 file (see docs/data-format.md)");
  }
  attrs.version = *version;
  if (attrs.version < format::kOldestReadableVersion || attrs.version > format::kVersion)
    invalid(path, "root attribute 'version'",
            "is " + std::to_string(attrs.version) + ", this build reads versions " +
                std::to_string(format::kOldestReadableVersion) + " to " + std::to_string(format::kVersion));
  const FileStrings strings = read_root_strings(path, file, attrs.version);
  attrs.format = strings.format.value_or("");
  if (attrs.format != format::kFormatName)
    invalid(path, "root attribute 'format'",
            attrs.format.empty() ? "missing; not a pix2pix-h5 file (see docs/data-format.md)"
                                 : "is '" + attrs.format + "', expected '" + format::kFormatName + "'");
  attrs.source = strings.source.value_or("");
  attrs.pairing = strings.pairing.value_or("");
  attrs.created_by = strings.created_by.value_or("");
  attrs.unpaired = attrs.version >= format::kUnpairedVersion && attrs.pairing == format::kPairingUnpaired;
  // Each domain's declared range (version 4); the sample type's own range is filled in below.
  const std::array<std::optional<ValueRange>, 2> declared = read_value_ranges(path, file, attrs.version);

  for (const char* split_name : format::kSplits) {
    const std::string split = split_name;
    if (!h5::link_exists(file, split)) {
      if (format::is_required_split(split)) invalid(path, "/" + split, "required split is missing");
      continue;
    }
    SplitHandles handles;
    SplitInfo info;
    info.name = split;
    if (attrs.unpaired) info.paired = split_is_paired(path, file, split);
    std::vector<hsize_t> dims_a;
    std::array<ValueRange, 2> ranges;
    for (const char* side : {format::kImagesA, format::kImagesB}) {
      const std::string where = "/" + split + "/" + side;
      if (!h5::link_exists(file, where)) invalid(path, where, "dataset is missing");
      h5::Handle d = h5::take_dataset(H5_CHECK(H5Dopen2(file, where.c_str(), H5P_DEFAULT)));
      const std::optional<SampleType> type = h5::sample_type(d.get());
      if (attrs.version < format::kSamplesVersion && type != SampleType::uint8)
        invalid(path, where,
                "expected uint8, got " + h5::describe_type(d.get()) +
                    (type ? " (uint16 and float32 images need format version 4)" : ""));
      if (!type) invalid(path, where, "expected uint8, uint16 or float32, got " + h5::describe_type(d.get()));
      const std::vector<hsize_t> dims = h5::dataset_dims(d.get());
      if (dims.size() != 4) invalid(path, where, "expected shape [N, H, W, C], got " + h5::dims_text(dims));
      const size_t side_index = side == format::kImagesA ? 0 : 1;
      if (!declared[side_index] && !natural_range(*type))
        invalid(path, where,
                "holds " + to_string(*type) + " images but the file has no root attribute '" +
                    format::range_of(side_index == 0 ? Domain::A : Domain::B) +
                    "' = [lo, hi]: float data has no natural range");
      ranges[side_index] = declared[side_index].value_or(natural_range(*type).value_or(ValueRange{}));
      if (dims[0] < 1 || dims[0] > static_cast<hsize_t>(format::kMaxPairs))
        invalid(path, where, "pair count " + std::to_string(dims[0]) + " outside [1, 2^31]");
      if (dims[1] < 1 || dims[2] < 1 || dims[1] > static_cast<hsize_t>(format::kMaxSide) ||
          dims[2] > static_cast<hsize_t>(format::kMaxSide))
        invalid(path, where,
                "image size " + h5::dims_text(dims) + " outside 1.." + std::to_string(format::kMaxSide) + " per side");
      if (!format::is_valid_channels(static_cast<std::int64_t>(dims[3]), attrs.version))
        invalid(path, where,
                (attrs.version >= format::kSamplesVersion
                     ? "channels must be 1 to " + std::to_string(format::kMaxChannels)
                     : std::string("channels must be 1 or 3 (format version 4 allows 1 to ") +
                           std::to_string(format::kMaxChannels) + ")") +
                    ", got " + std::to_string(dims[3]));
      if (dims[1] * dims[2] * dims[3] * static_cast<hsize_t>(memory_bytes(*type)) >
          static_cast<hsize_t>(format::kMaxImageBytes))
        invalid(path, where, "one image would take more than 256 MiB");
      if (const auto why = h5::storage_problem(d.get(), dims, file_size)) invalid(path, where, *why);
      if (side == format::kImagesA) {
        dims_a = dims;
        info.count = static_cast<std::int64_t>(dims[0]);
        info.height = static_cast<std::int64_t>(dims[1]);
        info.width = static_cast<std::int64_t>(dims[2]);
        info.channels_a = static_cast<std::int64_t>(dims[3]);
        info.samples_a = {*type, ranges[0]};
        info.compressed = h5::has_filter(d.get(), H5Z_FILTER_DEFLATE);
        info.checksummed = h5::has_filter(d.get(), H5Z_FILTER_FLETCHER32);
        info.one_image_per_chunk = h5::is_one_image_per_chunk(d.get(), dims);
        handles.a = std::move(d);
      } else {
        if (info.paired && dims[0] != dims_a[0])
          invalid(path, where, "has " + std::to_string(dims[0]) + " pairs but A has " + std::to_string(dims_a[0]));
        info.count_b = static_cast<std::int64_t>(dims[0]);
        if (dims[1] != dims_a[1] || dims[2] != dims_a[2])
          invalid(path, where, "image size " + h5::dims_text(dims) + " differs from A " + h5::dims_text(dims_a));
        info.channels_b = static_cast<std::int64_t>(dims[3]);
        info.samples_b = {*type, ranges[1]};
        info.checksummed = info.checksummed && h5::has_filter(d.get(), H5Z_FILTER_FLETCHER32);
        info.one_image_per_chunk = info.one_image_per_chunk && h5::is_one_image_per_chunk(d.get(), dims);
        handles.b = std::move(d);
      }
    }
    // Every split feeds the same networks: one image size and one pair of channel counts.
    if (split != format::kTrain) {
      const SplitInfo& train = ds->splits_.at(format::kTrain);
      for (const Domain domain : {Domain::A, Domain::B})
        if (info.samples(domain).type != train.samples(domain).type)
          invalid(path, "/" + split + "/" + format::images_of(domain),
                  "holds " + to_string(info.samples(domain).type) + " but /train/" + format::images_of(domain) +
                      " holds " + to_string(train.samples(domain).type) +
                      "; a domain has one sample type in every split");
      if (info.height != train.height || info.width != train.width || info.channels_a != train.channels_a ||
          info.channels_b != train.channels_b)
        invalid(path, "/" + split,
                "pairs of " + std::to_string(info.height) + "x" + std::to_string(info.width) + " (A " +
                    std::to_string(info.channels_a) + " ch, B " + std::to_string(info.channels_b) +
                    " ch) differ from /train's " + std::to_string(train.height) + "x" + std::to_string(train.width) +
                    " (A " + std::to_string(train.channels_a) + " ch, B " + std::to_string(train.channels_b) +
                    " ch); every split must have the same image size and channels");
    }
    const std::string labels_path = "/" + split + "/" + format::kLabels;
    if (h5::link_exists(file, labels_path)) {
      if (!info.paired) invalid(path, labels_path, "an unpaired split has no labels (labels go with pairs)");
      h5::Handle d = h5::take_dataset(H5_CHECK(H5Dopen2(file, labels_path.c_str(), H5P_DEFAULT)));
      h5::Handle type = h5::take_type(H5_CHECK(H5Dget_type(d.get())));
      if (H5Tget_class(type.get()) != H5T_INTEGER || H5Tget_size(type.get()) != 4 ||
          H5Tget_sign(type.get()) != H5T_SGN_2)
        invalid(path, labels_path, "expected int32, got " + h5::describe_type(d.get()));
      const auto dims = h5::dataset_dims(d.get());
      if (dims.size() != 1 || static_cast<std::int64_t>(dims[0]) != info.count)
        invalid(path, labels_path, "expected shape [" + std::to_string(info.count) + "], got " + h5::dims_text(dims));
      info.has_labels = true;
      handles.labels = std::move(d);
    }
    const auto open_names = [&](const char* name, std::int64_t count, size_t* name_bytes) {
      const std::string names_path = "/" + split + "/" + name;
      h5::Handle d = h5::take_dataset(H5_CHECK(H5Dopen2(file, names_path.c_str(), H5P_DEFAULT)));
      h5::Handle type = h5::take_type(H5_CHECK(H5Dget_type(d.get())));
      const bool is_string = H5Tget_class(type.get()) == H5T_STRING;
      const bool variable = is_string && H5_CHECK(H5Tis_variable_str(type.get())) > 0;
      if (attrs.version == 1 && !variable) invalid(path, names_path, "expected variable-length strings (format 1)");
      if (attrs.version >= 2) {
        if (!is_string || variable)
          invalid(path, names_path, "expected fixed-length strings (format 2 stores no variable-length data)");
        *name_bytes = H5Tget_size(type.get());
        if (*name_bytes < 1 || *name_bytes > static_cast<size_t>(format::kMaxNameBytes))
          invalid(
              path, names_path,
              "string size " + std::to_string(*name_bytes) + " outside 1.." + std::to_string(format::kMaxNameBytes));
      }
      const auto dims = h5::dataset_dims(d.get());
      if (dims.size() != 1 || static_cast<std::int64_t>(dims[0]) != count)
        invalid(path, names_path, "expected shape [" + std::to_string(count) + "], got " + h5::dims_text(dims));
      return d;
    };
    if (h5::link_exists(file, "/" + split + "/" + format::kNames)) {
      handles.names = open_names(format::kNames, info.count, &handles.name_bytes);
      info.has_names = true;
    }
    if (h5::link_exists(file, "/" + split + "/" + format::kNamesB)) {
      if (info.paired)
        invalid(path, "/" + split + "/" + format::kNamesB, "only an unpaired split has names of B apart");
      handles.names_b = open_names(format::kNamesB, info.count_b, &handles.name_bytes_b);
      info.has_names_b = true;
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

namespace {
// "4 pairs (indices 0..3)" / "4 images (…)": what a read names in its errors.
std::string describe_rows(const std::vector<std::int64_t>& unique, bool paired) {
  if (unique.empty()) return std::string();
  return std::to_string(unique.size()) + (paired ? " pairs" : " images") + " (indices " +
         std::to_string(unique.front()) + ".." + std::to_string(unique.back()) + ")";
}

// `rows` read in sorted order, put back in the order the indices were asked for.
torch::Tensor in_requested_order(torch::Tensor rows, const std::vector<std::int64_t>& indices,
                                 const std::vector<std::int64_t>& unique, const std::vector<std::int64_t>& positions) {
  const bool in_order = indices.size() == unique.size() && std::equal(indices.begin(), indices.end(), unique.begin());
  return in_order ? rows : rows.index_select(0, torch::tensor(positions, torch::kInt64));
}
}  // namespace

torch::Tensor PairedDataset::read_images(const std::string& split_name, Domain domain,
                                         const std::vector<std::int64_t>& indices) const {
  const SplitInfo& info = split(split_name);
  const SplitHandles& handles = impl_->handles.at(split_name);
  const std::string where = path_ + ": /" + split_name + "/" + format::images_of(domain);
  std::vector<std::int64_t> positions;
  const auto unique = sorted_unique_checked(indices, info.images(domain), where, &positions);
  const auto n = static_cast<std::int64_t>(unique.size());
  const std::string rows = describe_rows(unique, info.paired);
  const SampleType type = info.samples(domain).type;
  torch::Tensor images = allocating(n * info.image_bytes(domain), where + ": " + rows, [&] {
    return torch::empty({n, info.height, info.width, info.channels(domain)}, tensor_type(type));
  });
  // HDF5 converts on read: uint16 into int32 (See Note [uint16 in memory]), and either byte order.
  const hid_t memory_type = h5::memory_type(type);
  // Failed reads (a damaged chunk, a checksum mismatch, an I/O error) name file and dataset.
  if (n > 0) {
    try {
      h5::read_rows((domain == Domain::A ? handles.a : handles.b).get(), memory_type, h5::contiguous_runs(unique),
                    images.data_ptr(), static_cast<size_t>(info.image_bytes(domain)));
    } catch (const Error& e) {
      throw Error(where + ": cannot read " + rows + ": " + e.what());
    }
  }
  // Note [non-finite data stops a run]: one NaN pixel turns every loss and score it touches into
  // NaN, and a run would go on "training" to a "best" model of NaN. Float data is checked as it
  // is read (caches, streams, validation, evaluate and translate all read here), naming the pair
  // and the pixel; `inspect --check` lists every such value.
  if (refuse_non_finite_ && !is_integer(type))
    if (const auto bad = first_non_finite(images))
      throw Error(where + ": " + (info.paired ? "pair " : "image ") +
                  std::to_string(unique[static_cast<size_t>(bad->image)]) + " holds " + bad->describe() +
                  ": float data must be finite (pix2pix inspect --check " + path_ + " lists every such value)");
  return in_requested_order(images, indices, unique, positions);
}

PairBatch PairedDataset::read(const std::string& split_name, const std::vector<std::int64_t>& indices) const {
  const SplitInfo& info = split(split_name);
  if (!info.paired)
    throw Error(path_ + ": /" + split_name + ": is unpaired (its A and B images are not pairs); read them apart");
  PairBatch batch;
  batch.a = read_images(split_name, Domain::A, indices);
  batch.b = read_images(split_name, Domain::B, indices);
  if (info.has_labels && !indices.empty()) {
    const std::string where = path_ + ": /" + split_name + "/" + format::kLabels;
    std::vector<std::int64_t> positions;
    const auto unique = sorted_unique_checked(indices, info.count, where, &positions);
    torch::Tensor labels = torch::empty({static_cast<std::int64_t>(unique.size())}, torch::kInt32);
    try {
      h5::read_rows(impl_->handles.at(split_name).labels.get(), H5T_NATIVE_INT32, h5::contiguous_runs(unique),
                    labels.data_ptr(), 4);
    } catch (const Error& e) {
      throw Error(where + ": cannot read " + describe_rows(unique, true) + ": " + e.what());
    }
    batch.labels = in_requested_order(labels, indices, unique, positions);
  } else if (info.has_labels) {
    batch.labels = torch::empty({0}, torch::kInt32);
  }
  return batch;
}

torch::Tensor PairedDataset::read_labels(const std::string& split_name) const {
  const SplitInfo& info = split(split_name);
  const std::string where = path_ + ": /" + split_name + "/" + format::kLabels;
  if (!info.has_labels) throw Error(where + ": the split has no labels (pix2pix prepare --labels adds them)");
  torch::Tensor labels = allocating(info.count * 4, where, [&] { return torch::empty({info.count}, torch::kInt32); });
  if (info.count == 0) return labels;
  try {
    h5::read_rows(impl_->handles.at(split_name).labels.get(), H5T_NATIVE_INT32,
                  {h5::Run{0, static_cast<hsize_t>(info.count)}}, labels.data_ptr(), 4);
  } catch (const Error& e) {
    throw Error(where + ": cannot read " + std::to_string(info.count) + " labels: " + e.what());
  }
  return labels;
}

std::pair<std::int32_t, std::int32_t> PairedDataset::label_range(const std::string& split_name) const {
  const torch::Tensor labels = read_labels(split_name);
  if (labels.numel() == 0) throw Error(path_ + ": the " + split_name + " split is empty");
  const std::pair<std::int32_t, std::int32_t> range{labels.min().item<std::int32_t>(),
                                                    labels.max().item<std::int32_t>()};
  if (range.second >= format::kMaxClasses)
    throw Error(path_ + ": /" + split_name + "/labels: label " + std::to_string(range.second) +
                " is beyond the format's limit of " + std::to_string(format::kMaxClasses) + " classes");
  return range;
}

std::vector<std::string> PairedDataset::read_names(const std::string& split_name,
                                                   const std::vector<std::int64_t>& indices, Domain domain) const {
  const SplitInfo& info = split(split_name);
  std::vector<std::string> names(indices.size());
  const bool of_b = domain == Domain::B && !info.paired;
  if (!(of_b ? info.has_names_b : info.has_names) || indices.empty()) return names;
  std::vector<std::int64_t> positions;
  const auto unique = sorted_unique_checked(indices, info.images(domain), path_ + ": /" + split_name, &positions);
  const std::string where = "/" + split_name + "/" + (of_b ? format::kNamesB : format::kNames);
  std::vector<std::string> texts;
  if (attributes_.version == 1) {
    texts = h5::read_variable_strings_isolated(path_, where, unique);
  } else {
    const SplitHandles& handles = impl_->handles.at(split_name);
    const size_t bytes = of_b ? handles.name_bytes_b : handles.name_bytes;
    h5::Handle type = h5::fixed_string_type(bytes);
    std::vector<char> raw = allocating(static_cast<std::int64_t>(unique.size() * bytes), path_ + ": " + where,
                                       [&] { return std::vector<char>(unique.size() * bytes); });
    try {
      h5::read_rows((of_b ? handles.names_b : handles.names).get(), type.get(), h5::contiguous_runs(unique), raw.data(),
                    bytes);
    } catch (const Error& e) {
      throw Error(path_ + ": " + where + ": cannot read " + std::to_string(unique.size()) + " names: " + e.what());
    }
    for (size_t i = 0; i < unique.size(); ++i) texts.push_back(h5::fixed_string_text(raw.data() + i * bytes, bytes));
  }
  for (size_t i = 0; i < indices.size(); ++i) names[i] = texts[static_cast<size_t>(positions[i])];
  return names;
}

}  // namespace pix2pix::data
