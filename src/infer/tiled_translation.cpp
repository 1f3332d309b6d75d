// Note [tiles and their seams]: a generator's output near a tile's edge is computed from a
// reflected context, not the image's, so it differs from what a whole-image pass gives there.
// Worse, a U-Net is not shift-equivariant: its stride-2 convolutions sample every other pixel,
// so a tile that starts at an offset other than a multiple of 2^num_downs is seen through another
// sampling grid than the whole image and comes out differently everywhere, not only at its edges
// (a 700 x 500 frame, tiles of 256 overlapping by 32: 26 grey levels mean difference from the
// whole-image pass when they started 16 pixels off the grid, 0.17 on it; docs/results.md). So tiles start on multiples
// of the generator's side multiple: the stride tile - overlap is rounded down to one (the overlap grows; translate says
// so) and the margin in front rounded up to one.
// Tiles therefore overlap by --overlap pixels, and every output pixel is the weighted mean of the
// tiles that cover it, each tile weighted by a raised-cosine ramp that falls towards its edges:
// the pixels a tile saw with little context count little, and the weights change smoothly, so no
// seam is drawn where one tile's output hands over to the next. The image is reflection-padded by
// about overlap / 2 in front (and as much as the grid needs behind), so that its own border pixels
// sit inside a tile's ramp rather than at its outer edge. Memory: the padded image, its weighted sum
// and the weights in float32 (about 4 (C_in + C_out + 1) bytes a pixel: 0.4 GB for a 4000 x 3000
// RGB frame), and one batch of tiles through the generator. What tiling costs in accuracy is
// measured in docs/results.md ("Tiled translation: the seams").
#include "pix2pix/infer/tiled_translation.hpp"

#include <opencv2/core.hpp>

#include <algorithm>
#include <cmath>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/memory_budget.hpp"
#include "pix2pix/data/batch_loader.hpp"
#include "pix2pix/infer/sample_images.hpp"

namespace pix2pix::infer {
namespace {
const double kPi = std::acos(-1.0);  // M_PI is POSIX, not C++17
}  // namespace

TileOptions fit_tiles(const TileOptions& asked, std::int64_t m) {
  if (asked.tile < m || asked.tile % m != 0)
    throw UsageError("--tile " + std::to_string(asked.tile) + ": this generator takes sides that are multiples of " +
                     std::to_string(m) + ", so a tile must be one (" + std::to_string(m) + ", " +
                     std::to_string(2 * m) + ", ...)");
  if (asked.overlap < 0 || asked.overlap > asked.tile - m)
    throw UsageError("--overlap " + std::to_string(asked.overlap) + " must be at least 0 and at most --tile " +
                     std::to_string(asked.tile) + " minus " + std::to_string(m) +
                     ", so that neighbouring tiles start a multiple of " + std::to_string(m) + " apart");
  if (asked.batch < 1) throw UsageError("--batch-size must be at least 1");
  TileOptions fitted = asked;
  fitted.overlap = asked.tile - (asked.tile - asked.overlap) / m * m;
  return fitted;
}

TileAxis plan_tile_axis(std::int64_t side, const TileOptions& tiles, std::int64_t m) {
  const std::int64_t stride = tiles.tile - tiles.overlap;
  TileAxis axis;
  axis.before = (tiles.overlap / 2 + m - 1) / m * m;
  // Enough tiles that the last one reaches past the image by overlap / 2 as well.
  const std::int64_t needed = side + 2 * axis.before;
  axis.count = needed <= tiles.tile ? 1 : 1 + (needed - tiles.tile + stride - 1) / stride;
  axis.after = (axis.count - 1) * stride + tiles.tile - side - axis.before;
  return axis;
}

torch::Tensor tile_window(const TileOptions& tiles) {
  auto ramp = torch::ones({tiles.tile}, torch::kFloat32);
  const std::int64_t o = tiles.overlap;
  for (std::int64_t t = 0; t < o; ++t) {
    // 0.5 - 0.5 cos(pi (t + 0.5) / o): from just above 0 to just below 1 across the overlap.
    const float w = static_cast<float>(0.5 - 0.5 * std::cos(kPi * (static_cast<double>(t) + 0.5) / o));
    ramp[t] = w;
    ramp[tiles.tile - 1 - t] = w;
  }
  return ramp.unsqueeze(1) * ramp.unsqueeze(0);
}

cv::Mat translate_tiled(nets::Generator& generator, const cv::Mat& image, const TileOptions& asked,
                        const torch::Device& device, optim::Precision precision, const data::ValueRange& input_range,
                        const data::DomainSamples& output) {
  const std::int64_t m = nets::side_multiple(generator->options());
  TileOptions tiles = fit_tiles(asked, m);
  TileAxis rows = plan_tile_axis(image.rows, tiles, m), cols = plan_tile_axis(image.cols, tiles, m);
  // A tile larger than the image needs would pad it out to the tile (--tile 32768 on a 32 x 32
  // image: 4 GiB): one tile of the smallest side that still covers it does the same work.
  if (rows.count == 1 && cols.count == 1) {
    const std::int64_t needed = std::max(image.rows, image.cols) + 2 * rows.before;
    const std::int64_t smallest = std::max<std::int64_t>(m, (needed + m - 1) / m * m);
    if (smallest < tiles.tile) {
      tiles = fit_tiles({smallest, std::min(tiles.overlap, smallest - m), tiles.batch}, m);
      rows = plan_tile_axis(image.rows, tiles, m), cols = plan_tile_axis(image.cols, tiles, m);
    }
  }
  // What the padded image, its weighted sum and the weights hold in float32, checked before
  // anything is allocated: an image too large is named, not a trace. See Note [tiles and their seams].
  const std::int64_t padded_pixels =
      saturating_product({rows.before + image.rows + rows.after, cols.before + image.cols + cols.after});
  require_memory(saturating_product({padded_pixels, 4, image.channels() + generator->options().out_channels + 1}),
                 "translating a " + std::to_string(image.cols) + "x" + std::to_string(image.rows) +
                     " image in tiles of " + std::to_string(tiles.tile));
  cv::Mat padded;
  // OpenCV reflects again past the far side, so any margin works, a 1-pixel side included.
  cv::copyMakeBorder(image, padded, static_cast<int>(rows.before), static_cast<int>(rows.after),
                     static_cast<int>(cols.before), static_cast<int>(cols.after), cv::BORDER_REFLECT_101);
  if (!padded.isContinuous()) padded = padded.clone();
  const torch::Tensor input =
      data::to_model_input(mat_to_tensor(padded).unsqueeze(0), input_range).to(device);  // [1, C, Hp, Wp] in [-1, 1]
  const std::int64_t out_channels = generator->options().out_channels;
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(device);
  torch::Tensor sum = torch::zeros({out_channels, padded.rows, padded.cols}, f32);
  torch::Tensor weight = torch::zeros({padded.rows, padded.cols}, f32);
  const torch::Tensor window = tile_window(tiles).to(device);
  const std::int64_t stride = tiles.tile - tiles.overlap, t = tiles.tile;
  std::vector<std::pair<std::int64_t, std::int64_t>> corners;
  for (std::int64_t r = 0; r < rows.count; ++r)
    for (std::int64_t c = 0; c < cols.count; ++c) corners.emplace_back(r * stride, c * stride);
  torch::NoGradGuard no_grad;
  for (std::size_t first = 0; first < corners.size(); first += static_cast<std::size_t>(tiles.batch)) {
    throw_if_interrupted("translating tiles");
    const std::size_t last = std::min(corners.size(), first + static_cast<std::size_t>(tiles.batch));
    std::vector<torch::Tensor> batch;
    for (std::size_t i = first; i < last; ++i)
      batch.push_back(input[0].narrow(1, corners[i].first, t).narrow(2, corners[i].second, t));
    torch::Tensor out;
    {
      optim::AutocastGuard autocast(device, precision);
      out = generator->forward(torch::stack(batch));
    }
    out = out.to(torch::kFloat32);
    for (std::size_t i = first; i < last; ++i) {
      const auto [y, x] = corners[i];
      sum.narrow(1, y, t).narrow(2, x, t).add_(out[static_cast<std::int64_t>(i - first)] * window);
      weight.narrow(0, y, t).narrow(1, x, t).add_(window);
    }
  }
  // data::to_samples, in place: no more image-sized temporaries than the sum itself (for 8-bit
  // outputs exactly metrics::to_pixels).
  sum.div_(weight).add_(1.0).mul_(output.range.peak() / 2.0);
  if (output.range.lo != 0) sum.add_(output.range.lo);
  if (data::is_integer(output.type)) sum.round_();
  sum.clamp_(output.range.lo, output.range.hi);
  return values_to_mat(sum.narrow(1, rows.before, image.rows).narrow(2, cols.before, image.cols), output.type);
}

}  // namespace pix2pix::infer
