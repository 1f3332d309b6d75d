#include "pix2pix/metrics/image_file.hpp"

#include <unistd.h>

#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "pix2pix/common/error.hpp"

namespace pix2pix::metrics {

void write_image_atomically(const std::string& path, const torch::Tensor& hwc) {
  namespace fs = std::filesystem;
  const auto pixels = hwc.to(torch::kCPU).to(torch::kUInt8).contiguous();
  if (pixels.dim() != 3 || (pixels.size(2) != 1 && pixels.size(2) != 3))
    throw Error("cannot write " + path + ": not an [H, W, 1|3] image");
  const int h = static_cast<int>(pixels.size(0)), w = static_cast<int>(pixels.size(1));
  const int c = static_cast<int>(pixels.size(2));
  cv::Mat rgb(h, w, CV_8UC(c), pixels.data_ptr<std::uint8_t>());
  cv::Mat out;
  if (c == 3)
    cv::cvtColor(rgb, out, cv::COLOR_RGB2BGR);
  else
    out = rgb;
  // The temporary keeps the extension: OpenCV picks the encoder from it.
  const fs::path target(path);
  const fs::path tmp = target.parent_path() / ("." + target.stem().string() + ".tmp-" + std::to_string(::getpid()) +
                                               target.extension().string());
  bool written = false;
  try {
    written = cv::imwrite(tmp.string(), out);
  } catch (const cv::Exception& e) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw Error("cannot write " + path + ": " + e.what());
  }
  std::error_code ec;
  if (!written) {
    fs::remove(tmp, ec);
    throw Error("cannot write " + path + " (is the folder writable, and " + target.extension().string() +
                " a format OpenCV writes?)");
  }
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error("cannot rename " + tmp.string() + " to " + path + ": " + ec.message());
  }
}

}  // namespace pix2pix::metrics
