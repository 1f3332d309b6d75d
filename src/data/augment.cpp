// Crop and flip are one gather: the flip is folded into the column index, so a batch costs one
// resize (when jittering) and one indexing kernel whatever its size.
#include "pix2pix/data/augment.hpp"

#include <random>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::data {

namespace {
const Choices<Preprocess> kPreprocessChoices = {
    {"resize_and_crop", Preprocess::resize_and_crop}, {"crop", Preprocess::crop}, {"none", Preprocess::none}};
}  // namespace

Preprocess parse_preprocess(const std::string& text) {
  return parse_choice(text, "--preprocess", kPreprocessChoices);
}
std::string to_string(Preprocess value) {
  return choice_name(value, kPreprocessChoices);
}

AugmentDraw draw_augmentation(std::int64_t batch, std::int64_t source_side, const AugmentOptions& o,
                              std::uint64_t seed) {
  AugmentDraw draw;
  std::mt19937_64 rng(seed);
  const std::int64_t side = o.preprocess == Preprocess::resize_and_crop ? o.load_size : source_side;
  const std::uint64_t range = static_cast<std::uint64_t>(std::max<std::int64_t>(0, side - o.crop_size)) + 1;
  for (std::int64_t i = 0; i < batch; ++i) {
    // Modulo of a 64-bit draw: the bias is far below anything visible for ranges of pixels.
    draw.top.push_back(static_cast<std::int64_t>(rng() % range));
    draw.left.push_back(static_cast<std::int64_t>(rng() % range));
    draw.flip.push_back(o.flip && (rng() >> 63) != 0);
  }
  return draw;
}

torch::Tensor apply_augmentation(const torch::Tensor& images, const AugmentDraw& draw, const AugmentOptions& o) {
  if (o.preprocess == Preprocess::none) return images;
  const std::int64_t n = images.size(0);
  TORCH_CHECK(static_cast<std::int64_t>(draw.top.size()) == n, "augmentation draw does not match the batch");
  torch::Tensor x = images;
  if (o.preprocess == Preprocess::resize_and_crop && (x.size(2) != o.load_size || x.size(3) != o.load_size)) {
    namespace F = torch::nn::functional;
    x = F::interpolate(x, F::InterpolateFuncOptions()
                              .size(std::vector<std::int64_t>{o.load_size, o.load_size})
                              .mode(torch::kBicubic)
                              .align_corners(false))
            .clamp_(-1.0, 1.0);  // bicubic overshoots; keep the [-1, 1] contract
  }
  if (x.size(2) < o.crop_size || x.size(3) < o.crop_size)
    throw Error("--crop-size " + std::to_string(o.crop_size) + " is larger than the image (" +
                std::to_string(x.size(2)) + "x" + std::to_string(x.size(3)) + ")");
  const auto cpu_long = torch::TensorOptions().dtype(torch::kInt64);
  const auto ramp = torch::arange(o.crop_size, cpu_long);
  auto top = torch::tensor(draw.top, cpu_long).unsqueeze(1);
  auto left = torch::tensor(draw.left, cpu_long).unsqueeze(1);
  std::vector<std::uint8_t> flips(draw.flip.begin(), draw.flip.end());
  auto flip = torch::tensor(flips, torch::kUInt8).to(torch::kBool).unsqueeze(1);
  auto rows = top + ramp;                                                        // [n, crop]
  auto cols = torch::where(flip, left + (o.crop_size - 1) - ramp, left + ramp);  // [n, crop]
  const auto device = x.device();
  auto batch_index = torch::arange(n, cpu_long).view({n, 1, 1}).to(device);
  rows = rows.view({n, o.crop_size, 1}).to(device);
  cols = cols.view({n, 1, o.crop_size}).to(device);
  using torch::indexing::Slice;
  // Advanced indices around a slice put the broadcast index dims first: [n, crop, crop, C].
  return x.index({batch_index, Slice(), rows, cols}).permute({0, 3, 1, 2}).contiguous();
}

}  // namespace pix2pix::data
