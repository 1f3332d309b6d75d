#include "pix2pix/metrics/image_file.hpp"

#include <cstdint>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <string_view>
#include <vector>

#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::metrics {

void write_image_atomically(const std::string& path, const torch::Tensor& hwc) {
  const auto pixels = hwc.to(torch::kCPU).to(torch::kUInt8).contiguous();
  if (pixels.dim() != 3 || (pixels.size(2) != 1 && pixels.size(2) != 3))
    throw Error("cannot write " + path + ": not an [H, W, 1|3] image");
  write_image_atomically(path, cv::Mat(static_cast<int>(pixels.size(0)), static_cast<int>(pixels.size(1)),
                                       CV_8UC(static_cast<int>(pixels.size(2))), pixels.data_ptr<std::uint8_t>()));
}

void write_image_atomically(const std::string& path, const cv::Mat& image) {
  namespace fs = std::filesystem;
  cv::Mat out;
  if (image.channels() == 3)
    cv::cvtColor(image, out, cv::COLOR_RGB2BGR);
  else
    out = image;
  // Encoded in memory and written by us, so that every write is checked: cv::imwrite does not
  // report a full disk (it left empty PNGs under their final names, exit status 0).
  std::vector<std::uint8_t> encoded;
  const std::string extension = fs::path(path).extension().string();
  bool ok = false;
  try {
    ok = cv::imencode(extension, out, encoded);
  } catch (const cv::Exception& e) {
    throw Error("cannot write " + path + ": " + e.what());
  }
  if (!ok) throw Error("cannot write " + path + ": OpenCV cannot encode such '" + extension + "' images");
  write_file_atomically(path, std::string_view(reinterpret_cast<const char*>(encoded.data()), encoded.size()));
}

}  // namespace pix2pix::metrics
