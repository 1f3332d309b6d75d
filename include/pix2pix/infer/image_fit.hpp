// Sizes for translate: the U-Net takes sides that are multiples of 2^num_downs. An image either
// goes through at the size the generator was trained on and comes back resized to its own
// (--resize model), or is padded by reflection to the next multiple and cropped back (none).
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <string>

namespace pix2pix::infer {

enum class ResizeMode { model, none };
ResizeMode parse_resize_mode(const std::string& text);  // UsageError naming --resize otherwise

struct ModelGeometry {
  std::int64_t trained_height = 0, trained_width = 0;  // 0: not recorded (older checkpoints)
  std::int64_t multiple = 1;                           // 2^num_downs
};

// How one image of `height` x `width` reaches the generator and comes back.
struct FitPlan {
  int height = 0, width = 0;              // the image's own size, and its output's
  int model_height = 0, model_width = 0;  // what the generator sees
  bool resize = false;                    // resized (model) rather than padded and cropped (none)
};

// model: the trained size (unknown: each side rounded to the nearest multiple, at least one);
// none: each side rounded up to a multiple.
FitPlan plan_fit(int height, int width, ResizeMode mode, const ModelGeometry& geometry);

// The image at the generator's size: resized (area when shrinking, bicubic when enlarging) or
// padded at the bottom and right by reflection (the edge pixel not repeated, as torch's
// ReflectionPad2d).
cv::Mat to_model_size(const cv::Mat& image, const FitPlan& plan);
// The generator's output back at the image's size: resized the same way, or cropped.
cv::Mat to_image_size(const cv::Mat& output, const FitPlan& plan);

}  // namespace pix2pix::infer
