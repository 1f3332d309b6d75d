// FID and KID against routes computed independently here: the 1-D closed form, and for D > 1 the
// eigenvalues of the non-symmetric S_r S_g (complex, as scipy.linalg.sqrtm works) rather than our
// symmetric route (See Note [the trace of a matrix square root]). The comparison with SciPy itself
// is tests/infer/fid_kid_test.sh.
#include <gtest/gtest.h>

#include <cmath>

#include "pix2pix/common/error.hpp"
#include "pix2pix/metrics/feature_distance.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using namespace pix2pix::metrics;
using pix2pix::fixtures::error_of;

namespace {

torch::Tensor covariance(const torch::Tensor& f) {
  const auto c = f - f.mean(0, true);
  return c.t().mm(c) / (f.size(0) - 1);
}

double fid_by_eigenvalues(const torch::Tensor& r, const torch::Tensor& g) {
  const auto sr = covariance(r), sg = covariance(g);
  const auto eig = torch::linalg_eigvals(sr.mm(sg));  // complex
  const double trace_root = torch::real(torch::sqrt(eig)).sum().item<double>();
  return (r.mean(0) - g.mean(0)).pow(2).sum().item<double>() + sr.trace().item<double>() + sg.trace().item<double>() -
         2 * trace_root;
}

}  // namespace

TEST(FeatureDistance, FidOfOneDimensionIsTheClosedForm) {
  torch::manual_seed(3);
  const auto r = torch::randn({50, 1}, torch::kFloat64) * 2 + 1, g = torch::randn({40, 1}, torch::kFloat64) * 0.5 - 1;
  const double vr = r.var(0, true).item<double>(), vg = g.var(0, true).item<double>();
  const double gap = r.mean().item<double>() - g.mean().item<double>();
  EXPECT_NEAR(frechet_distance(r, g), gap * gap + vr + vg - 2 * std::sqrt(vr * vg), 1e-10);
}

TEST(FeatureDistance, FidMatchesTheNonSymmetricRoute) {
  torch::manual_seed(4);
  const auto mix = torch::randn({6, 6}, torch::kFloat64);
  const auto r = torch::randn({80, 6}, torch::kFloat64).mm(mix);
  const auto g = torch::randn({70, 6}, torch::kFloat64).mm(mix.t()) + 0.3;
  const double expected = fid_by_eigenvalues(r, g);
  EXPECT_NEAR(frechet_distance(r, g), expected, 1e-8 * std::abs(expected));
  // float32 input (what feature networks give) is taken in float64.
  EXPECT_NEAR(frechet_distance(r.to(torch::kFloat32), g.to(torch::kFloat32)), expected, 1e-4 * std::abs(expected));
  EXPECT_NEAR(frechet_distance(r, r), 0.0, 1e-9);
}

TEST(FeatureDistance, FidStaysDefinedWithFewerImagesThanDimensions) {
  torch::manual_seed(5);
  const auto r = torch::randn({5, 32}, torch::kFloat64), g = torch::randn({7, 32}, torch::kFloat64) + 1;
  const double fid = frechet_distance(r, g);
  EXPECT_TRUE(std::isfinite(fid));
  EXPECT_GT(fid, 0);
  // Singular covariances: the zero eigenvalues come out as ~1e-16 and their roots as ~1e-8.
  EXPECT_NEAR(frechet_distance(r, r), 0.0, 1e-6 * fid);
}

TEST(FeatureDistance, KidIsTheUnbiasedMmdAndItsSubsetsAreSeeded) {
  torch::manual_seed(6);
  const auto r = torch::randn({30, 4}, torch::kFloat64), g = torch::randn({25, 4}, torch::kFloat64) * 1.5 + 0.5;
  // All images in one subset (subset size = the smaller set; the larger one is drawn from).
  const auto kernel = [](const torch::Tensor& x, const torch::Tensor& y) { return (x.mm(y.t()) / 4.0 + 1).pow(3); };
  const auto whole = kernel_distance(r.narrow(0, 0, 25), g, 1, 1000, 0);
  const auto x = g, y = r.narrow(0, 0, 25);
  const double m = 25;
  const double expected =
      ((kernel(x, x).sum() - kernel(x, x).trace() + kernel(y, y).sum() - kernel(y, y).trace()) / (m * (m - 1)) -
       2 * kernel(x, y).sum() / (m * m))
          .item<double>();
  EXPECT_NEAR(whole.mean, expected, 1e-12 * std::abs(expected));
  EXPECT_EQ(whole.subset_size, 25);
  EXPECT_NEAR(whole.std, 0.0, 1e-15);

  const auto a = kernel_distance(r, g, 10, 10, 42), b = kernel_distance(r, g, 10, 10, 42);
  const auto c = kernel_distance(r, g, 10, 10, 43);
  EXPECT_EQ(a.mean, b.mean);
  EXPECT_EQ(a.std, b.std);
  EXPECT_NE(a.mean, c.mean);
  EXPECT_GT(a.std, 0);
  EXPECT_EQ(a.subset_size, 10);
  // Two sets drawn from one distribution: close to 0 (unbiased: may be negative).
  const auto same =
      kernel_distance(torch::randn({200, 4}, torch::kFloat64), torch::randn({200, 4}, torch::kFloat64), 5, 200, 1);
  EXPECT_LT(std::abs(same.mean), 0.2 * a.mean);
}

TEST(FeatureDistance, BadSetsAreRefusedByName) {
  const auto ok = torch::randn({4, 3});
  EXPECT_NE(error_of([&] {
              frechet_distance(ok, torch::randn({1, 3}));
            }).find("FID needs at least 2 generated images"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              kernel_distance(torch::randn({1, 3}), ok, 1, 10, 0);
            }).find("KID needs at least 2 real"),
            std::string::npos);
  auto nan = ok.clone();
  nan[1][2] = NAN;
  EXPECT_NE(error_of([&] { frechet_distance(ok, nan); }).find("generated features hold NaN"), std::string::npos);
  EXPECT_NE(error_of([&] {
              frechet_distance(ok, torch::randn({4, 2}));
            }).find("3 dimensions, the generated 2"),
            std::string::npos);
  EXPECT_NE(error_of([&] { frechet_distance(torch::randn({4, 3, 1}), ok); }).find("3-D"), std::string::npos);
  EXPECT_THROW(kernel_distance(ok, ok, 0, 10, 0), UsageError);
  EXPECT_THROW(kernel_distance(ok, ok, 1, 1, 0), UsageError);
}

// Issue 45: features of no dimensions are no features (they gave "FID 0, KID -nan"), and a stop
// request reaches the subset loop of KID and the steps of FID through `poll`.
TEST(FeatureDistance, NoDimensionsAreRefusedAndPollingStopsTheLongLoops) {
  const auto empty = torch::zeros({10, 0}, torch::kFloat32), some = torch::randn({10, 3});
  EXPECT_NE(error_of([&] { frechet_distance(empty, empty); }).find("the real features have no dimensions ([10, 0])"),
            std::string::npos);
  EXPECT_NE(error_of([&] { kernel_distance(some, empty, 2, 5, 1); }).find("generated features have no dimensions"),
            std::string::npos);
  int polls = 0;
  const auto stop_at_third = [&polls] {
    if (++polls == 3) throw Error("stopped");
  };
  EXPECT_EQ(error_of([&] { kernel_distance(some, some, 1000000, 5, 1, stop_at_third); }), "stopped");
  EXPECT_EQ(polls, 3);
  polls = 0;
  EXPECT_EQ(error_of([&] { frechet_distance(some, some, stop_at_third); }), "stopped");
  polls = 0;
  const auto counting = [&polls] { ++polls; };
  kernel_distance(some, some, 7, 5, 1, counting);
  EXPECT_EQ(polls, 7);
}
