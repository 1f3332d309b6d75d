// A warning for a batch norm that will normalise over too few images.
// See Note [batch norm over too few images].
#pragma once

#include <cstdint>
#include <string>

#include "pix2pix/nets/networks.hpp"

namespace pix2pix::nets {

// Note [batch norm over too few images]
// Batch norm trains with the moments of each batch and is validated (eval mode) with running
// averages of them. Over one image a batch norm is an instance norm: the running statistics then
// average single images' moments, which are not what the network was trained to see, and eval-mode
// validation scores another network. Tried: train-classifier with batch 1 reached a val accuracy
// of 0.29 where batch 32 gave 0.89 (docs/results.md); the paper's batch-1 and 2 Pix2Pix runs
// (10.71 and 9.89 dB against >= 17.2 dB from batch 4 on) may be the same trap. So a run warns when
// its batch norm normalises over fewer than kFewImages images — a rank's batch, or the global
// batch with --sync-bn — while validation runs in eval mode, and names the ways out.
inline constexpr std::int64_t kFewImages = 4;

// "" when `norm` is not batch norm, validation does not run in eval mode, or `images` (what one
// normalisation sees) is at least kFewImages; else the warning, naming `ways_out` ("--sync-bn on,
// a larger --batch-size, --norm instance or --val-mode train").
std::string few_images_warning(Norm norm, std::int64_t images, bool eval_validation, const std::string& ways_out);

}  // namespace pix2pix::nets
