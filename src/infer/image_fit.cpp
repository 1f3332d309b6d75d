#include "pix2pix/infer/image_fit.hpp"

#include <opencv2/imgproc.hpp>

#include <algorithm>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/data/image_ops.hpp"

namespace pix2pix::infer {
namespace {

int round_up(int side, std::int64_t multiple) {
  return static_cast<int>((side + multiple - 1) / multiple * multiple);
}

int round_nearest(int side, std::int64_t multiple) {
  return static_cast<int>(std::max<std::int64_t>(1, (side + multiple / 2) / multiple) * multiple);
}

cv::Mat resized(const cv::Mat& image, int height, int width) {
  if (image.rows == height && image.cols == width) return image;
  const bool shrinking = static_cast<std::int64_t>(height) * width < static_cast<std::int64_t>(image.rows) * image.cols;
  return data::resize_bands(image, cv::Size(width, height), shrinking ? cv::INTER_AREA : cv::INTER_CUBIC);
}

}  // namespace

ResizeMode parse_resize_mode(const std::string& text) {
  return parse_choice(text, "--resize", Choices<ResizeMode>{{"model", ResizeMode::model}, {"none", ResizeMode::none}});
}

FitPlan plan_fit(int height, int width, ResizeMode mode, const ModelGeometry& g) {
  FitPlan plan;
  plan.height = height;
  plan.width = width;
  if (mode == ResizeMode::none) {
    plan.model_height = round_up(height, g.multiple);
    plan.model_width = round_up(width, g.multiple);
    return plan;
  }
  plan.resize = true;
  const bool known = g.trained_height > 0 && g.trained_width > 0;
  plan.model_height = known ? static_cast<int>(g.trained_height) : round_nearest(height, g.multiple);
  plan.model_width = known ? static_cast<int>(g.trained_width) : round_nearest(width, g.multiple);
  return plan;
}

cv::Mat to_model_size(const cv::Mat& image, const FitPlan& plan) {
  if (plan.resize) return resized(image, plan.model_height, plan.model_width);
  if (image.rows == plan.model_height && image.cols == plan.model_width) return image;
  cv::Mat out;
  cv::copyMakeBorder(image, out, 0, plan.model_height - image.rows, 0, plan.model_width - image.cols,
                     cv::BORDER_REFLECT_101);
  return out;
}

cv::Mat to_image_size(const cv::Mat& output, const FitPlan& plan) {
  if (plan.resize) return resized(output, plan.height, plan.width);
  return output(cv::Rect(0, 0, plan.width, plan.height)).clone();
}

}  // namespace pix2pix::infer
