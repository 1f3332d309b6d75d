// prepare end to end through the library: every source kind, split handling, labels, threads,
// and the bad inputs that must fail (or be skipped) with a message naming the culprit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/dataset_check.hpp"
#include "pix2pix/data/idx_reader.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/data/prepare.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;

namespace {

torch::Tensor to_tensor(const cv::Mat& m) {
  return torch::from_blob(m.data, {m.rows, m.cols, m.channels()}, torch::kUInt8).clone();
}

data::PrepareOptions options_for(data::SourceKind kind, const std::string& dir, const std::string& out) {
  data::PrepareOptions o;
  o.source.kind = kind;
  o.source.dir = dir;
  o.out = out;
  return o;
}

std::string error_of(const data::PrepareOptions& o) {
  try {
    data::run_prepare(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Prepare, AlignedFolderKeepsSplitsAndHalves) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "ab/train", 6, 12, 12, 3, /*aligned=*/true, 0);
  fixtures::write_pattern_folder(dir / "ab/val", 2, 12, 12, 3, true, 100);
  fixtures::write_pattern_folder(dir / "ab/test", 3, 12, 12, 3, true, 200);
  const auto summary = data::run_prepare(options_for(data::SourceKind::aligned, dir / "ab", dir / "out.h5"));
  EXPECT_EQ(summary.splits.at("train").pairs, 6);
  EXPECT_EQ(summary.splits.at("val").pairs, 2);
  EXPECT_EQ(summary.splits.at("test").pairs, 3);
  const auto ds = data::PairedDataset::open(dir / "out.h5");
  EXPECT_EQ(ds->split("val").width, 12);
  const auto pair = ds->read("val", {1});
  EXPECT_TRUE(torch::equal(pair.a[0], to_tensor(fixtures::pattern_image(12, 12, 3, 101))));
  EXPECT_TRUE(torch::equal(pair.b[0], to_tensor(fixtures::pattern_image(12, 12, 3, 1101))));
  EXPECT_EQ(ds->read_names("test", {0})[0], "img200.png");
  EXPECT_TRUE(data::check_dataset(*ds).empty());
  EXPECT_FALSE(fs::exists(dir / ".out.h5.tmp-" + std::to_string(getpid()))) << "temporary file left behind";
}

TEST(Prepare, ValidationSplitIsCarvedDeterministicallyBySeed) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "ab", 40, 8, 8, 1, true);
  auto o = options_for(data::SourceKind::aligned, dir / "ab", dir / "a.h5");
  o.val_fraction = 0.25;
  o.seed = 1;
  data::run_prepare(o);
  o.out = dir / "b.h5";
  data::run_prepare(o);
  o.out = dir / "c.h5";
  o.seed = 2;
  data::run_prepare(o);
  auto val_names = [](const std::string& path) {
    const auto ds = data::PairedDataset::open(path);
    std::vector<std::int64_t> all(static_cast<size_t>(ds->split("val").count));
    std::iota(all.begin(), all.end(), 0);
    return ds->read_names("val", all);
  };
  EXPECT_EQ(val_names(dir / "a.h5").size(), 10u);
  EXPECT_EQ(data::PairedDataset::open(dir / "a.h5")->split("train").count, 30);
  EXPECT_EQ(val_names(dir / "a.h5"), val_names(dir / "b.h5"));
  EXPECT_NE(val_names(dir / "a.h5"), val_names(dir / "c.h5"));
}

TEST(Prepare, PairedFoldersMatchByNameAndReportTheUnmatched) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "A", 5, 8, 8, 3, false, 0);
  fixtures::write_pattern_folder(dir / "B", 4, 8, 8, 1, false, 1);  // img001..img004
  auto o = options_for(data::SourceKind::paired, dir / "A", dir / "out.h5");
  o.source.dir_b = dir / "B";
  o.channels_b = 1;
  o.val_fraction = 0.25;
  const auto summary = data::run_prepare(o);
  EXPECT_EQ(summary.pairs(), 4);  // img001..img004
  ASSERT_EQ(summary.unmatched.size(), 1u);
  EXPECT_NE(summary.unmatched[0].find("img000.png"), std::string::npos);
  const auto ds = data::PairedDataset::open(dir / "out.h5");
  EXPECT_EQ(ds->split("train").channels_a, 3);
  EXPECT_EQ(ds->split("train").channels_b, 1);
  for (const std::string split : {"train", "val"}) {
    const auto names = ds->read_names(split, {0});
    const int id = std::stoi(names[0].substr(3, 3));
    const auto pair = ds->read(split, {0});
    EXPECT_TRUE(torch::equal(pair.a[0], to_tensor(fixtures::pattern_image(8, 8, 3, id))));
    EXPECT_TRUE(torch::equal(pair.b[0], to_tensor(fixtures::pattern_image(8, 8, 1, id))));
  }
}

TEST(Prepare, ImageFolderLabelsComeFromClassFolders) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "img/cat", 4, 8, 8, 3, false, 0);
  fixtures::write_pattern_folder(dir / "img/dog", 4, 8, 8, 3, false, 10);
  auto o = options_for(data::SourceKind::images, dir / "img", dir / "out.h5");
  o.derive_enabled = true;
  o.derive = data::DeriveMode::gray;
  o.source.labels = true;
  o.val_fraction = 0.25;
  data::run_prepare(o);
  const auto ds = data::PairedDataset::open(dir / "out.h5");
  EXPECT_EQ(ds->split("train").channels_a, 1);  // gray derives a grey A from a colour B
  EXPECT_EQ(ds->split("train").channels_b, 3);
  for (std::int64_t i = 0; i < ds->split("train").count; ++i) {
    const auto name = ds->read_names("train", {i})[0];
    EXPECT_EQ(ds->read("train", {i}).labels[0].item<int>(), name.rfind("cat/", 0) == 0 ? 0 : 1) << name;
  }
  o.out = dir / "flat.h5";
  fixtures::write_pattern_folder(dir / "img", 1, 8, 8, 3, false, 50);  // an image outside any class folder
  EXPECT_NE(error_of(o).find("is not inside a class sub-folder"), std::string::npos);
}

TEST(Prepare, FashionMnistSubsetWithEveryDeriveModeAndLabels) {
  TempDir dir;
  const auto idx = data::read_idx_images(fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz"), 60);
  const auto labels = data::read_idx_labels(fixtures::fashion_mnist("t10k-labels-idx1-ubyte.gz"), 60);
  for (const char* mode : {"edges", "gray", "blur", "downsample", "noise", "mask"}) {
    auto o = options_for(data::SourceKind::images, "idx:" + fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz"),
                         dir / (std::string(mode) + ".h5"));
    o.derive_enabled = true;
    o.derive = data::parse_derive_mode(mode);
    o.source.limit = 60;
    o.source.labels = true;
    o.size = 32;
    o.compression = 4;
    const auto summary = data::run_prepare(o);
    EXPECT_EQ(summary.pairs(), 60) << mode;
    const auto ds = data::PairedDataset::open(o.out);
    EXPECT_EQ(ds->split("val").count, 6) << mode;
    EXPECT_EQ(ds->split("train").height, 32);
    EXPECT_EQ(ds->split("train").channels_a, 1);
    EXPECT_TRUE(ds->split("train").compressed);
    EXPECT_TRUE(data::check_dataset(*ds).empty()) << mode;
    // B is the resized original; its label is the IDX label of the named source image.
    const auto name = ds->read_names("val", {3})[0];
    const auto index = std::stoll(name.substr(name.find('#') + 1));
    EXPECT_EQ(ds->read("val", {3}).labels[0].item<int>(), labels[static_cast<size_t>(index)]) << name;
    const auto pair = ds->read("val", {3});
    // Grey of an already grey image is the image itself; every other mode must change it.
    EXPECT_EQ(torch::equal(pair.a, pair.b), std::string(mode) == "gray") << mode;
    (void)idx;
  }
}

TEST(Prepare, OutputIsIdenticalWhateverTheThreadCount) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "img", 150, 16, 16, 3);
  auto o = options_for(data::SourceKind::images, dir / "img", dir / "t1.h5");
  o.derive_enabled = true;
  o.derive = data::DeriveMode::noise;
  o.size = 12;
  o.threads = 1;
  data::run_prepare(o);
  o.threads = 3;
  o.out = dir / "t3.h5";
  data::run_prepare(o);
  const auto one = data::PairedDataset::open(dir / "t1.h5"), three = data::PairedDataset::open(dir / "t3.h5");
  for (const std::string split : {"train", "val"}) {
    std::vector<std::int64_t> all(static_cast<size_t>(one->split(split).count));
    std::iota(all.begin(), all.end(), 0);
    EXPECT_TRUE(torch::equal(one->read(split, all).a, three->read(split, all).a)) << split;
    EXPECT_EQ(one->read_names(split, all), three->read_names(split, all)) << split;
  }
}

TEST(Prepare, CorruptImagesAreSkippedAndCountedAgainstMaxBad) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "ab", 19, 8, 8, 3, true);
  std::ofstream(dir / "ab/zz-broken.png") << "\x89PNG but then nothing useful";
  auto o = options_for(data::SourceKind::aligned, dir / "ab", dir / "out.h5");
  o.max_bad = 0.1;
  const auto summary = data::run_prepare(o);
  EXPECT_EQ(summary.pairs(), 19);
  ASSERT_EQ(summary.skipped.size(), 1u);
  EXPECT_NE(summary.skipped[0].first.find("zz-broken.png"), std::string::npos);
  EXPECT_NE(data::format_summary(summary, o.out).find("zz-broken.png: cannot decode image"), std::string::npos);
  o.max_bad = 0.01;
  o.out = dir / "strict.h5";
  EXPECT_NE(error_of(o).find("more than --max-bad"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "strict.h5"));
}

TEST(Prepare, ImagesOfAnotherSizeAreSkippedWithoutSize) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "img", 20, 8, 8, 3);
  fixtures::write_pattern_folder(dir / "img", 1, 9, 9, 3, false, 99);
  auto o = options_for(data::SourceKind::images, dir / "img", dir / "out.h5");
  o.derive_enabled = true;
  o.derive = data::DeriveMode::blur;
  o.max_bad = 0.1;
  const auto summary = data::run_prepare(o);
  ASSERT_EQ(summary.skipped.size(), 1u);
  EXPECT_NE(summary.skipped[0].second.find("differs from 8x8"), std::string::npos);
  o.size = 8;
  o.out = dir / "sized.h5";
  EXPECT_EQ(data::run_prepare(o).pairs(), 21);
}

TEST(Prepare, BadSourcesFailWithTheirName) {
  TempDir dir;
  fs::create_directories(dir / "empty");
  EXPECT_NE(
      error_of(options_for(data::SourceKind::aligned, dir / "missing", dir / "o.h5")).find("missing: no such folder"),
      std::string::npos);
  EXPECT_NE(error_of(options_for(data::SourceKind::aligned, dir / "empty", dir / "o.h5")).find("no images found"),
            std::string::npos);
  fs::create_directories(dir / "bad");
  for (int i = 0; i < 3; ++i) std::ofstream(dir / ("bad/" + std::to_string(i) + ".png")) << "garbage";
  auto all_bad = options_for(data::SourceKind::aligned, dir / "bad", dir / "o.h5");
  all_bad.max_bad = 1.0;
  EXPECT_NE(error_of(all_bad).find("no usable pairs"), std::string::npos);
  auto no_derive = options_for(data::SourceKind::images, dir / "empty", dir / "o.h5");
  EXPECT_NE(error_of(no_derive).find("--derive"), std::string::npos);
  auto idx = options_for(data::SourceKind::images, "idx:" + (dir / "none.gz"), dir / "o.h5");
  idx.derive_enabled = true;
  EXPECT_NE(error_of(idx).find("none.gz: no such file"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "o.h5"));
}

TEST(Prepare, ExistingOutputIsKeptUnlessOverwrite) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "ab", 10, 8, 8, 3, true);
  std::ofstream(dir / "out.h5") << "precious";
  auto o = options_for(data::SourceKind::aligned, dir / "ab", dir / "out.h5");
  EXPECT_NE(error_of(o).find("file exists; pass --overwrite"), std::string::npos);
  std::ifstream kept(dir / "out.h5");
  std::string content;
  kept >> content;
  EXPECT_EQ(content, "precious");
  o.overwrite = true;
  EXPECT_EQ(data::run_prepare(o).pairs(), 10);
  EXPECT_NO_THROW(data::PairedDataset::open(dir / "out.h5"));
}

TEST(Prepare, UnwritableOutputIsAClearError) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "ab", 10, 8, 8, 3, true);
  EXPECT_NE(
      error_of(options_for(data::SourceKind::aligned, dir / "ab", dir / "no/such/dir/o.h5")).find("does not exist"),
      std::string::npos);
  // /proc refuses new files even to root, for whom permission bits do not apply.
  const std::string message = error_of(options_for(data::SourceKind::aligned, dir / "ab", "/proc/pix2pix-test.h5"));
  EXPECT_NE(message.find("/proc"), std::string::npos) << message;
  EXPECT_FALSE(message.empty());
}

TEST(Prepare, PairedFoldersTakeLabelsFromClassFoldersOfA) {
  TempDir dir;
  for (const char* side : {"A", "B"}) {
    fixtures::write_pattern_folder(dir / (std::string(side) + "/shoe"), 3, 8, 8, 3, false, 0);
    fixtures::write_pattern_folder(dir / (std::string(side) + "/bag"), 3, 8, 8, 3, false, 10);
  }
  auto o = options_for(data::SourceKind::paired, dir / "A", dir / "out.h5");
  o.source.dir_b = dir / "B";
  o.source.labels = true;
  o.val_fraction = 0.34;
  data::run_prepare(o);
  const auto ds = data::PairedDataset::open(dir / "out.h5");
  for (const std::string split : {"train", "val"})
    for (std::int64_t i = 0; i < ds->split(split).count; ++i) {
      const auto name = ds->read_names(split, {i})[0];
      EXPECT_EQ(ds->read(split, {i}).labels[0].item<int>(), name.rfind("bag/", 0) == 0 ? 0 : 1) << name;
    }
}

TEST(Prepare, DerivationParametersAreChecked) {
  TempDir dir;
  fixtures::write_pattern_folder(dir / "img", 10, 8, 8, 1);
  auto o = options_for(data::SourceKind::images, dir / "img", dir / "o.h5");
  o.derive_enabled = true;
  o.derive = data::DeriveMode::blur;
  o.derive_params.blur_sigma = 0;
  EXPECT_NE(error_of(o).find("--blur-sigma"), std::string::npos);
  o.derive_params = {};
  o.derive_params.mask_fraction = 1.5;
  EXPECT_NE(error_of(o).find("--mask-fraction"), std::string::npos);
  o.derive_params = {};
  o.derive_params.canny_low = 200;
  EXPECT_NE(error_of(o).find("--canny-low"), std::string::npos);
}

TEST(Prepare, TestSourceBecomesTheTestSplit) {
  TempDir dir;
  // IDX: Fashion-MNIST's training images, and its t10k images as the test split.
  auto o = options_for(data::SourceKind::images, "idx:" + fixtures::fashion_mnist("train-images-idx3-ubyte.gz"),
                       dir / "idx.h5");
  o.source.test_dir = "idx:" + fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz");
  o.derive_enabled = true;
  o.derive = data::DeriveMode::gray;
  o.source.limit = 30;
  o.source.labels = true;
  data::run_prepare(o);
  const auto ds = data::PairedDataset::open(o.out);
  EXPECT_EQ(ds->split("train").count + ds->split("val").count, 30);
  ASSERT_TRUE(ds->has_split("test"));
  ASSERT_EQ(ds->split("test").count, 30);
  const auto t10k = data::read_idx_images(fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz"), 30);
  const auto t10k_labels = data::read_idx_labels(fixtures::fashion_mnist("t10k-labels-idx1-ubyte.gz"), 30);
  for (std::int64_t i : {0, 17, 29}) {
    EXPECT_EQ(ds->read_names("test", {i})[0], "t10k-images-idx3-ubyte.gz#" + std::to_string(i));
    const auto b = ds->read("test", {i});
    const auto expected =
        torch::from_blob(const_cast<std::uint8_t*>(t10k.pixels.data()) + i * 28 * 28, {28, 28}, torch::kUInt8);
    EXPECT_TRUE(torch::equal(b.b.reshape({28, 28}), expected)) << "test pair " << i << " is not t10k image " << i;
    EXPECT_EQ(b.labels[0].item<int>(), t10k_labels[static_cast<size_t>(i)]);
  }

  // Folders: test labels follow the main source's class names.
  fixtures::write_pattern_folder(dir / "img/cat", 4, 8, 8, 3, false, 0);
  fixtures::write_pattern_folder(dir / "img/dog", 4, 8, 8, 3, false, 10);
  fixtures::write_pattern_folder(dir / "held/dog", 3, 8, 8, 3, false, 20);
  auto f = options_for(data::SourceKind::images, dir / "img", dir / "folders.h5");
  f.source.test_dir = dir / "held";
  f.derive_enabled = true;
  f.derive = data::DeriveMode::gray;
  f.source.labels = true;
  data::run_prepare(f);
  const auto fs_ds = data::PairedDataset::open(f.out);
  ASSERT_EQ(fs_ds->split("test").count, 3);
  for (std::int64_t i = 0; i < 3; ++i) EXPECT_EQ(fs_ds->read("test", {i}).labels[0].item<int>(), 1) << "dog is 1";

  // A source of another kind, a second test split, a test source with splits of its own.
  f.out = dir / "bad.h5";
  f.source.test_dir = "idx:" + fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz");
  EXPECT_NE(error_of(f).find("must be the same kind of source"), std::string::npos) << error_of(f);
  fixtures::write_pattern_folder(dir / "split/train", 4, 8, 8, 3, false, 0);
  fixtures::write_pattern_folder(dir / "split/test", 2, 8, 8, 3, false, 30);
  f.source.dir = dir / "split";
  f.source.labels = false;
  f.source.test_dir = dir / "held";
  EXPECT_NE(error_of(f).find("has a test sub-folder already"), std::string::npos) << error_of(f);
  f.source.dir = dir / "img";
  f.source.test_dir = dir / "split";
  EXPECT_NE(error_of(f).find("give one folder of images"), std::string::npos) << error_of(f);
}
