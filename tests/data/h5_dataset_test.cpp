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
#include "support/h5_craft.hpp"

using namespace pix2pix;
using pix2pix::fixtures::TempDir;

namespace {

torch::Tensor image_tensor(int size, int channels, int id) {
  const cv::Mat m = fixtures::pattern_image(size, size, channels, id);
  return torch::from_blob(m.data, {size, size, channels}, torch::kUInt8).clone();
}

using fixtures::craft_h5;
using fixtures::crafted_split;

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
  EXPECT_EQ(ds->attributes().version, 2);
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
  auto both = crafted_split("train");
  for (auto& d : crafted_split("val")) both.push_back(d);

  craft_h5(dir / "ok.h5", {"train", "val"}, both);
  EXPECT_NO_THROW(data::PairedDataset::open(dir / "ok.h5"));

  craft_h5(dir / "noformat.h5", {"train", "val"}, both, nullptr);
  expect_open_error(dir / "noformat.h5", "'format'");
  craft_h5(dir / "version.h5", {"train", "val"}, both, "pix2pix-h5", 7);
  expect_open_error(dir / "version.h5", "is 7, this build reads versions 1 to 4");

  craft_h5(dir / "noval.h5", {"train"}, crafted_split("train"));
  expect_open_error(dir / "noval.h5", "/val: required split is missing");

  auto no_b = crafted_split("val");
  no_b.push_back(crafted_split("train")[0]);
  craft_h5(dir / "nob.h5", {"train", "val"}, no_b);
  expect_open_error(dir / "nob.h5", "/train/B: dataset is missing");

  auto wrong_type = both;
  wrong_type[0].second.type = H5T_IEEE_F32LE;
  craft_h5(dir / "float.h5", {"train", "val"}, wrong_type);
  expect_open_error(dir / "float.h5", "expected uint8, got float32");

  auto mismatch = both;
  mismatch[1].second.dims[0] = 5;
  craft_h5(dir / "count.h5", {"train", "val"}, mismatch);
  expect_open_error(dir / "count.h5", "has 5 pairs but A has 4");

  auto absurd = both;
  absurd[0].second.dims = {4, 100000, 100000, 3};
  absurd[1].second.dims = {4, 100000, 100000, 1};
  absurd[0].second.stored = absurd[1].second.stored = false;
  craft_h5(dir / "absurd.h5", {"train", "val"}, absurd);
  expect_open_error(dir / "absurd.h5", "outside 1..16384");

  auto huge_count = both;
  huge_count[0].second.dims[0] = huge_count[1].second.dims[0] = 1ULL << 40;
  huge_count[0].second.stored = huge_count[1].second.stored = false;
  craft_h5(dir / "huge.h5", {"train", "val"}, huge_count);
  expect_open_error(dir / "huge.h5", "pair count");

  auto channels = both;
  channels[0].second.dims[3] = 2;
  craft_h5(dir / "ch.h5", {"train", "val"}, channels);
  expect_open_error(dir / "ch.h5", "channels must be 1 or 3");

  auto rank3 = both;
  rank3[0].second.dims = {4, 8, 8};
  craft_h5(dir / "rank.h5", {"train", "val"}, rank3);
  expect_open_error(dir / "rank.h5", "expected shape [N, H, W, C]");

  auto labels = both;
  labels.push_back({"train", {"labels", H5T_IEEE_F64LE, {4}}});
  craft_h5(dir / "labels.h5", {"train", "val"}, labels);
  expect_open_error(dir / "labels.h5", "/train/labels: expected int32");

  // Names: fixed-length in format 2 (no global heap), variable-length in format 1.
  const hid_t fixed_string = H5Tcopy(H5T_C_S1);
  H5Tset_size(fixed_string, 8);
  const hid_t variable_string = H5Tcopy(H5T_C_S1);
  H5Tset_size(variable_string, H5T_VARIABLE);
  auto fixed_names = both, variable_names = both;
  fixed_names.push_back({"val", {"names", fixed_string, {4}}});
  variable_names.push_back({"val", {"names", variable_string, {4}}});
  craft_h5(dir / "names2.h5", {"train", "val"}, variable_names, "pix2pix-h5", 2);
  expect_open_error(dir / "names2.h5", "/val/names: expected fixed-length strings");
  craft_h5(dir / "names1.h5", {"train", "val"}, fixed_names, "pix2pix-h5", 1);
  expect_open_error(dir / "names1.h5", "/val/names: expected variable-length strings (format 1)");
  craft_h5(dir / "ok2.h5", {"train", "val"}, fixed_names, "pix2pix-h5", 2);
  EXPECT_NO_THROW(data::PairedDataset::open(dir / "ok2.h5"));
  H5Tclose(fixed_string);
  H5Tclose(variable_string);
}

TEST(PairedFileWriter, RefusesAnUnwritablePath) {
  TempDir dir;
  EXPECT_THROW(data::PairedFileWriter(dir / "no/such/folder/x.h5", 0), Error);
  EXPECT_THROW(data::PairedFileWriter(dir / "x.h5", 12), Error);
}
