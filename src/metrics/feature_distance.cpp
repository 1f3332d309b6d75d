#include "pix2pix/metrics/feature_distance.hpp"

#include <cmath>
#include <string>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/random.hpp"

namespace pix2pix::metrics {
namespace {

torch::Tensor checked(const torch::Tensor& features, const char* which, const char* metric) {
  if (features.dim() != 2)
    throw Error(std::string(metric) + ": the " + which + " features are " + std::to_string(features.dim()) +
                "-D; [images, dimensions] is needed");
  if (features.size(1) < 1)
    throw Error(std::string(metric) + ": the " + which + " features have no dimensions ([" +
                std::to_string(features.size(0)) + ", 0])");
  if (features.size(0) < 2)
    throw Error(std::string(metric) + " needs at least 2 " + which +
                " images (a covariance of fewer is undefined); got " + std::to_string(features.size(0)));
  const auto f = features.to(torch::kCPU, torch::kFloat64).contiguous();
  if (!torch::isfinite(f).all().item<bool>())
    throw Error(std::string(metric) + ": the " + which + " features hold NaN or infinite values");
  return f;
}

void check_same_width(const torch::Tensor& real, const torch::Tensor& generated, const char* metric) {
  if (real.size(1) != generated.size(1))
    throw Error(std::string(metric) + ": the real features have " + std::to_string(real.size(1)) +
                " dimensions, the generated " + std::to_string(generated.size(1)));
}

torch::Tensor covariance(const torch::Tensor& f) {
  const auto centred = f - f.mean(0, /*keepdim=*/true);
  return centred.t().mm(centred) / static_cast<double>(f.size(0) - 1);
}

// The symmetric positive semi-definite square root, from the eigendecomposition.
torch::Tensor psd_sqrt(const torch::Tensor& s) {
  auto [values, vectors] = torch::linalg_eigh(s, "L");
  return vectors.mm(torch::diag(values.clamp_min(0).sqrt())).mm(vectors.t());
}

}  // namespace

// Note [the trace of a matrix square root]
// FID needs tr((S_r S_g)^(1/2)). S_r S_g is not symmetric, and the reference code takes
// scipy.linalg.sqrtm of it (a Schur decomposition in complex arithmetic, keeping the real part).
// With A = S_r^(1/2), A S_g A is symmetric positive semi-definite and similar to S_r S_g
// (A^-1 (A S_g A) A = S_r S_g where A is invertible; by continuity otherwise), so both have the
// same eigenvalues, and tr((S_r S_g)^(1/2)) = sum sqrt(eig(A S_g A)). Two symmetric
// eigendecompositions in float64 give it without complex arithmetic; tiny negative eigenvalues
// from rounding are clamped to 0. Where the covariances are singular (fewer images than
// dimensions, the usual case for 2048-D Inception features of a small split) sqrtm warns and may
// return complex junk, and the reference adds eps to the diagonals; this route stays defined.
// The test compares it with scipy.linalg.sqrtm on well-conditioned features (≤ 1e-3 relative).
double frechet_distance(const torch::Tensor& real_, const torch::Tensor& generated_,
                        const std::function<void()>& poll) {
  const auto step = [&poll] {
    if (poll) poll();
  };
  const auto real = checked(real_, "real", "FID"), generated = checked(generated_, "generated", "FID");
  check_same_width(real, generated, "FID");
  const auto mean_gap = (real.mean(0) - generated.mean(0)).pow(2).sum().item<double>();
  step();
  const auto s_real = covariance(real), s_generated = covariance(generated);
  step();
  const auto root = psd_sqrt(s_real);
  step();
  const auto middle = root.mm(s_generated).mm(root);
  const auto symmetric = (middle + middle.t()) / 2;
  const double trace_root = torch::linalg_eigvalsh(symmetric, "L").clamp_min(0).sqrt().sum().item<double>();
  return mean_gap + s_real.trace().item<double>() + s_generated.trace().item<double>() - 2 * trace_root;
}

KernelDistance kernel_distance(const torch::Tensor& real_, const torch::Tensor& generated_, std::int64_t subsets,
                               std::int64_t max_subset_size, std::uint64_t seed, const std::function<void()>& poll) {
  if (subsets < 1) throw UsageError("KID needs at least 1 subset; got " + std::to_string(subsets));
  if (max_subset_size < 2)
    throw UsageError("KID needs subsets of at least 2 images; got " + std::to_string(max_subset_size));
  const auto real = checked(real_, "real", "KID"), generated = checked(generated_, "generated", "KID");
  check_same_width(real, generated, "KID");
  const double d = static_cast<double>(real.size(1));
  KernelDistance result;
  result.subsets = subsets;
  const std::int64_t m = std::min({max_subset_size, real.size(0), generated.size(0)});
  result.subset_size = m;
  const auto kernel = [d](const torch::Tensor& x, const torch::Tensor& y) { return (x.mm(y.t()) / d + 1).pow(3); };
  const auto draw = [m](const torch::Tensor& f, std::uint64_t s) {
    auto order = seeded_permutation(f.size(0), s);
    order.resize(static_cast<size_t>(m));
    return f.index_select(0, torch::tensor(order, torch::kInt64));
  };
  std::vector<double> values;
  for (std::int64_t k = 0; k < subsets; ++k) {
    if (poll) poll();
    const auto x = draw(generated, mix_seed(seed, 2 * static_cast<std::uint64_t>(k)));
    const auto y = draw(real, mix_seed(seed, 2 * static_cast<std::uint64_t>(k) + 1));
    const auto xx = kernel(x, x), yy = kernel(y, y), xy = kernel(x, y);
    const double within = (xx.sum() - xx.diagonal().sum() + yy.sum() - yy.diagonal().sum()).item<double>() /
                          static_cast<double>(m * (m - 1));
    values.push_back(within - 2 * xy.sum().item<double>() / static_cast<double>(m * m));
  }
  const auto v = torch::tensor(values, torch::kFloat64);
  result.mean = v.mean().item<double>();
  result.std = v.std(/*unbiased=*/false).item<double>();
  return result;
}

}  // namespace pix2pix::metrics
