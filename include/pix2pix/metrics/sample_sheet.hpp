// Sample grids a person can look at: rows of three tiles (input | output | target, or what a
// model compares), each tile enlarged by a whole factor (nearest neighbour, so no pixel is
// invented) to at least kSampleTileSide pixels, under a header naming the columns. Validation
// (the run's samples/epoch_NNNN.png) and `evaluate` (samples.png) both write these.
#pragma once

#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace pix2pix::metrics {

inline constexpr std::int64_t kSampleTileSide = 128;

// The three tiles of a row from float [n, C, H, W] pixel tensors: uint8 [n, H, 3W, C] with C the
// larger channel count shown (grey replicated). Multi-band images (C > 3) show their first three
// channels as RGB, two-channel ones their first as grey.
torch::Tensor sample_rows(const torch::Tensor& a_pixels, const torch::Tensor& fake_pixels,
                          const torch::Tensor& real_pixels);

// Where an image of tile size H x W lands on a sheet: tiles `scale` times larger, under a header
// of `header` pixel rows. Tile (row i, column j) starts at y = header + i*H*scale, x = j*W*scale.
struct SampleSheetLayout {
  std::int64_t scale = 1, header = 0;
};
SampleSheetLayout sample_sheet_layout(std::int64_t tile_height, std::int64_t tile_width);

using SampleLabels = std::array<std::string, 3>;
// Rows of sample_rows stacked into one sheet: uint8 [header + k*H*scale, 3*W*scale, C] on the CPU,
// the header dark grey with each column's label in white.
torch::Tensor sample_sheet(const std::vector<torch::Tensor>& rows, const SampleLabels& labels);

}  // namespace pix2pix::metrics
