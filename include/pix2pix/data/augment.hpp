// The pix2pix augmentation as batched tensor ops on the device: random jitter (resize to
// load_size, random crop to crop_size) and horizontal flip, the same for A and B of a pair.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace pix2pix::data {

// resize_and_crop: resize to load_size then random crop (pix2pix's default); crop: random crop
// at the stored size; none: no jitter and no flip (the stored image as it is).
enum class Preprocess { resize_and_crop, crop, none };
Preprocess parse_preprocess(const std::string& text);  // Error naming --preprocess otherwise
std::string to_string(Preprocess preprocess);

struct AugmentOptions {
  Preprocess preprocess = Preprocess::resize_and_crop;
  std::int64_t load_size = 0;  // resize_and_crop: square side before cropping
  std::int64_t crop_size = 0;  // output side
  bool flip = true;
};

// Random choices for one batch, drawn on the host from a portable generator so that they do
// not depend on the device: crop corner per sample and whether it is mirrored.
struct AugmentDraw {
  std::vector<std::int64_t> top, left;
  std::vector<bool> flip;
};
AugmentDraw draw_augmentation(std::int64_t batch, std::int64_t source_side, const AugmentOptions& o,
                              std::uint64_t seed);

// `images`: float [n, C, H, W] (A and B concatenated on channels so they move together).
// Returns [n, C, crop, crop] for resize_and_crop/crop, `images` itself for none.
torch::Tensor apply_augmentation(const torch::Tensor& images, const AugmentDraw& draw, const AugmentOptions& o);

}  // namespace pix2pix::data
