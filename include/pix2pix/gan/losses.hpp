// The Pix2Pix objective. Every loss is a mean over the local batch and all patch elements, so
// that averaging gradients over ranks with equal batches gives the gradient of the global mean
// (global batch x patch elements), as the paper's multi-GPU loss scaling requires.
#pragma once

#include <torch/torch.h>

#include <string>

namespace pix2pix::gan {

enum class GanMode { vanilla, lsgan };
GanMode parse_gan_mode(const std::string& text);  // Error naming --gan-mode otherwise
std::string to_string(GanMode mode);

// vanilla: BCE with logits against 1 (real) or 0 (fake); lsgan: MSE against 1 or 0.
// Computed in fp32 whatever the precision of `logits`.
torch::Tensor gan_loss(const torch::Tensor& logits, bool target_is_real, GanMode mode);

torch::Tensor pixel_l1_loss(const torch::Tensor& fake, const torch::Tensor& real);

}  // namespace pix2pix::gan
