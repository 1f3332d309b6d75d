// Image files written whole or not at all: sample grids, evaluation grids, translated images.
#pragma once

#include <torch/torch.h>

#include <opencv2/core.hpp>

#include <string>

namespace pix2pix::metrics {

// Writes uint8 [H, W, C] (C = 1 grey or 3 RGB, any device) to `path` in the format its extension
// names (.png, .jpg, ...) through a temporary name in the same folder, renamed into place: an
// interrupted or failed write leaves no partial image (and any previous file untouched).
// Error naming the file otherwise.
void write_image_atomically(const std::string& path, const torch::Tensor& hwc);
// The same for an image of any depth the extension's format holds (16-bit PNG and TIFF, float
// TIFF), RGB order for 3 channels.
void write_image_atomically(const std::string& path, const cv::Mat& image);

}  // namespace pix2pix::metrics
