// Distances between two sets of image features (rows of [n, D] matrices from one feature network):
// the Fréchet distance of Gaussians fitted to them (FID, Heusel et al. 2017) and the kernel
// distance (KID, Bińkowski et al. 2018), as clean-fid and torchmetrics define them. Both are
// computed in float64 on the CPU from the features given.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>

namespace pix2pix::metrics {

// |mu_r - mu_g|^2 + tr(S_r + S_g - 2 (S_r S_g)^(1/2)), with the unbiased covariances (numpy.cov).
// See Note [the trace of a matrix square root]. Error when a set has fewer than 2 rows, the
// column counts differ, a set has no columns, or a feature is not finite. `poll` (when set) is
// called between the long steps (covariances, each eigendecomposition) and may throw to stop.
double frechet_distance(const torch::Tensor& real, const torch::Tensor& generated,
                        const std::function<void()>& poll = {});

struct KernelDistance {
  double mean = 0, std = 0;      // over the subsets; std of the population (divides by `subsets`)
  std::int64_t subset_size = 0;  // images drawn from each set per subset, without replacement
  std::int64_t subsets = 0;
};
// The unbiased MMD^2 with the kernel k(x, y) = (x.y / D + 1)^3, on `subsets` pairs of subsets of
// min(max_subset_size, rows of either set) rows, drawn with a seeded permutation (identical
// everywhere for a seed). Error as frechet_distance, or for subsets < 1 or max_subset_size < 2.
// `poll` (when set) is called before each subset and may throw to stop.
KernelDistance kernel_distance(const torch::Tensor& real, const torch::Tensor& generated, std::int64_t subsets,
                               std::int64_t max_subset_size, std::uint64_t seed,
                               const std::function<void()>& poll = {});

}  // namespace pix2pix::metrics
