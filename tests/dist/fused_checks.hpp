// Checks of the fused kernels' layers that run on any device the kernels run on: a GPU's
// (scripts/gpu-smoke.sh), this CPU's with the kernels' source as C++ (See Note [CUDA kernels on a CPU];
// fused_functions_on_cpu_test.cpp), and a CPU's without them, where the model's stand-ins take
// ATen's operations (fused_layers_over_ranks_test.cpp).
#pragma once

#include <torch/torch.h>

#include <string>

#include "pix2pix/nets/sync_batch_norm.hpp"

namespace pix2pix::fixtures {

// Varied scales and shifts for `channels` channels: a layer that skipped one would differ.
struct Affine {
  torch::Tensor weight, bias;
};
Affine varied_affine(std::int64_t channels);

// A layer over ranks with `affine`'s scales and shifts, on `device`.
nets::SyncBatchNorm2d synced_layer(const Affine& affine, nets::BatchStatsSum sum, const torch::Device& device);

// What the layer over ranks is followed by: LeakyReLU (the model's batch_norm_leaky_relu), or the
// outer U-Net level's concatenation with its ReLU (the model's concat_batch_norm_relu;
// See Note [fused concatenation, batch norm and ReLU]).
enum class Next { leaky_relu, concatenation };

// Four ranks (replayed one after another) of different batches (3, 1, 2, 2 images) each take
// their slice of an NHWC batch of `type` on `device` through the model's stand-in; together they
// must be the whole batch's batch norm and `next`. The output against the float64 value of the
// whole batch's statistics (within the element type's rounding; a concatenation's skip half bit for
// bit), every rank's running statistics against the whole batch's, and the input's gradient and the
// ranks' scale and shift gradients summed against the exact ones on the output's signs; each rank's
// output from the autograd function named `function`.
void expect_ranks_give_the_whole_batch(const torch::Device& device, torch::ScalarType type, std::int64_t channels,
                                       Next next, const std::string& function);

}  // namespace pix2pix::fixtures
