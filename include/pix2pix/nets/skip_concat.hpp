// The U-Net's skip connection: an input and its submodule's output joined along the channels.
#pragma once

#include <torch/torch.h>

namespace pix2pix::nets {

// torch::cat({skip, inner}, 1), whose backward hands `inner` its gradient contiguous in the
// gradient's memory format. See Note [the skip's gradient in one piece]
torch::Tensor skip_concat(const torch::Tensor& skip, const torch::Tensor& inner);

}  // namespace pix2pix::nets
