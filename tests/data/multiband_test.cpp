// Images of more than 4 bands (issue 45, item 9): OpenCV resizes at most 4 channels by a
// non-integer factor, so prepare --size, and translate --resize model, skipped every 5-band .npy
// and every TIFF of 5 or 16 pages. resize_bands resizes them in groups of 4, as band by band (to
// the last float bit, where OpenCV's own paths differ); 17 pages are refused naming the file.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "pix2pix/data/image_ops.hpp"
#include "pix2pix/data/npy_file.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/data/prepare.hpp"
#include "pix2pix/data/sample_census.hpp"
#include "pix2pix/infer/image_fit.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using fixtures::contains;
using fixtures::TempDir;
namespace fs = std::filesystem;

namespace {

using pix2pix::fixtures::kTiff;

// A float image of `bands` bands whose values differ per band and pixel.
cv::Mat bands_image(int side, int bands, int id) {
  cv::Mat image(side, side, CV_32FC(bands));
  auto* v = image.ptr<float>();
  for (int i = 0; i < side * side * bands; ++i) v[i] = static_cast<float>((i * 37 + id * 101) % 997) / 99.0f - 5.0f;
  return image;
}

// The same resize band by band, OpenCV on one channel at a time.
cv::Mat resized_band_by_band(const cv::Mat& image, cv::Size size, int interpolation) {
  std::vector<cv::Mat> bands;
  cv::split(image, bands);
  for (cv::Mat& band : bands) cv::resize(band, band, size, 0, 0, interpolation);
  cv::Mat out;
  cv::merge(bands, out);
  return out;
}

void write_npy_image(const std::string& path, const cv::Mat& image) {
  fs::create_directories(fs::path(path).parent_path());
  data::write_npy_bytes(path, "<f4", {image.rows, image.cols, image.channels()}, image.data,
                        image.total() * image.elemSize());
}

data::PrepareOptions paired(const TempDir& dir, int size) {
  data::PrepareOptions o;
  o.source.kind = data::SourceKind::paired;
  o.source.dir = dir / "A";
  o.source.dir_b = dir / "B";
  o.out = dir / "out.h5";
  o.size = size;
  o.range_a = data::parse_range_request("-6,6", "--range-a");
  o.range_b = data::parse_range_request("-6,6", "--range-b");
  o.progress = ProgressStyle::none;
  return o;
}

}  // namespace

TEST(MultiBand, ResizeBandsIsOpenCvBandByBandForAnyCount) {
  for (const int bands : {1, 3, 4, 5, 8, 16})
    for (const auto& [size, interpolation] :
         {std::pair{cv::Size(24, 24), cv::INTER_AREA}, std::pair{cv::Size(45, 45), cv::INTER_CUBIC},
          std::pair{cv::Size(20, 28), cv::INTER_LINEAR}}) {
      const cv::Mat image = bands_image(32, bands, bands);
      const cv::Mat ours = data::resize_bands(image, size, interpolation);
      ASSERT_EQ(ours.channels(), bands);
      ASSERT_EQ(ours.size(), size);
      // OpenCV's own multi-channel and single-channel paths differ in the last float bit.
      EXPECT_LE(cv::norm(ours, resized_band_by_band(image, size, interpolation), cv::NORM_INF), 2e-6)
          << bands << " bands to " << size;
    }
}

TEST(MultiBand, PrepareResizesFiveBandArraysAndSixteenPageTiffs) {
  TempDir dir;
  for (const char* split : {"train", "val"})
    for (int i = 0; i < 2; ++i) {
      const std::string name = std::string(split) + "/s" + std::to_string(i);
      write_npy_image(dir / ("A/" + name + ".npy"), bands_image(32, 5, i));
      if (kTiff) {
        std::vector<cv::Mat> pages;
        cv::split(bands_image(40, 16, i + 7), pages);
        fs::create_directories(dir / ("B/" + std::string(split)));
        ASSERT_TRUE(cv::imwritemulti(dir / ("B/" + name + ".tif"), pages));
      } else {  // no TIFF codec (the GPU bundle's OpenCV): 16 bands as an .npy stack
        write_npy_image(dir / ("B/" + name + ".npy"), bands_image(40, 16, i + 7));
      }
    }
  const auto summary = data::run_prepare(paired(dir, 24));
  EXPECT_EQ(summary.channels_a, 5);
  EXPECT_EQ(summary.channels_b, 16);
  EXPECT_EQ(summary.height, 24);
  EXPECT_TRUE(summary.skipped.empty());
  // What was stored is the band-by-band resize of each source (centre crop of a square: all of it).
  const auto dataset = data::PairedDataset::open(dir / "out.h5");
  const auto a = dataset->read_images("train", data::Domain::A, {1});
  const cv::Mat expected = resized_band_by_band(bands_image(32, 5, 1), cv::Size(24, 24), cv::INTER_AREA);
  EXPECT_TRUE(torch::equal(a[0], torch::from_blob(expected.data, {24, 24, 5}, torch::kFloat32)));

  // translate --resize model of a 40x40 five-band input to a 32x32 generator, and back.
  const infer::FitPlan plan = infer::plan_fit(40, 40, infer::ResizeMode::model, {32, 32, 8});
  const cv::Mat at_model = infer::to_model_size(bands_image(40, 5, 3), plan);
  EXPECT_EQ(at_model.size(), cv::Size(32, 32));
  EXPECT_EQ(at_model.channels(), 5);
  EXPECT_EQ(infer::to_image_size(at_model, plan).size(), cv::Size(40, 40));
}

TEST(MultiBand, SeventeenBandsAreRefusedNamingTheFile) {
  TempDir dir;
  for (const char* split : {"train", "val"}) {
    write_npy_image(dir / ("A/" + std::string(split) + "/s.npy"), bands_image(8, 1, 0));
    if (kTiff) {
      std::vector<cv::Mat> pages;
      cv::split(bands_image(8, 17, 1), pages);
      fs::create_directories(dir / ("B/" + std::string(split)));
      ASSERT_TRUE(cv::imwritemulti(dir / ("B/" + std::string(split) + "/s.tif"), pages));
    } else {
      write_npy_image(dir / ("B/" + std::string(split) + "/s.npy"), bands_image(8, 17, 1));
    }
  }
  const std::string error = fixtures::error_of([&] { data::run_prepare(paired(dir, 0)); });
  // The file is named, with its 17 bands.
  EXPECT_TRUE(contains(error, dir / "B/train/s.") || contains(error, dir / "B/val/s.")) << error;
  EXPECT_TRUE(contains(error, kTiff ? "17 bands (pages); the format holds 1 to 16" : "[8, 8, 17]")) << error;
}
