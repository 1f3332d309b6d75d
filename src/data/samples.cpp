// Conversions between stored values and the networks' [-1, 1] (see samples.hpp).
#include "pix2pix/data/samples.hpp"

#include <algorithm>
#include <cmath>

namespace pix2pix::data {

torch::ScalarType tensor_type(SampleType type) {
  switch (traits(type).in_memory) {  // See Note [the sample-type table]
    case InMemory::uint8:
      return torch::kUInt8;
    case InMemory::int32:
      return torch::kInt32;
    case InMemory::float32:
      break;
  }
  return torch::kFloat32;
}

torch::Tensor to_model_input(const torch::Tensor& nhwc, const ValueRange& range) {
  // (v - lo) / s - 1 with s = (hi - lo) / 2, as v / s - (lo / s + 1): for [0, 255] exactly the
  // v / 127.5 - 1 of 8-bit data. Never writes to `nhwc`.
  const double half = range.peak() / 2.0;
  return nhwc.permute({0, 3, 1, 2}).to(torch::kFloat32).div(half).sub_(range.lo / half + 1.0);
}

torch::Tensor to_samples(const torch::Tensor& images, const DomainSamples& samples) {
  const double half = samples.range.peak() / 2.0;
  auto values = (images.to(torch::kFloat32) + 1.0) * half;
  if (samples.range.lo != 0) values.add_(samples.range.lo);
  if (is_integer(samples.type)) values.round_();
  return values.clamp_(samples.range.lo, samples.range.hi);
}

std::string NonFiniteValue::describe() const {
  return std::string(std::isnan(value) ? "NaN"
                     : value > 0       ? "+inf"
                                       : "-inf") +
         " at row " + std::to_string(row) + ", column " + std::to_string(column) + ", band " + std::to_string(band);
}

std::optional<NonFiniteValue> first_non_finite(const torch::Tensor& images) {
  if (!images.is_floating_point() || images.numel() == 0) return std::nullopt;
  constexpr std::int64_t kPiece = 1 << 22;
  const auto flat = images.reshape({-1});
  for (std::int64_t first = 0; first < flat.numel(); first += kPiece) {
    const auto piece = flat.narrow(0, first, std::min(kPiece, flat.numel() - first));
    if (torch::isfinite(piece).all().item<bool>()) continue;
    const std::int64_t at = first + (~torch::isfinite(piece)).nonzero()[0][0].item<std::int64_t>();
    const std::int64_t h = images.size(1), w = images.size(2), c = images.size(3), pixel = at % (h * w * c);
    return NonFiniteValue{at / (h * w * c), pixel / (w * c), pixel / c % w, pixel % c, flat[at].item<float>()};
  }
  return std::nullopt;
}

}  // namespace pix2pix::data
