// Each --derive mode does what its name says, deterministically; decoding handles the formats
// found in real folders and reports garbage as undecodable.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <fstream>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/image_ops.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using data::DeriveMode;

namespace {
cv::Mat square_on_black(int channels) {
  cv::Mat m = cv::Mat::zeros(32, 32, CV_8UC(channels));
  m(cv::Rect(8, 8, 16, 16)).setTo(cv::Scalar::all(255));
  return m;
}
double laplacian_energy(const cv::Mat& m) {
  cv::Mat lap;
  cv::Laplacian(m, lap, CV_64F);
  return cv::norm(lap);
}
}  // namespace

TEST(Derive, EdgesAreBlackLinesOnWhiteAtTheObjectBorder) {
  const cv::Mat b = square_on_black(3);
  const cv::Mat a = data::derive(b, DeriveMode::edges, {}, 0);
  ASSERT_EQ(a.channels(), 3);
  cv::Mat grey = data::to_channels(a, 1);
  EXPECT_EQ(grey.at<std::uint8_t>(0, 0), 255);    // background: no edge
  EXPECT_EQ(grey.at<std::uint8_t>(16, 16), 255);  // inside: no edge
  const int edge_pixels = cv::countNonZero(grey == 0);
  EXPECT_GT(edge_pixels, 40);  // the square's outline
  EXPECT_LT(edge_pixels, 200);
  const cv::Mat flat(32, 32, CV_8UC1, cv::Scalar(90));
  EXPECT_EQ(cv::countNonZero(data::derive(flat, DeriveMode::edges, {}, 0) != 255), 0);
}

TEST(Derive, GrayIsTheLuminanceOfB) {
  const cv::Mat b = fixtures::pattern_image(16, 16, 3, 5);
  const cv::Mat a = data::derive(b, DeriveMode::gray, {}, 0);
  ASSERT_EQ(a.channels(), 1);
  cv::Mat expected;
  cv::cvtColor(b, expected, cv::COLOR_RGB2GRAY);
  EXPECT_EQ(cv::countNonZero(a != expected), 0);
}

TEST(Derive, BlurAndDownsampleRemoveDetailButKeepFlatImages) {
  const cv::Mat b = fixtures::pattern_image(32, 32, 1, 3);
  for (DeriveMode mode : {DeriveMode::blur, DeriveMode::downsample}) {
    const cv::Mat a = data::derive(b, mode, {}, 0);
    EXPECT_EQ(a.size(), b.size());
    EXPECT_LT(laplacian_energy(a), 0.5 * laplacian_energy(b)) << data::to_string(mode);
    const cv::Mat flat(32, 32, CV_8UC1, cv::Scalar(77));
    EXPECT_LE(cv::norm(data::derive(flat, mode, {}, 0), flat, cv::NORM_INF), 1.0) << data::to_string(mode);
  }
}

TEST(Derive, NoiseHasTheRequestedSigmaAndIsReproducible) {
  const cv::Mat b(64, 64, CV_8UC1, cv::Scalar(128));
  data::DeriveParams p;
  p.noise_sigma = 20;
  const cv::Mat a = data::derive(b, DeriveMode::noise, p, 11);
  cv::Mat diff;
  cv::subtract(a, b, diff, cv::noArray(), CV_32F);
  cv::Scalar mean, stddev;
  cv::meanStdDev(diff, mean, stddev);
  EXPECT_NEAR(stddev[0], 20.0, 2.0);
  EXPECT_NEAR(mean[0], 0.0, 2.0);
  EXPECT_EQ(cv::countNonZero(a != data::derive(b, DeriveMode::noise, p, 11)), 0) << "same seed, other noise";
  EXPECT_GT(cv::countNonZero(a != data::derive(b, DeriveMode::noise, p, 12)), 1000) << "other seed, same noise";
}

TEST(Derive, MaskHidesOneRectangleOfTheRequestedArea) {
  const cv::Mat b(40, 40, CV_8UC1, cv::Scalar(10));
  data::DeriveParams p;
  p.mask_fraction = 0.25;
  const cv::Mat a = data::derive(b, DeriveMode::mask, p, 3);
  EXPECT_EQ(cv::countNonZero(a == 127), 400);  // 20 x 20
  EXPECT_EQ(cv::countNonZero(a != b), 400);
  EXPECT_EQ(cv::countNonZero(a != data::derive(b, DeriveMode::mask, p, 3)), 0);
}

TEST(Derive, ParsesModesAndRejectsUnknownOnes) {
  for (const char* m : {"edges", "gray", "blur", "downsample", "noise", "mask"})
    EXPECT_EQ(data::to_string(data::parse_derive_mode(m)), m);
  EXPECT_THROW(data::parse_derive_mode("sharpen"), Error);
}

TEST(ImageOps, ResizeCenterCropKeepsTheMiddle) {
  cv::Mat wide(20, 40, CV_8UC1, cv::Scalar(0));
  wide(cv::Rect(10, 0, 20, 20)).setTo(255);  // the centre square is white, the sides black
  const cv::Mat out = data::resize_center_crop(wide, 10);
  EXPECT_EQ(out.size(), cv::Size(10, 10));
  EXPECT_EQ(cv::countNonZero(out < 250), 0);
}

TEST(ImageOps, DecodesSixteenBitAndAlphaAndRejectsGarbage) {
  fixtures::TempDir dir;
  cv::Mat sixteen(8, 8, CV_16UC1, cv::Scalar(65535));
  cv::imwrite(dir / "16.png", sixteen);
  const cv::Mat a = data::decode_image(dir / "16.png");
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a.type(), CV_8UC1);
  EXPECT_EQ(a.at<std::uint8_t>(0, 0), 255);
  cv::Mat bgra(8, 8, CV_8UC4, cv::Scalar(10, 20, 30, 40));
  cv::imwrite(dir / "alpha.png", bgra);
  const cv::Mat rgb = data::decode_image(dir / "alpha.png");
  ASSERT_EQ(rgb.type(), CV_8UC3);
  EXPECT_EQ(rgb.at<cv::Vec3b>(0, 0), cv::Vec3b(30, 20, 10));  // stored as RGB
  std::ofstream(dir / "junk.png") << "not a png";
  EXPECT_TRUE(data::decode_image(dir / "junk.png").empty());
}
