// OpenCV image operations used by `prepare`: decoding, channel conversion, resize with centre
// crop, and the single-domain derivations (B is the image, A is derived from it).
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <string>

namespace pix2pix::data {

enum class DeriveMode { edges, gray, blur, downsample, noise, mask };
DeriveMode parse_derive_mode(const std::string& text);  // Error naming --derive on anything else
std::string to_string(DeriveMode mode);

struct DeriveParams {
  double canny_low = 50;  // edges: Canny hysteresis thresholds
  double canny_high = 150;
  double blur_sigma = 2.0;      // blur: Gaussian sigma in pixels
  int downsample_factor = 4;    // downsample: shrink by this factor (area), then enlarge (cubic)
  double noise_sigma = 25.0;    // noise: Gaussian sigma on the 0-255 scale
  double mask_fraction = 0.25;  // mask: area fraction of the hidden rectangle
};

// Decodes an image file into 8-bit RGB or grey (alpha dropped, 16-bit scaled down).
// Returns an empty Mat when the file cannot be decoded.
cv::Mat decode_image(const std::string& path);

// Decodes an image at its own depth, for prepare: 8-bit, 16-bit (PNG, TIFF) or 32-bit float
// (TIFF, EXR) values kept; colour as RGB and alpha dropped (1, 3 or 4 channels → 1 or 3); a
// multi-page TIFF whose pages are single-channel images of one size and depth as one image of a
// channel per page (multi-band); `.npy` arrays H×W or H×W×C (uint8, uint16, float32). Empty Mat and
// `*error` set when the file cannot be decoded or holds another type.
cv::Mat decode_samples(const std::string& path, std::string* error);

// 8-bit grey (1) or RGB (3) version of an 8-bit image with 1, 3 or 4 channels.
cv::Mat to_channels(const cv::Mat& image, int channels);

// Scales the shorter side to `size` and crops the centre to size x size.
cv::Mat resize_center_crop(const cv::Mat& image, int size);
// Where the first NaN or infinite value of a float image is ("row 3, column 4, band 0"); "" when
// there is none or the image holds integers.
std::string first_non_finite(const cv::Mat& image);
// cv::resize for any number of channels (OpenCV takes at most 4 for most factors): bands in
// groups of up to 4, merged again.
cv::Mat resize_bands(const cv::Mat& image, cv::Size size, int interpolation);

// A derived from B. `seed` makes the random modes (noise, mask) reproducible per image.
// The result has B's size and B's channel count (grey for edges/gray when B is grey).
cv::Mat derive(const cv::Mat& b, DeriveMode mode, const DeriveParams& params, std::uint64_t seed);

}  // namespace pix2pix::data
