#include "pix2pix/infer/sample_images.hpp"

#include <opencv2/imgcodecs.hpp>

#include <filesystem>
#include <vector>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/npy_file.hpp"
#include "pix2pix/metrics/image_file.hpp"

namespace pix2pix::infer {

torch::Tensor mat_to_tensor(const cv::Mat& image) {
  cv::Mat dense = image.isContinuous() ? image : image.clone();
  torch::ScalarType type = torch::kUInt8;
  switch (dense.depth()) {
    case CV_8U:
      break;
    case CV_16U:
      dense.convertTo(dense, CV_32S);
      type = torch::kInt32;
      break;
    case CV_32F:
      type = torch::kFloat32;
      break;
    default:
      throw Error("an image of a depth translate does not take (8-bit, 16-bit or float)");
  }
  return torch::from_blob(dense.data, {dense.rows, dense.cols, dense.channels()}, type).clone();
}

cv::Mat values_to_mat(const torch::Tensor& chw, data::SampleType type) {
  const torch::Tensor hwc = chw.permute({1, 2, 0}).to(torch::kCPU, torch::kFloat32).contiguous();
  const cv::Mat values(static_cast<int>(hwc.size(0)), static_cast<int>(hwc.size(1)),
                       CV_32FC(static_cast<int>(hwc.size(2))), hwc.data_ptr<float>());
  cv::Mat out;
  const int depth = type == data::SampleType::uint8 ? CV_8U : type == data::SampleType::uint16 ? CV_16U : CV_32F;
  values.convertTo(out, depth);  // whole values in range: exact (a copy either way)
  return out;
}

// Note [float TIFF, one channel]
// OpenCV 4.6 writes a 3-channel 32-bit float TIFF that it reads back as other numbers (0.25 came
// back as -441.17, measured; grey float TIFFs and 16-bit TIFFs and PNGs of 1 and 3 channels come
// back exactly). So float outputs go to TIFF only when grey; colour ones to .npy.
namespace {
// Whether this OpenCV has an encoder for `format` (the GPU bundle's is built without TIFF).
bool can_write(const std::string& format) {
  return cv::haveImageWriter("x." + format);
}
}  // namespace

std::string default_output_format(data::SampleType type, int channels) {
  if (channels != 1 && channels != 3) return "npy";
  if (type == data::SampleType::float32) return channels == 1 && can_write("tif") ? "tif" : "npy";
  return "png";
}

std::string output_format_problem(const std::string& format, data::SampleType type, int channels) {
  if (format != "png" && format != "jpg" && format != "tif" && format != "npy")
    return "--format must be one of png, jpg, tif, npy; got '" + format + "'";
  if (format == "npy") return "";
  const std::string what =
      data::to_string(type) + " outputs of " + std::to_string(channels) + " channel" + (channels == 1 ? "" : "s");
  if (channels != 1 && channels != 3) return "--format " + format + " cannot hold " + what + ": use npy";
  if (type == data::SampleType::uint16 && format == "jpg")
    return "--format jpg cannot hold " + what + ": use png, tif or npy";
  if (type == data::SampleType::float32 && channels != 1)  // See Note [float TIFF, one channel]
    return "--format " + format + " cannot hold " + what + ": use npy";
  if (type == data::SampleType::float32 && format != "tif")
    return "--format " + format + " cannot hold " + what +
           (can_write("tif") ? ": use tif (32-bit float) or npy" : ": use npy");
  if (!can_write(format))
    return "--format " + format + ": this build's OpenCV cannot write " + format + " files: use npy";
  return "";
}

void write_values_atomically(const std::string& path, const cv::Mat& image) {
  namespace fs = std::filesystem;
  const cv::Mat dense = image.isContinuous() ? image : image.clone();
  const std::string extension = fs::path(path).extension().string();
  if (extension == ".npy") {
    const char* descr = dense.depth() == CV_8U ? "|u1" : dense.depth() == CV_16U ? "<u2" : "<f4";
    std::vector<std::int64_t> shape = {dense.rows, dense.cols};
    if (dense.channels() > 1) shape.push_back(dense.channels());
    data::write_npy_bytes(path, descr, shape, dense.data, dense.total() * dense.elemSize());
    return;
  }
  metrics::write_image_atomically(path, dense);
}

}  // namespace pix2pix::infer
