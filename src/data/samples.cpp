// Conversions between stored values and the networks' [-1, 1] (see samples.hpp).
#include "pix2pix/data/samples.hpp"

namespace pix2pix::data {

torch::ScalarType tensor_type(SampleType type) {
  return type == SampleType::uint8 ? torch::kUInt8 : type == SampleType::uint16 ? torch::kInt32 : torch::kFloat32;
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

}  // namespace pix2pix::data
