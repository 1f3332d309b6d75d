#include "pix2pix/infer/sample_images.hpp"

#include <opencv2/imgcodecs.hpp>

#include <filesystem>
#include <vector>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/npy_file.hpp"
#include "pix2pix/data/samples.hpp"
#include "pix2pix/metrics/image_file.hpp"

namespace pix2pix::infer {

torch::Tensor mat_to_tensor(const cv::Mat& image) {
  cv::Mat dense = image.isContinuous() ? image : image.clone();
  const auto sample = data::sample_type_of(dense.depth());
  if (!sample) throw Error("an image of a depth translate does not take (8-bit, 16-bit or float)");
  // As the file's values are held in memory: uint16 as int32 (See Note [uint16 in memory]).
  if (data::traits(*sample).in_memory == data::InMemory::int32) dense.convertTo(dense, CV_32S);
  return torch::from_blob(dense.data, {dense.rows, dense.cols, dense.channels()}, data::tensor_type(*sample)).clone();
}

cv::Mat values_to_mat(const torch::Tensor& chw, data::SampleType type) {
  const torch::Tensor hwc = chw.permute({1, 2, 0}).to(torch::kCPU, torch::kFloat32).contiguous();
  const cv::Mat values(static_cast<int>(hwc.size(0)), static_cast<int>(hwc.size(1)),
                       CV_32FC(static_cast<int>(hwc.size(2))), hwc.data_ptr<float>());
  cv::Mat out;
  values.convertTo(out, data::traits(type).cv_depth);  // whole values in range: exact (a copy either way)
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
  if (!data::is_integer(type)) return channels == 1 && can_write("tif") ? "tif" : "npy";
  return "png";
}

std::string output_format_problem(const std::string& format, data::SampleType type, int channels) {
  if (format != "png" && format != "jpg" && format != "tif" && format != "npy")
    return "--format must be one of png, jpg, tif, npy; got '" + format + "'";
  if (format == "npy") return "";
  const std::string what =
      data::to_string(type) + " outputs of " + std::to_string(channels) + " channel" + (channels == 1 ? "" : "s");
  if (channels != 1 && channels != 3) return "--format " + format + " cannot hold " + what + ": use npy";
  // JPEG holds 8 bits; PNG and TIFF whole values of 8 and 16; float values only TIFF (grey).
  const data::SampleTraits& values = data::traits(type);
  if (values.integer && values.stored_bytes > (format == "jpg" ? 1 : 2))
    return "--format " + format + " cannot hold " + what +
           (values.stored_bytes > 2 ? ": use npy" : ": use png, tif or npy");
  if (!values.integer && channels != 1)  // See Note [float TIFF, one channel]
    return "--format " + format + " cannot hold " + what + ": use npy";
  if (!values.integer && format != "tif")
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
    const auto type = data::sample_type_of(dense.depth());
    if (!type)
      throw Error(path + ": an image of OpenCV depth " + std::to_string(dense.depth()) + " has no sample type");
    const char* descr = data::traits(*type).npy_descr;
    std::vector<std::int64_t> shape = {dense.rows, dense.cols};
    if (dense.channels() > 1) shape.push_back(dense.channels());
    data::write_npy_bytes(path, descr, shape, dense.data, dense.total() * dense.elemSize());
    return;
  }
  metrics::write_image_atomically(path, dense);
}

}  // namespace pix2pix::infer
