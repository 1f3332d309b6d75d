// Data beyond 8 bits (format version 4): uint16 and float32 domains of 1 to 16 channels with their
// value ranges, through the writer, the reader, prepare, the loader and validation's scores; and
// the bad inputs that must be refused by name.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <opencv2/imgcodecs.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/data/dataset_check.hpp"
#include "pix2pix/data/h5_writer.hpp"
#include "pix2pix/data/npy_file.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/data/prepare.hpp"
#include "pix2pix/data/samples.hpp"
#include "pix2pix/infer/evaluation.hpp"
#include "pix2pix/infer/sample_images.hpp"
#include "pix2pix/metrics/image_metrics.hpp"
#include "support/fixtures.hpp"
#include "support/h5_craft.hpp"

using namespace pix2pix;
using data::DomainSamples;
using data::SampleType;
using data::ValueRange;
using fixtures::contains;
using fixtures::TempDir;
namespace fs = std::filesystem;

namespace {

using pix2pix::fixtures::kTiff;

// A 16-bit grey image whose values span most of [0, 65535] and encode `id`.
cv::Mat deep_image(int side, int id) {
  cv::Mat image(side, side, CV_16UC1);
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x)
      image.at<std::uint16_t>(y, x) = static_cast<std::uint16_t>((y * 4099 + x * 257 + id * 911) % 65536);
  return image;
}

torch::Tensor as_int32(const cv::Mat& image) {  // [H, W, C] as read_images gives uint16 data
  cv::Mat wide;
  image.convertTo(wide, CV_32S);
  return torch::from_blob(wide.data, {wide.rows, wide.cols, wide.channels()}, torch::kInt32).clone();
}

// Paired folders A/{train,val} of 16-bit PNGs and B/{train,val} of 8-bit colour ones.
void write_deep_pairs(const TempDir& dir, int train, int val, int side) {
  for (const auto& [split, count, first] : {std::tuple{"train", train, 0}, std::tuple{"val", val, 100}}) {
    fs::create_directories(dir / ("A/" + std::string(split)));
    for (int i = 0; i < count; ++i) {
      const std::string name = "/img" + std::to_string(first + i) + ".png";
      cv::imwrite(dir / ("A/" + std::string(split) + name), deep_image(side, first + i));
      fixtures::write_png(dir / ("B/" + std::string(split) + name), fixtures::pattern_image(side, side, 3, first + i));
    }
  }
}

data::PrepareOptions paired(const TempDir& dir, const std::string& out) {
  data::PrepareOptions o;
  o.source.kind = data::SourceKind::paired;
  o.source.dir = dir / "A";
  o.source.dir_b = dir / "B";
  o.out = dir / out;
  return o;
}

}  // namespace

TEST(SampleValues, ByteDataConvertsExactlyAsBeforeRangesExisted) {
  const auto pixels = torch::arange(256, torch::kInt32).to(torch::kUInt8).reshape({1, 16, 16, 1});
  const auto before = pixels.permute({0, 3, 1, 2}).to(torch::kFloat32).div(127.5).sub_(1.0);
  EXPECT_TRUE(torch::equal(data::to_model_input(pixels), before));
  EXPECT_TRUE(torch::equal(data::to_samples(before, {}), metrics::to_pixels(before)));
}

TEST(SampleValues, A16BitRangeMapsItsEndsToMinusOneAndOne) {
  const DomainSamples samples{SampleType::uint16, {1000, 9000}};
  const auto values = torch::tensor({1000, 5000, 9000, 7}, torch::kInt32).reshape({1, 1, 4, 1});
  const auto input = data::to_model_input(values, samples.range);
  ASSERT_EQ(input.sizes(), (std::vector<std::int64_t>{1, 1, 1, 4}));
  EXPECT_FLOAT_EQ(input.flatten()[0].item<float>(), -1.0f);
  EXPECT_FLOAT_EQ(input.flatten()[1].item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(input.flatten()[2].item<float>(), 1.0f);
  // Back to whole values, clamped to the range (7 lies below it).
  const auto back = data::to_samples(input, samples);
  EXPECT_EQ(back.flatten()[1].item<float>(), 5000.0f);
  EXPECT_EQ(back.flatten()[3].item<float>(), 1000.0f);
  // The PSNR peak of a range is its width: an error of 80 on [1000, 9000] is 40 dB.
  EXPECT_NEAR(metrics::psnr_per_image(torch::full({1, 1, 2, 2}, 80.0), torch::zeros({1, 1, 2, 2}), 8000).item<double>(),
              40.0, 1e-9);
}

TEST(SampleValues, WriterAndReaderKeepUint16AndFloatDomains) {
  TempDir dir;
  const std::string path = dir / "deep.h5";
  const cv::Mat deep = deep_image(8, 3);
  cv::Mat bands(8, 8, CV_32FC(5));
  cv::randu(bands, -2.5, 7.5);
  {
    data::PairedFileWriter writer(path, 4);
    writer.write_root_attributes("test", "paired", "test");
    data::SplitLayout layout{8, 8, 1, 5, false, true, 4};
    layout.type_a = SampleType::uint16;
    layout.type_b = SampleType::float32;
    for (const char* split : {"train", "val"}) {
      writer.begin_split(split, layout);
      for (int i = 0; i < 3; ++i) writer.append(deep.data, bands.data, 0, "p" + std::to_string(i));
    }
    writer.set_value_ranges({0, 65535}, {-2.5, 7.5});
    writer.close();
  }
  const auto ds = data::PairedDataset::open(path);
  EXPECT_EQ(ds->attributes().version, 4);
  const auto& info = ds->split("val");
  EXPECT_EQ(info.samples_a, (DomainSamples{SampleType::uint16, {0, 65535}}));
  EXPECT_EQ(info.samples_b, (DomainSamples{SampleType::float32, {-2.5, 7.5}}));
  EXPECT_EQ(info.channels_b, 5);
  const auto pair = ds->read("val", {2});
  EXPECT_TRUE(torch::equal(pair.a[0], as_int32(deep))) << "uint16 values above 32767 must stay positive";
  EXPECT_GT(pair.a.max().item<std::int32_t>(), 32767);
  const auto b = torch::from_blob(bands.data, {8, 8, 5}, torch::kFloat32);
  EXPECT_TRUE(torch::equal(pair.b[0], b));
  data::ValuesOutside outside;
  EXPECT_TRUE(data::check_dataset(*ds, 0, 1, &outside).empty());
  EXPECT_EQ(outside.a + outside.b, 0);
}

TEST(SampleValues, ByteFilesStayVersion2WithoutRanges) {
  TempDir dir;
  fixtures::make_fashion_edges_dataset(dir / "f.h5", 20, 0);
  const auto ds = data::PairedDataset::open(dir / "f.h5");
  EXPECT_EQ(ds->attributes().version, 2);
  EXPECT_TRUE(ds->split("train").samples_a.is_byte_default());
  EXPECT_TRUE(ds->split("train").samples_b.is_byte_default());
}

TEST(SampleValues, TheReaderRefusesWhatOnlyVersion4Allows) {
  TempDir dir;
  // uint16 images in a version 2 file: an older reader would refuse them; so does this one, saying why.
  auto splits = fixtures::crafted_split("train");
  auto val = fixtures::crafted_split("val");
  splits.insert(splits.end(), val.begin(), val.end());
  auto deep = splits;
  deep[0].second.type = H5T_STD_U16LE;
  fixtures::craft_h5(dir / "v2_uint16.h5", {"train", "val"}, deep);
  EXPECT_TRUE(contains(fixtures::error_of([&] { data::PairedDataset::open(dir / "v2_uint16.h5"); }),
                       "/train/A: expected uint8, got uint16 (uint16 and float32 images need format version 4)"));
  // 12 channels: version 4 only.
  auto wide = splits;
  for (auto& [group, d] : wide)
    if (d.name == "A") d.dims[3] = 12;
  fixtures::craft_h5(dir / "v2_12ch.h5", {"train", "val"}, wide);
  EXPECT_TRUE(contains(fixtures::error_of([&] { data::PairedDataset::open(dir / "v2_12ch.h5"); }),
                       "channels must be 1 or 3 (format version 4 allows 1 to 16), got 12"));
  fixtures::craft_h5(dir / "v4_12ch.h5", {"train", "val"}, wide, "pix2pix-h5", 4);
  const auto twelve = data::PairedDataset::open(dir / "v4_12ch.h5");
  EXPECT_EQ(twelve->split("train").channels_a, 12);
  // ... which a generator of 3 input channels does not take.
  nets::GeneratorOptions three;
  three.out_channels = 1;
  EXPECT_TRUE(contains(fixtures::error_of([&] { infer::check_generator_fits(three, *twelve, "train"); }),
                       "/train pairs have 12 -> 1 channels; the generator takes 3 -> 1"));
  // float32 without a range, and a range that is empty or lies in a version 2 file.
  auto floats = splits;
  for (auto& [group, d] : floats)
    if (d.name == "B") d.type = H5T_IEEE_F32LE;
  fixtures::craft_h5(dir / "v4_float.h5", {"train", "val"}, floats, "pix2pix-h5", 4);
  EXPECT_TRUE(contains(fixtures::error_of([&] { data::PairedDataset::open(dir / "v4_float.h5"); }),
                       "/train/B: holds float32 images but the file has no root attribute 'range_B'"));
  const auto add_range = [&](const std::string& path, const char* name, std::vector<double> range) {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    const hsize_t n = range.size();
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    const hid_t attr = H5Acreate2(file, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, H5T_NATIVE_DOUBLE, range.data());
    H5Aclose(attr), H5Sclose(space), H5Fclose(file);
  };
  add_range(dir / "v4_float.h5", "range_B", {3.0, 3.0});
  EXPECT_TRUE(contains(fixtures::error_of([&] { data::PairedDataset::open(dir / "v4_float.h5"); }),
                       "root attribute 'range_B': the range [3, 3] is empty: lo must be below hi"));
  fixtures::craft_h5(dir / "v2_range.h5", {"train", "val"}, splits);
  add_range(dir / "v2_range.h5", "range_A", {0.0, 100.0});
  EXPECT_TRUE(contains(fixtures::error_of([&] { data::PairedDataset::open(dir / "v2_range.h5"); }),
                       "root attribute 'range_A': value ranges need format version 4"));
}

TEST(SampleValues, PrepareKeeps16BitValuesAndTheLoaderMapsTheirRange) {
  TempDir dir;
  write_deep_pairs(dir, 6, 2, 16);
  const auto summary = data::run_prepare(paired(dir, "deep.h5"));
  EXPECT_EQ(summary.samples_a, (DomainSamples{SampleType::uint16, {0, 65535}}));
  EXPECT_EQ(summary.channels_a, 1) << "a 16-bit grey domain keeps its one channel";
  EXPECT_EQ(summary.channels_b, 3);
  EXPECT_TRUE(contains(data::format_summary(summary, "deep.h5"), "A: uint16, 1 channel, on [0, 65535]"));
  const auto ds = data::PairedDataset::open(dir / "deep.h5");
  EXPECT_EQ(ds->attributes().version, 4);
  EXPECT_TRUE(torch::equal(ds->read("val", {1}).a[0], as_int32(deep_image(16, 101))));

  data::LoaderOptions lo;
  lo.split = "val";
  lo.batch_size = 2;
  lo.shuffle = false;
  lo.augment.preprocess = data::Preprocess::none;
  data::BatchLoader loader(ds, lo, torch::kCPU);
  loader.start_epoch(0);
  const auto batch = *loader.next();
  const auto expected = as_int32(deep_image(16, 100)).permute({2, 0, 1}).to(torch::kFloat64) / 65535.0 * 2 - 1;
  EXPECT_LT((batch.a[0].to(torch::kFloat64) - expected).abs().max().item<double>(), 1e-6);
  EXPECT_GT(batch.a.max().item<float>(), 0.9f);
}

TEST(SampleValues, PrepareMeasuresAnAutoRangeAndCountsValuesOutsideAGivenOne) {
  TempDir dir;
  write_deep_pairs(dir, 4, 2, 8);
  auto o = paired(dir, "auto.h5");
  o.range_a = data::parse_range_request("auto", "--range-a");
  const auto measured = data::run_prepare(o);
  double lo = 65535, hi = 0;
  for (int id : {0, 1, 2, 3, 100, 101}) {
    double l = 0, h = 0;
    cv::minMaxLoc(deep_image(8, id), &l, &h);
    lo = std::min(lo, l), hi = std::max(hi, h);
  }
  EXPECT_EQ(measured.samples_a.range, (ValueRange{lo, hi}));
  EXPECT_EQ(data::PairedDataset::open(dir / "auto.h5")->split("train").samples_a.range, (ValueRange{lo, hi}));
  o.out = dir / "given.h5";
  o.range_a = data::parse_range_request("0,30000", "--range-a");
  const auto given = data::run_prepare(o);
  EXPECT_TRUE(contains(given.describe_a, "values outside it")) << given.describe_a;
  data::ValuesOutside outside;
  EXPECT_TRUE(data::check_dataset(*data::PairedDataset::open(dir / "given.h5"), 0, 1, &outside).empty());
  EXPECT_GT(outside.a, 0);
  EXPECT_EQ(outside.b, 0);
  for (const char* bad : {"5,5", "9,1", "1", "a,b", "nan,1", "0,inf"})
    EXPECT_TRUE(contains(fixtures::error_of([&] { data::parse_range_request(bad, "--range-a"); }), "--range-a")) << bad;
}

TEST(SampleValues, PrepareReadsMultiBandNpyStacksAndMultiPageTiffs) {
  TempDir dir;
  for (const char* split : {"train", "val"}) {
    fs::create_directories(dir / ("A/" + std::string(split)));
    for (int i = 0; i < 3; ++i) {
      const std::string name = "/s" + std::to_string(i);
      data::write_npy(dir / ("A/" + std::string(split) + name + ".npy"),
                      torch::rand({8, 8, 5}, torch::kFloat32) * 10 - 5);
      std::vector<cv::Mat> pages;
      for (int band = 0; band < 4; ++band) pages.push_back(deep_image(8, i * 10 + band));
      fs::create_directories(dir / ("B/" + std::string(split)));
      if (kTiff) {
        ASSERT_TRUE(cv::imwritemulti(dir / ("B/" + std::string(split) + name + ".tif"), pages));
      } else {  // an OpenCV without TIFF (the GPU bundle's): the same bands as a uint16 .npy stack
        cv::Mat stack;
        cv::merge(pages, stack);
        data::write_npy_bytes(dir / ("B/" + std::string(split) + name + ".npy"), "<u2", {8, 8, 4}, stack.data,
                              stack.total() * stack.elemSize());
      }
    }
  }
  const auto summary = data::run_prepare(paired(dir, "bands.h5"));
  EXPECT_EQ(summary.channels_a, 5);
  EXPECT_EQ(summary.channels_b, 4);
  EXPECT_EQ(summary.samples_a.type, SampleType::float32);
  EXPECT_TRUE(contains(summary.describe_a, "measured: float data has no natural range")) << summary.describe_a;
  EXPECT_GE(summary.samples_a.range.lo, -5.0);
  EXPECT_LE(summary.samples_a.range.hi, 5.0);
  const auto ds = data::PairedDataset::open(dir / "bands.h5");
  const auto b = ds->read("train", {0}).b[0];
  EXPECT_TRUE(torch::equal(b.select(2, 2), as_int32(deep_image(8, 2)).select(2, 0))) << "page 3 is band 3";
  if (!kTiff) std::printf("note: this OpenCV has no TIFF codec: the bands came from .npy stacks\n");
}

TEST(SampleValues, PrepareRefusesMixedDepthsAndNaNByNameAndWritesNothing) {
  TempDir dir;
  write_deep_pairs(dir, 4, 2, 8);
  // One 8-bit image among the 16-bit ones of A (8-bit grey becomes colour, as it always did).
  fixtures::write_png(dir / "A/train/img2.png", fixtures::pattern_image(8, 8, 1, 2));
  const std::string mixed = fixtures::error_of([&] { data::run_prepare(paired(dir, "mixed.h5")); });
  EXPECT_TRUE(contains(mixed, "img2.png: uint8, 3 channels, but domain A's first image")) << mixed;
  EXPECT_TRUE(contains(mixed, "img0.png) is uint16, 1 channel")) << mixed;
  EXPECT_FALSE(fs::exists(dir / "mixed.h5"));

  TempDir floats;
  for (const char* split : {"train", "val"})
    for (int i = 0; i < 2; ++i) {
      auto values = torch::rand({8, 8}, torch::kFloat32);
      if (std::string(split) == "val" && i == 1) values[3][4].fill_(std::numeric_limits<float>::quiet_NaN());
      fs::create_directories(floats / ("A/" + std::string(split)));
      data::write_npy(floats / ("A/" + std::string(split) + "/f" + std::to_string(i) + ".npy"), values);
      fixtures::write_png(floats / ("B/" + std::string(split) + "/f" + std::to_string(i) + ".png"),
                          fixtures::pattern_image(8, 8, 1, i));
    }
  const std::string nan = fixtures::error_of([&] { data::run_prepare(paired(floats, "nan.h5")); });
  EXPECT_TRUE(contains(nan, "val/f1.npy: holds NaN or infinite values (the first at row 3, column 4, band 0)")) << nan;
  EXPECT_FALSE(fs::exists(floats / "nan.h5"));
  for (const auto& entry : fs::directory_iterator(floats.path()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos) << entry.path();
}

TEST(SampleValues, TranslationOutputsKeepTheirDepthInTheFormatsThatHoldIt) {
  TempDir dir;
  cv::Mat bands(6, 7, CV_16UC(5));
  cv::randu(bands, 0, 65535);
  infer::write_values_atomically(dir / "b.npy", bands);
  cv::Mat wide;
  bands.convertTo(wide, CV_32S);
  EXPECT_TRUE(torch::equal(data::read_npy(dir / "b.npy"), torch::from_blob(wide.data, {6, 7, 5}, torch::kInt32)));
  const cv::Mat frame = deep_image(8, 9);
  if (kTiff) infer::write_values_atomically(dir / "f.tif", frame);
  infer::write_values_atomically(dir / "f.png", frame);
  for (const char* file : {"f.tif", "f.png"}) {
    if (!kTiff && std::string(file) == "f.tif") continue;
    const cv::Mat back = cv::imread(dir / file, cv::IMREAD_UNCHANGED);
    ASSERT_EQ(back.type(), CV_16UC1) << file;
    EXPECT_EQ(cv::countNonZero(back != frame), 0) << file;
  }
  cv::Mat grey(4, 4, CV_32FC1, cv::Scalar(-3.5));
  grey.at<float>(1, 2) = 1e6f;
  if (kTiff) {
    infer::write_values_atomically(dir / "g.tif", grey);
    const cv::Mat back = cv::imread(dir / "g.tif", cv::IMREAD_UNCHANGED);
    ASSERT_EQ(back.type(), CV_32FC1);
    EXPECT_EQ(cv::countNonZero(back != grey), 0);
  }
  // From the generator's float values to an image of the domain's depth, and back to a tensor.
  const auto values = torch::tensor({0.0f, 65535.0f, 1234.0f, 7.0f}).reshape({1, 2, 2});
  const cv::Mat as16 = infer::values_to_mat(values, SampleType::uint16);
  EXPECT_EQ(as16.type(), CV_16UC1);
  EXPECT_TRUE(torch::equal(infer::mat_to_tensor(as16), values.permute({1, 2, 0}).to(torch::kInt32)));
  EXPECT_EQ(infer::default_output_format(SampleType::uint16, 1), "png");
  EXPECT_EQ(infer::default_output_format(SampleType::float32, 1), kTiff ? "tif" : "npy");
  if (!kTiff) {
    EXPECT_EQ(infer::output_format_problem("tif", SampleType::uint16, 1),
              "--format tif: this build's OpenCV cannot write tif files: use npy");
  }
  EXPECT_EQ(infer::default_output_format(SampleType::float32, 3), "npy") << "See Note [float TIFF, one channel]";
  EXPECT_EQ(infer::default_output_format(SampleType::uint8, 5), "npy");
  EXPECT_EQ(infer::output_format_problem("png", SampleType::uint8, 3), "");
  EXPECT_EQ(infer::output_format_problem("png", SampleType::float32, 1),
            kTiff ? "--format png cannot hold float32 outputs of 1 channel: use tif (32-bit float) or npy"
                  : "--format png cannot hold float32 outputs of 1 channel: use npy");
  EXPECT_EQ(infer::output_format_problem("tif", SampleType::uint16, 12),
            "--format tif cannot hold uint16 outputs of 12 channels: use npy");
}

TEST(SampleValues, AlignedUnpairedAndDerivedSourcesKeepTheirDepthToo) {
  TempDir dir;
  // --aligned: A|B side by side in one 16-bit image.
  for (const auto& [split, count] : {std::pair{"train", 4}, std::pair{"val", 2}}) {
    fs::create_directories(dir / ("ab/" + std::string(split)));
    for (int i = 0; i < count; ++i) {
      cv::Mat ab;
      cv::hconcat(deep_image(8, i), deep_image(8, 50 + i), ab);
      cv::imwrite(dir / ("ab/" + std::string(split) + "/p" + std::to_string(i) + ".png"), ab);
    }
  }
  data::PrepareOptions aligned;
  aligned.source.kind = data::SourceKind::aligned;
  aligned.source.dir = dir / "ab";
  aligned.out = dir / "aligned.h5";
  data::run_prepare(aligned);
  auto ds = data::PairedDataset::open(aligned.out);
  EXPECT_TRUE(torch::equal(ds->read("val", {1}).b[0], as_int32(deep_image(8, 51))));

  // --unpaired: 16-bit A, 8-bit B of other numbers; B's type is known before A is written.
  fs::create_directories(dir / "ua/train");
  for (int i = 0; i < 5; ++i) cv::imwrite(dir / ("ua/train/a" + std::to_string(i) + ".png"), deep_image(8, i));
  fixtures::write_pattern_folder(dir / "ub/train", 4, 8, 8, 1);
  data::PrepareOptions unpaired;
  unpaired.source.kind = data::SourceKind::unpaired;
  unpaired.source.dir = dir / "ua";
  unpaired.source.dir_b = dir / "ub";
  unpaired.val_fraction = 0.25;
  unpaired.out = dir / "unpaired.h5";
  const auto summary = data::run_prepare(unpaired);
  EXPECT_EQ(summary.samples_a.type, SampleType::uint16);
  EXPECT_EQ(summary.samples_b.type, SampleType::uint8);
  EXPECT_EQ(summary.channels_b, 3) << "8-bit grey becomes colour, as before";
  ds = data::PairedDataset::open(unpaired.out);
  EXPECT_EQ(ds->attributes().version, 4);
  EXPECT_FALSE(ds->split("train").paired);
  EXPECT_GT(ds->read_images("train", data::Domain::A, {0}).max().item<std::int32_t>(), 255);

  // --images: gray, blur and downsample work at any depth; edges, noise and mask need 8 bits.
  fs::create_directories(dir / "deep");
  for (int i = 0; i < 10; ++i) cv::imwrite(dir / ("deep/d" + std::to_string(i) + ".png"), deep_image(8, i));
  data::PrepareOptions derived;
  derived.source.kind = data::SourceKind::images;
  derived.source.dir = dir / "deep";
  derived.derive_enabled = true;
  derived.derive = data::DeriveMode::blur;
  derived.val_fraction = 0.2;
  derived.out = dir / "blur.h5";
  data::run_prepare(derived);
  ds = data::PairedDataset::open(derived.out);
  EXPECT_EQ(ds->split("train").samples_a.type, SampleType::uint16);
  EXPECT_EQ(ds->split("train").channels_a, 1);
  derived.derive = data::DeriveMode::edges;
  derived.out = dir / "edges.h5";
  const std::string edges = fixtures::error_of([&] { data::run_prepare(derived); });
  EXPECT_TRUE(contains(edges, "--derive edges works on 8-bit images; this one is uint16")) << edges;
  EXPECT_FALSE(fs::exists(dir / "edges.h5"));
}
