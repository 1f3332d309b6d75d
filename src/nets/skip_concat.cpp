#include "pix2pix/nets/skip_concat.hpp"

namespace pix2pix::nets {
namespace {

// Note [the skip's gradient in one piece]
// The gradient of torch::cat along the channels is cut into narrow views of the output's
// gradient, and a channel slice is contiguous in neither layout: in NHWC each pixel's channels
// are split between the two parts. The submodule's part goes straight into its last layer's
// backward, batch norm's in the U-Net, and ATen's CUDA batch norm takes its NHWC kernels only for
// a gradient contiguous in NHWC: given the slice, it fell back to the NCHW kernels, which read
// NHWC memory across its channel stride. On an H200 at 256², batch 64 in bf16, the three largest
// such layers took 2.2 ms of a 25 ms step, the NHWC kernels a sixth of that
// (docs/performance.md, "Issue 46 without a GPU: the skip's gradient in one
// piece, and the batch cast once"). So the submodule's part is made contiguous in
// the gradient's own layout, one copy of it; in NCHW ATen's batch norm made that very copy
// itself (aten::contiguous in its backward), so there it only moves. The skip's own part stays a
// view: it is summed into the gradient of the submodule's first layer, which takes it as well
// strided as copied. The values are torch::cat's, bit for bit (tests/nets/networks_test.cpp).
class SkipConcat : public torch::autograd::Function<SkipConcat> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& skip,
                               const torch::Tensor& inner) {
    ctx->saved_data["skip_channels"] = skip.size(1);
    return torch::cat({skip, inner}, 1);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::Tensor& grad = grads[0];
    const std::int64_t skip_channels = ctx->saved_data["skip_channels"].toInt();
    return {grad.narrow(1, 0, skip_channels),
            grad.narrow(1, skip_channels, grad.size(1) - skip_channels).contiguous(grad.suggest_memory_format())};
  }
};

}  // namespace

torch::Tensor skip_concat(const torch::Tensor& skip, const torch::Tensor& inner) {
  return SkipConcat::apply(skip, inner);
}

}  // namespace pix2pix::nets
