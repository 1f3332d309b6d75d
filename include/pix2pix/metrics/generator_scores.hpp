// A generator scored against its targets: the per-image PSNR, SSIM and L1 of G(A) against B, the
// cycle PSNR of back(there(x)) against x and the mean-image baseline (the sample rows they show
// are sample_sheet.hpp's). Validation (train/validator) and `evaluate` (infer/evaluation) both
// report through these, so that the two compute the same figures.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/nets/networks.hpp"
#include "pix2pix/optim/precision.hpp"

namespace pix2pix::metrics {

// Per-image scores of G(A) against B: the functions every PSNR, SSIM and L1 this project reports
// comes from (validation, evaluate). PSNR and SSIM are on the target domain's own values: its
// range's width is the peak (255 for 8-bit data), and G(A) is rounded to whole values where the
// domain stores integers, as a file of it would hold them.
struct PairScores {
  torch::Tensor psnr, ssim, l1;  // float64 [n] on the CPU: PSNR/SSIM on B's range, L1 on [-1, 1]
  torch::Tensor fake_pixels;     // G(A) as float [n, C, H, W] on [0, 255] (8-bit view of B's range), on the device
};
// `a`, `b`: stored values NHWC on `device` (PairedDataset::read_images), of domains `samples_a`
// and `samples_b`. The generator runs as it is (train or eval mode), under autocast for
// `precision`, without gradients.
PairScores score_pairs(nets::Generator& generator, const torch::Tensor& a, const torch::Tensor& b,
                       const torch::Device& device, optim::Precision precision,
                       const data::DomainSamples& samples_a = {}, const data::DomainSamples& samples_b = {});

// Per-image PSNR of back(there(x)) against x, on x's range, for stored values NHWC `images` of
// domain `samples` on `device`: float64 [n] on the CPU, and there(x) and back(there(x)) as
// [n, C, H, W] 8-bit pixels (the sample grid's rows).
struct CycleScores {
  torch::Tensor psnr;
  torch::Tensor there_pixels, back_pixels;
};
CycleScores score_cycle(nets::Generator& there, nets::Generator& back, const torch::Tensor& images,
                        const torch::Device& device, optim::Precision precision,
                        const data::DomainSamples& samples = {});

// Stored values NHWC of a domain → float [n, C, H, W] on [0, 255], the 8-bit view of its range
// that sample grids, feature networks and classifiers see (8-bit data: its own values).
torch::Tensor display_pixels(const torch::Tensor& nhwc, const data::DomainSamples& samples);

// Mean of at most `max_pairs` images of `domain` (the target: B, or A for a B-to-A generator) of
// `split`, spread evenly: float [C, H, W] of the domain's stored values.
torch::Tensor mean_target_image(const data::PairedDataset& dataset, const std::string& split, std::int64_t max_pairs,
                                data::Domain domain = data::Domain::B);

}  // namespace pix2pix::metrics
