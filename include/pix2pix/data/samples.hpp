// Tensors of a domain's stored values and the networks' [-1, 1], both ways (data/sample_types.hpp
// says what a domain's samples are).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>

#include "pix2pix/data/sample_types.hpp"

namespace pix2pix::data {

// The tensor type that holds `type`'s values in memory: kUInt8, kInt32, kFloat32 (See Note
// [uint16 in memory]).
torch::ScalarType tensor_type(SampleType type);

// Stored values [n, H, W, C] (as PairedDataset reads them, any sample type) → float [n, C, H, W]
// in [-1, 1], on the tensor's device: (v - lo) / (hi - lo) * 2 - 1. For uint8 on [0, 255] this is
// v / 127.5 - 1, bit for bit what the loader computed before ranges existed.
torch::Tensor to_model_input(const torch::Tensor& nhwc, const ValueRange& range = {});
// The inverse, as a file of `samples` would hold it: float [n, C, H, W] in the domain's own
// units, rounded to whole values for integer types, clamped to the range. uint8 on [0, 255] gives
// exactly metrics::to_pixels.
torch::Tensor to_samples(const torch::Tensor& images, const DomainSamples& samples);

// The first NaN or infinite value of float images [n, H, W, C] (none for integer types), looked
// for in pieces of 4 Mi values: a mask of a whole block would add a quarter of its size.
struct NonFiniteValue {
  std::int64_t image = 0, row = 0, column = 0, band = 0;  // `image`: its index in `images`
  float value = 0;
  std::string describe() const;  // "NaN at row 5, column 7, band 0" ("+inf", "-inf")
};
std::optional<NonFiniteValue> first_non_finite(const torch::Tensor& images);

}  // namespace pix2pix::data
