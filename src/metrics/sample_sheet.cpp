#include "pix2pix/metrics/sample_sheet.hpp"

#include <opencv2/imgproc.hpp>

namespace pix2pix::metrics {
namespace {

constexpr std::int64_t kHeader = 24;  // pixel rows of the label band
constexpr double kFontScale = 0.45;

// What a tile shows of C channels: grey (1) and colour (3) as they are; of multi-band data the
// first three channels as RGB, of two channels the first as grey.
torch::Tensor shown(const torch::Tensor& pixels) {
  const std::int64_t c = pixels.size(1);
  return c == 1 || c == 3 ? pixels : pixels.narrow(1, 0, c > 3 ? 3 : 1);
}

// [n, C, H, W] pixels → [n, H, W, channels] uint8, grey replicated to RGB when needed.
torch::Tensor to_rows(const torch::Tensor& pixels, std::int64_t channels) {
  auto t = shown(pixels);
  if (t.size(1) != channels) t = t.expand({t.size(0), channels, t.size(2), t.size(3)});
  return t.permute({0, 2, 3, 1}).to(torch::kUInt8);
}

}  // namespace

torch::Tensor sample_rows(const torch::Tensor& a_pixels, const torch::Tensor& fake_pixels,
                          const torch::Tensor& real_pixels) {
  const std::int64_t channels =
      std::max({shown(a_pixels).size(1), shown(fake_pixels).size(1), shown(real_pixels).size(1)});
  return torch::cat({to_rows(a_pixels, channels), to_rows(fake_pixels, channels), to_rows(real_pixels, channels)},
                    /*dim=*/2);
}

SampleSheetLayout sample_sheet_layout(std::int64_t tile_height, std::int64_t tile_width) {
  const std::int64_t side = std::max<std::int64_t>(1, std::min(tile_height, tile_width));
  return {(kSampleTileSide + side - 1) / side, kHeader};
}

torch::Tensor sample_sheet(const std::vector<torch::Tensor>& rows, const SampleLabels& labels) {
  const auto all = torch::cat(rows, 0).cpu();  // [k, H, 3W, C]
  const std::int64_t k = all.size(0), h = all.size(1), w = all.size(2) / 3, c = all.size(3);
  const auto layout = sample_sheet_layout(h, w);
  // Nearest neighbour by a whole factor: each pixel becomes a scale x scale block.
  const auto big = all.repeat_interleave(layout.scale, 1).repeat_interleave(layout.scale, 2);
  auto sheet = torch::full({layout.header + k * h * layout.scale, 3 * w * layout.scale, c}, 48, torch::kUInt8);
  sheet.narrow(0, layout.header, k * h * layout.scale).copy_(big.reshape({k * h * layout.scale, -1, c}));
  cv::Mat band(static_cast<int>(layout.header), static_cast<int>(sheet.size(1)), CV_8UC(static_cast<int>(c)),
               sheet.data_ptr<std::uint8_t>());
  const int tile = static_cast<int>(w * layout.scale);
  for (int j = 0; j < 3; ++j) {
    int baseline = 0;
    const cv::Size size =
        cv::getTextSize(labels[static_cast<size_t>(j)], cv::FONT_HERSHEY_SIMPLEX, kFontScale, 1, &baseline);
    const int x = j * tile + std::max(2, (tile - size.width) / 2);
    cv::putText(band, labels[static_cast<size_t>(j)], cv::Point(x, static_cast<int>(layout.header) - 8),
                cv::FONT_HERSHEY_SIMPLEX, kFontScale, cv::Scalar::all(255), 1, cv::LINE_AA);
  }
  return sheet;
}

}  // namespace pix2pix::metrics
