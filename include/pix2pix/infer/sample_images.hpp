// Images of any sample type on their way through translate: decoded values to tensors, the
// generator's values back to images of the output domain's depth, and those written whole in a
// format that holds them (16-bit PNG/TIFF, grey 32-bit float TIFF, .npy for any type and channels).
#pragma once

#include <torch/torch.h>

#include <opencv2/core.hpp>

#include <string>

#include "pix2pix/data/sample_types.hpp"

namespace pix2pix::infer {

// [H, W, C] of the image's values, a copy: uint8, int32 for 16-bit (See Note [uint16 in memory]),
// float32. Error for another depth.
torch::Tensor mat_to_tensor(const cv::Mat& image);

// Float values [C, H, W] (data::to_samples: already whole and within the range for integer
// types) as an HWC image of `type`'s depth on the CPU.
cv::Mat values_to_mat(const torch::Tensor& chw, data::SampleType type);

// The --format translate writes by default for outputs of `type` with `channels`: png for 8- and
// 16-bit grey or colour, tif for float grey, npy for the rest.
std::string default_output_format(data::SampleType type, int channels);
// "" when files of `format` (png, jpg, tif, npy) hold such outputs, else why not.
std::string output_format_problem(const std::string& format, data::SampleType type, int channels);

// Writes `image` (RGB order for 3 channels) to `path` in the format its extension names (.npy: the
// array [H, W] or [H, W, C] of its type), through a temporary name: whole or not at all. Error
// naming the file otherwise.
void write_values_atomically(const std::string& path, const cv::Mat& image);

}  // namespace pix2pix::infer
