// `translate --tile T --overlap O`: an image of any size translated at its own resolution in T x T
// tiles, the overlaps blended, so that memory grows with the batch of tiles and the image, never
// with one forward pass over the whole image (See Note [tiles and their seams]).
#pragma once

#include <torch/torch.h>

#include <opencv2/core.hpp>

#include <cstdint>

#include "pix2pix/data/sample_types.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/nets/val_mode.hpp"
#include "pix2pix/optim/precision.hpp"

namespace pix2pix::infer {

struct TileOptions {
  std::int64_t tile = 0;     // side of a square tile (0: no tiling)
  std::int64_t overlap = 0;  // pixels two neighbouring tiles share
  std::int64_t batch = 8;    // tiles per forward pass
};

// The tiling as it runs for a generator whose sides are multiples of `side_multiple` (a U-Net's
// 2^num_downs): tiles start on multiples of it, so the overlap is grown until tile - overlap is
// one (See Note [tiles and their seams]). UsageError naming --tile or --overlap unless the tile is
// a positive multiple of `side_multiple` and 0 <= overlap <= tile - side_multiple.
TileOptions fit_tiles(const TileOptions& asked, std::int64_t side_multiple);

// Where the tiles of one axis of `side` pixels lie, for fitted `tiles`: the image is
// reflection-padded by `before` pixels in front (overlap / 2 rounded up to `side_multiple`, so
// that no image pixel sits at a tile's outer edge) and `after` behind, and tile i starts at
// i * (tile - overlap) in the padded axis.
struct TileAxis {
  std::int64_t before = 0, after = 0, count = 0;
};
TileAxis plan_tile_axis(std::int64_t side, const TileOptions& tiles, std::int64_t side_multiple);

// The weight of each pixel of a tile when overlapping outputs are averaged: a raised-cosine ramp
// over `overlap` pixels at each edge (positive everywhere), 1 inside; float [tile, tile].
torch::Tensor tile_window(const TileOptions& tiles);

// `image` (H x W x C values, C the generator's input channels, mapped to [-1, 1] by `input`)
// through `generator` tile by tile (`tiles` as asked: fitted here): H x W x C_out values of
// `output`'s type and range (data::to_samples). The generator runs on `device` as it is (its mode
// already set).
cv::Mat translate_tiled(nets::Generator& generator, const cv::Mat& image, const TileOptions& tiles,
                        const torch::Device& device, optim::Precision precision, const data::ValueRange& input = {},
                        const data::DomainSamples& output = {});

}  // namespace pix2pix::infer
