// Test tensors for the fused kernels on a CPU (kernels_on_cpu_test.cpp,
// fused_functions_on_cpu_test.cpp): NHWC batches of a kernel's element type, and the float32 values
// ATen's GPU operations compute in.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace pix2pix::fixtures {

// A random [N, C, H, W] batch of `type` in NHWC memory (the kernels' rows of C), scaled and shifted.
inline torch::Tensor nhwc(const std::vector<std::int64_t>& shape, torch::ScalarType type, double scale = 1,
                          double shift = 0) {
  return (torch::randn(shape) * scale + shift).to(type).contiguous(torch::MemoryFormat::ChannelsLast);
}

// A tensor's values in float32: each of ATen's GPU operations computes in float32 (its opmath) and
// rounds its result to the element type, which is how the tests' references are computed (LibTorch
// 1.13 has no CPU fp16 kernel for several of these operations).
inline torch::Tensor f32(const torch::Tensor& t) {
  return t.to(torch::kFloat32);
}

// "BFloat16 [3, 64, 5, 7]": a case's name in a failure's trace.
inline std::string trace(torch::ScalarType type, const std::vector<std::int64_t>& shape) {
  return std::string(c10::toString(type)) + " " + c10::str(c10::IntArrayRef(shape));
}

}  // namespace pix2pix::fixtures
