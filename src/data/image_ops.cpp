// Derivations follow the common single-domain pix2pix tasks: edges→image (Canny, black edges
// on white as in edges2shoes), colourisation (grey), deblurring, super-resolution
// (downsample), denoising, and inpainting (mask).
#include "pix2pix/data/image_ops.hpp"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/data/npy_image.hpp"
#include "pix2pix/data/sample_types.hpp"

namespace pix2pix::data {

namespace {
const Choices<DeriveMode> kDeriveModeChoices = {{"edges", DeriveMode::edges},
                                                {"gray", DeriveMode::gray},
                                                {"grey", DeriveMode::gray},
                                                {"blur", DeriveMode::blur},
                                                {"downsample", DeriveMode::downsample},
                                                {"noise", DeriveMode::noise},
                                                {"mask", DeriveMode::mask}};
}  // namespace

DeriveMode parse_derive_mode(const std::string& text) {
  return parse_choice(text, "--derive", kDeriveModeChoices);
}
std::string to_string(DeriveMode value) {
  return choice_name(value, kDeriveModeChoices);
}

cv::Mat decode_image(const std::string& path) {
  cv::Mat raw;
  try {
    raw = cv::imread(path, cv::IMREAD_UNCHANGED);
  } catch (const cv::Exception&) {
    return cv::Mat();
  } catch (const std::bad_alloc&) {
    return cv::Mat();  // an image larger than the memory left: skipped like an undecodable one
  }
  if (raw.empty()) return raw;
  cv::Mat eight;
  if (raw.depth() == CV_8U) {
    eight = raw;
  } else if (raw.depth() == CV_16U) {
    raw.convertTo(eight, CV_8U, 1.0 / 257.0);
  } else {
    double lo = 0, hi = 0;
    cv::minMaxLoc(raw.reshape(1), &lo, &hi);
    raw.convertTo(eight, CV_8U, hi > lo ? 255.0 / (hi - lo) : 1.0, hi > lo ? -lo * 255.0 / (hi - lo) : 0);
  }
  switch (eight.channels()) {
    case 1:
      return eight;
    case 3: {
      cv::Mat rgb;
      cv::cvtColor(eight, rgb, cv::COLOR_BGR2RGB);
      return rgb;
    }
    case 4: {
      cv::Mat rgb;
      cv::cvtColor(eight, rgb, cv::COLOR_BGRA2RGB);
      return rgb;
    }
    default:
      return cv::Mat();
  }
}

namespace {
// OpenCV's channel order (BGR, BGRA) to RGB, alpha dropped (grey and alpha to grey).
cv::Mat to_rgb_order(const cv::Mat& raw) {
  if (raw.channels() == 2) {  // grey and alpha
    cv::Mat grey;
    cv::extractChannel(raw, grey, 0);
    return grey;
  }
  if (raw.channels() != 3 && raw.channels() != 4) return raw;
  cv::Mat rgb;
  cv::cvtColor(raw, rgb, raw.channels() == 3 ? cv::COLOR_BGR2RGB : cv::COLOR_BGRA2RGB);
  return rgb;
}

std::string depth_name(int depth) {
  switch (depth) {
    case CV_8U:
      return "8-bit unsigned";
    case CV_8S:
      return "8-bit signed";
    case CV_16U:
      return "16-bit unsigned";
    case CV_16S:
      return "16-bit signed";
    case CV_32S:
      return "32-bit integer";
    case CV_32F:
      return "32-bit float";
    case CV_64F:
      return "64-bit float";
    default:
      return "another type of";
  }
}
}  // namespace

cv::Mat decode_samples(const std::string& path, std::string* error) {
  const auto fail = [error](const std::string& why) {
    *error = why;
    return cv::Mat();
  };
  try {
    std::string ext = path.size() >= 4 ? path.substr(path.size() - 4) : "";
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    cv::Mat raw;
    if (ext == ".npy") {
      raw = read_npy_image(path, error);
      if (raw.empty()) return raw;
    } else {
      std::vector<cv::Mat> pages;
      if (ext == ".tif" || ext == "tiff") {
        if (!cv::imreadmulti(path, pages, cv::IMREAD_UNCHANGED) || pages.empty()) return fail("cannot decode image");
      } else {
        pages.push_back(cv::imread(path, cv::IMREAD_UNCHANGED));
        if (pages[0].empty()) return fail("cannot decode image");
      }
      if (pages.size() == 1) {
        raw = to_rgb_order(pages[0]);
      } else {
        for (size_t i = 0; i < pages.size(); ++i) {
          if (pages[i].channels() != 1 || pages[i].size() != pages[0].size() || pages[i].depth() != pages[0].depth())
            return fail("multi-page TIFF: page " + std::to_string(i + 1) + " is " + std::to_string(pages[i].cols) +
                        "x" + std::to_string(pages[i].rows) + ", " + std::to_string(pages[i].channels()) +
                        " channels, " + depth_name(pages[i].depth()) +
                        "; its bands must be single-channel pages "
                        "of one size and depth, like page 1");
        }
        cv::merge(pages, raw);
      }
    }
    if (raw.channels() > format::kMaxChannels)
      return fail(std::to_string(raw.channels()) + (raw.channels() > 4 ? " bands (pages)" : " channels") +
                  "; the format holds 1 to " + std::to_string(format::kMaxChannels));
    if (!sample_type_of(raw.depth()))
      return fail(depth_name(raw.depth()) +
                  " values; prepare stores 8-bit and 16-bit unsigned integers and 32-bit floats (convert it)");
    if (!raw.isContinuous()) raw = raw.clone();
    return raw;
  } catch (const cv::Exception& e) {
    return fail("OpenCV: " + e.err);
  } catch (const std::bad_alloc&) {
    return fail("too large for the memory left");
  }
}

cv::Mat to_channels(const cv::Mat& image, int channels) {
  if (image.channels() == channels) return image;
  cv::Mat out;
  if (channels == 1) {
    cv::cvtColor(image, out, image.channels() == 4 ? cv::COLOR_RGBA2GRAY : cv::COLOR_RGB2GRAY);
  } else if (image.channels() == 1) {
    cv::cvtColor(image, out, cv::COLOR_GRAY2RGB);
  } else {
    cv::cvtColor(image, out, cv::COLOR_RGBA2RGB);
  }
  return out;
}

std::string first_non_finite(const cv::Mat& image) {
  if (image.depth() != CV_32F && image.depth() != CV_64F) return "";
  cv::Point at;
  if (cv::checkRange(image.reshape(1), true, &at)) return "";
  return "row " + std::to_string(at.y) + ", column " + std::to_string(at.x / image.channels()) + ", band " +
         std::to_string(at.x % image.channels());
}

cv::Mat resize_bands(const cv::Mat& image, cv::Size size, int interpolation) {
  cv::Mat out;
  if (image.channels() <= 4) {
    cv::resize(image, out, size, 0, 0, interpolation);
    return out;
  }
  // OpenCV resizes at most 4 channels by a non-integer factor (its `cn <= 4` assertion): more
  // bands (a 5-band .npy, a 16-page TIFF) are resized in groups of up to 4 (each band as OpenCV
  // resizes it alone, to the last float bit) and merged again.
  std::vector<cv::Mat> bands, groups;
  cv::split(image, bands);
  for (std::size_t first = 0; first < bands.size(); first += 4) {
    const std::vector<cv::Mat> part(bands.begin() + static_cast<std::ptrdiff_t>(first),
                                    bands.begin() + static_cast<std::ptrdiff_t>(std::min(bands.size(), first + 4)));
    cv::Mat merged, resized;
    cv::merge(part, merged);
    cv::resize(merged, resized, size, 0, 0, interpolation);
    groups.push_back(resized);
  }
  cv::merge(groups, out);
  return out;
}

cv::Mat resize_center_crop(const cv::Mat& image, int size) {
  if (image.rows == size && image.cols == size) return image;
  const double scale = static_cast<double>(size) / std::min(image.rows, image.cols);
  const int w = std::max(size, static_cast<int>(std::lround(image.cols * scale)));
  const int h = std::max(size, static_cast<int>(std::lround(image.rows * scale)));
  // Area averaging when shrinking avoids aliasing; cubic when enlarging keeps edges sharp.
  const cv::Mat resized = resize_bands(image, cv::Size(w, h), scale < 1.0 ? cv::INTER_AREA : cv::INTER_CUBIC);
  const cv::Rect centre((w - size) / 2, (h - size) / 2, size, size);
  return resized(centre).clone();
}

cv::Mat derive(const cv::Mat& b, DeriveMode mode, const DeriveParams& params, std::uint64_t seed) {
  cv::Mat a;
  std::mt19937_64 rng(seed);
  switch (mode) {
    case DeriveMode::edges: {
      cv::Mat grey = to_channels(b, 1), edges;
      cv::Canny(grey, edges, params.canny_low, params.canny_high);
      a = to_channels(255 - edges, b.channels());
      break;
    }
    case DeriveMode::gray:
      a = to_channels(b, 1);
      break;
    case DeriveMode::blur:
      cv::GaussianBlur(b, a, cv::Size(0, 0), params.blur_sigma);
      break;
    case DeriveMode::downsample: {
      const int f = std::max(1, params.downsample_factor);
      const cv::Mat small = resize_bands(b, cv::Size(std::max(1, b.cols / f), std::max(1, b.rows / f)), cv::INTER_AREA);
      a = resize_bands(small, b.size(), cv::INTER_CUBIC);
      break;
    }
    case DeriveMode::noise: {
      cv::Mat noise(b.size(), CV_32FC(b.channels()));
      cv::RNG cv_rng(seed);
      cv_rng.fill(noise, cv::RNG::NORMAL, 0.0, params.noise_sigma);
      cv::Mat noisy;
      b.convertTo(noisy, CV_32F);
      noisy += noise;
      noisy.convertTo(a, CV_8U);  // saturates to [0, 255]
      break;
    }
    case DeriveMode::mask: {
      a = b.clone();
      const double side = std::sqrt(std::clamp(params.mask_fraction, 0.0, 1.0));
      const int w = std::max(1, static_cast<int>(std::lround(b.cols * side)));
      const int h = std::max(1, static_cast<int>(std::lround(b.rows * side)));
      std::uniform_int_distribution<int> x0(0, b.cols - w), y0(0, b.rows - h);
      a(cv::Rect(x0(rng), y0(rng), w, h)).setTo(cv::Scalar::all(127));
      break;
    }
  }
  return a;
}

}  // namespace pix2pix::data
