#include "pix2pix/data/npy_image.hpp"

#include <torch/torch.h>

#include "pix2pix/common/error.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/data/npy_file.hpp"

namespace pix2pix::data {

cv::Mat read_npy_image(const std::string& path, std::string* error) {
  torch::Tensor array;
  try {
    array = read_npy(path);
  } catch (const Error& e) {
    const std::string what = e.what();
    *error = what.rfind(path + ": ", 0) == 0 ? what.substr(path.size() + 2) : what;
    return cv::Mat();
  }
  if (array.dim() != 2 && array.dim() != 3) {
    *error = "a .npy image is H x W or H x W x C; this array has " + std::to_string(array.dim()) + " dimensions";
    return cv::Mat();
  }
  const std::int64_t channels = array.dim() == 3 ? array.size(2) : 1;
  if (channels < 1 || channels > format::kMaxChannels || array.size(0) < 1 || array.size(1) < 1 ||
      array.size(0) > format::kMaxSide || array.size(1) > format::kMaxSide) {
    *error = "shape " + c10::str(array.sizes()) + ": at most " + std::to_string(format::kMaxSide) + " per side and " +
             std::to_string(format::kMaxChannels) + " channels";
    return cv::Mat();
  }
  int depth = CV_8U;
  switch (array.scalar_type()) {
    case torch::kUInt8:
      break;
    case torch::kInt32:                 // read_npy's uint16
      array = array.to(torch::kInt16);  // the same 16 bits; cv::Mat reads them as unsigned below
      depth = CV_16U;
      break;
    case torch::kFloat32:
      depth = CV_32F;
      break;
    default:
      *error = "float64 values; store the array as float32 (numpy: a.astype('float32'))";
      return cv::Mat();
  }
  array = array.contiguous();
  const cv::Mat view(static_cast<int>(array.size(0)), static_cast<int>(array.size(1)),
                     CV_MAKETYPE(depth, static_cast<int>(channels)), array.data_ptr());
  return view.clone();
}

}  // namespace pix2pix::data
