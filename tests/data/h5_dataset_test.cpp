// Writer → PairedDataset round trip, hyperslab-union reads, and every kind of broken file
// (crafted here with the raw HDF5 API) rejected with a message that names the problem.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <fstream>
#include <functional>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/h5_writer.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using pix2pix::fixtures::TempDir;

namespace {

torch::Tensor image_tensor(int size, int channels, int id) {
  const cv::Mat m = fixtures::pattern_image(size, size, channels, id);
  return torch::from_blob(m.data, {size, size, channels}, torch::kUInt8).clone();
}

// What a crafted file holds in one split.
struct CraftedDataset {
  std::string name;
  hid_t type;
  std::vector<hsize_t> dims;
};

void craft(const std::string& path, const std::vector<std::string>& groups,
           const std::vector<std::pair<std::string, CraftedDataset>>& datasets, const char* format_attr = "pix2pix-h5",
           int version = 1) {
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  const hid_t scalar = H5Screate(H5S_SCALAR);
  if (format_attr != nullptr) {
    const hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, H5T_VARIABLE);
    const hid_t attr = H5Acreate2(file, "format", str, scalar, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, str, &format_attr);
    H5Aclose(attr);
    H5Tclose(str);
  }
  const hid_t vattr = H5Acreate2(file, "version", H5T_STD_I32LE, scalar, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(vattr, H5T_NATIVE_INT, &version);
  H5Aclose(vattr);
  H5Sclose(scalar);
  for (const auto& g : groups) H5Gclose(H5Gcreate2(file, g.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  for (const auto& [group, d] : datasets) {
    const hid_t space = H5Screate_simple(static_cast<int>(d.dims.size()), d.dims.data(), nullptr);
    const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
    std::vector<hsize_t> chunk(d.dims.size(), 1);
    H5Pset_chunk(plist, static_cast<int>(chunk.size()), chunk.data());  // metadata only: nothing allocated
    const std::string where = group + "/" + d.name;
    const hid_t ds = H5Dcreate2(file, where.c_str(), d.type, space, H5P_DEFAULT, plist, H5P_DEFAULT);
    ASSERT_GE(ds, 0) << where;
    H5Dclose(ds);
    H5Pclose(plist);
    H5Sclose(space);
  }
  H5Fclose(file);
}

std::vector<std::pair<std::string, CraftedDataset>> valid_split(const std::string& g, hsize_t n = 4) {
  return {{g, {"A", H5T_STD_U8LE, {n, 8, 8, 3}}}, {g, {"B", H5T_STD_U8LE, {n, 8, 8, 1}}}};
}

void expect_open_error(const std::string& path, const std::string& needle) {
  try {
    data::PairedDataset::open(path);
    FAIL() << path << " was accepted; expected an error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << "message does not name the file: " << e.what();
  }
}

}  // namespace

TEST(PairedDataset, RoundTripKeepsPixelsLabelsNamesAndAttributes) {
  TempDir dir;
  fixtures::make_pattern_dataset(dir / "d.h5", 10, 3, 8, 3, 1, /*labels=*/true);
  const auto ds = data::PairedDataset::open(dir / "d.h5");
  EXPECT_EQ(ds->attributes().format, "pix2pix-h5");
  EXPECT_EQ(ds->attributes().version, 1);
  EXPECT_EQ(ds->attributes().source, "test patterns");
  EXPECT_EQ(ds->split_names(), (std::vector<std::string>{"train", "val"}));
  const auto& train = ds->split("train");
  EXPECT_EQ(train.count, 10);
  EXPECT_EQ(train.height, 8);
  EXPECT_EQ(train.channels_a, 3);
  EXPECT_EQ(train.channels_b, 1);
  EXPECT_TRUE(train.has_labels);
  EXPECT_TRUE(train.one_image_per_chunk);
  const auto batch = ds->read("val", {2, 0});
  EXPECT_TRUE(torch::equal(batch.a[0], image_tensor(8, 3, 12)));
  EXPECT_TRUE(torch::equal(batch.a[1], image_tensor(8, 3, 10)));
  EXPECT_TRUE(torch::equal(batch.b[0], image_tensor(8, 1, 1012)));
  EXPECT_EQ(batch.labels[0].item<int>(), 2);
  EXPECT_EQ(ds->read_names("val", {2, 0}), (std::vector<std::string>{"pair12", "pair10"}));
  EXPECT_THROW(ds->split("test"), Error);
}

TEST(PairedDataset, AnyIndexOrderWithRepeatsEqualsSingleReads) {
  TempDir dir;
  // 5000 pairs read as 2500 separate runs: more runs than one hyperslab union takes.
  fixtures::make_pattern_dataset(dir / "d.h5", 5000, 2, 2, 1, 1);
  const auto ds = data::PairedDataset::open(dir / "d.h5");
  std::vector<std::int64_t> every_other;
  for (std::int64_t i = 4998; i >= 0; i -= 2) every_other.push_back(i);
  every_other.push_back(4998);  // a repeat
  every_other.push_back(7);
  const auto many = ds->read("train", every_other);
  ASSERT_EQ(many.a.size(0), static_cast<std::int64_t>(every_other.size()));
  for (size_t k = 0; k < every_other.size(); k += 97) {
    const auto one = ds->read("train", {every_other[k]});
    EXPECT_TRUE(torch::equal(many.a[static_cast<std::int64_t>(k)], one.a[0])) << "index " << every_other[k];
    EXPECT_TRUE(torch::equal(many.b[static_cast<std::int64_t>(k)], one.b[0])) << "index " << every_other[k];
  }
  EXPECT_TRUE(torch::equal(many.a[-2], ds->read("train", {4998}).a[0]));
  EXPECT_THROW(ds->read("train", {5000}), Error);
  EXPECT_THROW(ds->read("train", {-1}), Error);
}

TEST(PairedDataset, RejectsMissingAndNonHdf5Files) {
  TempDir dir;
  expect_open_error(dir / "absent.h5", "no such file");
  std::ofstream(dir / "text.h5") << "just some text, not HDF5\n";
  expect_open_error(dir / "text.h5", "not an HDF5 file");
}

TEST(PairedDataset, RejectsFilesThatBreakTheFormat) {
  TempDir dir;
  auto both = valid_split("train");
  for (auto& d : valid_split("val")) both.push_back(d);

  craft(dir / "ok.h5", {"train", "val"}, both);
  EXPECT_NO_THROW(data::PairedDataset::open(dir / "ok.h5"));

  craft(dir / "noformat.h5", {"train", "val"}, both, nullptr);
  expect_open_error(dir / "noformat.h5", "'format'");
  craft(dir / "version.h5", {"train", "val"}, both, "pix2pix-h5", 7);
  expect_open_error(dir / "version.h5", "version");

  craft(dir / "noval.h5", {"train"}, valid_split("train"));
  expect_open_error(dir / "noval.h5", "/val: required split is missing");

  auto no_b = valid_split("val");
  no_b.push_back(valid_split("train")[0]);
  craft(dir / "nob.h5", {"train", "val"}, no_b);
  expect_open_error(dir / "nob.h5", "/train/B: dataset is missing");

  auto wrong_type = both;
  wrong_type[0].second.type = H5T_IEEE_F32LE;
  craft(dir / "float.h5", {"train", "val"}, wrong_type);
  expect_open_error(dir / "float.h5", "expected uint8, got float32");

  auto mismatch = both;
  mismatch[1].second.dims[0] = 5;
  craft(dir / "count.h5", {"train", "val"}, mismatch);
  expect_open_error(dir / "count.h5", "has 5 pairs but A has 4");

  auto absurd = both;
  absurd[0].second.dims = {4, 100000, 100000, 3};
  absurd[1].second.dims = {4, 100000, 100000, 1};
  craft(dir / "absurd.h5", {"train", "val"}, absurd);
  expect_open_error(dir / "absurd.h5", "outside 1..16384");

  auto huge_count = both;
  huge_count[0].second.dims[0] = huge_count[1].second.dims[0] = 1ULL << 40;
  craft(dir / "huge.h5", {"train", "val"}, huge_count);
  expect_open_error(dir / "huge.h5", "pair count");

  auto channels = both;
  channels[0].second.dims[3] = 2;
  craft(dir / "ch.h5", {"train", "val"}, channels);
  expect_open_error(dir / "ch.h5", "channels must be 1 or 3");

  auto rank3 = both;
  rank3[0].second.dims = {4, 8, 8};
  craft(dir / "rank.h5", {"train", "val"}, rank3);
  expect_open_error(dir / "rank.h5", "expected shape [N, H, W, C]");

  auto labels = both;
  labels.push_back({"train", {"labels", H5T_IEEE_F64LE, {4}}});
  craft(dir / "labels.h5", {"train", "val"}, labels);
  expect_open_error(dir / "labels.h5", "/train/labels: expected int32");

  const hid_t fixed_string = H5Tcopy(H5T_C_S1);
  H5Tset_size(fixed_string, 8);
  auto names = both;
  names.push_back({"val", {"names", fixed_string, {4}}});
  craft(dir / "names.h5", {"train", "val"}, names);
  expect_open_error(dir / "names.h5", "/val/names: expected variable-length strings");
  H5Tclose(fixed_string);
}

TEST(PairedFileWriter, RefusesAnUnwritablePath) {
  TempDir dir;
  EXPECT_THROW(data::PairedFileWriter(dir / "no/such/folder/x.h5", 0), Error);
  EXPECT_THROW(data::PairedFileWriter(dir / "x.h5", 12), Error);
}
