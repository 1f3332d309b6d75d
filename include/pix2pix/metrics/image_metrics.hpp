// Image quality on [0, peak] (255 for 8-bit images; a domain's range, hi - lo, for others): PSNR
// (the early-stopping signal of Lupión et al.) and SSIM.
#pragma once

#include <torch/torch.h>

namespace pix2pix::metrics {

// PSNR reported for identical images, where the formula would give infinity.
inline constexpr double kPsnrCap = 100.0;

// Maps generator output in [-1, 1] to [0, 255] as an image file would hold it (rounded, clamped).
torch::Tensor to_pixels(const torch::Tensor& images);

// Per-image PSNR in dB of `fake` against `real`, both float [n, C, H, W] of values whose range
// spans `peak` (255: pixels). Returns [n].
torch::Tensor psnr_per_image(const torch::Tensor& fake, const torch::Tensor& real, double peak = 255.0);

// Per-image SSIM (Wang et al. 2004): 11x11 Gaussian window, sigma 1.5, K1 0.01, K2 0.03, L `peak`,
// valid region only, averaged over the map and the channels. Images smaller than 11 px use a
// window of their size. Returns [n].
torch::Tensor ssim_per_image(const torch::Tensor& fake, const torch::Tensor& real, double peak = 255.0);

}  // namespace pix2pix::metrics
