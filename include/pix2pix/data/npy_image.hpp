// A `.npy` array as an image for prepare: H×W or H×W×C (C ≤ format::kMaxChannels) of uint8,
// uint16 or float32, as a cv::Mat of that depth. Kept apart from npy_file.hpp so that prepare's
// sources need no LibTorch header (See Note [sources without LibTorch]).
#pragma once

#include <opencv2/core.hpp>

#include <string>

namespace pix2pix::data {

// Empty Mat and `*error` set when `path` is not such an array.
cv::Mat read_npy_image(const std::string& path, std::string* error);

}  // namespace pix2pix::data
