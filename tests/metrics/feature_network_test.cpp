// Feature networks from files: TorchScript modules made here with torch::jit::Module::define (no
// Python needed), a train-classifier file, and files that are neither; how images are fed to
// them (range, channels, size, return_features) and what is refused.
#include <gtest/gtest.h>
#include <torch/script.h>

#include <fstream>

#include "pix2pix/checkpoint/classifier_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/metrics/feature_network.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using namespace pix2pix::metrics;
using pix2pix::fixtures::error_of;
using pix2pix::fixtures::TempDir;

namespace {

// A conv net with `in` input channels giving 4 features; `body` is the forward's source.
std::string save_module(const TempDir& dir, const std::string& name, std::int64_t in, const std::string& body) {
  torch::manual_seed(11);
  torch::jit::Module m("Net");
  m.register_parameter("weight", torch::randn({4, in, 3, 3}), false);
  m.define(body);
  const std::string path = dir / name;
  m.save(path);
  return path;
}

const char* kConvForward = R"(
def forward(self, x):
    return torch.conv2d(x, self.weight).mean(dim=[2, 3])
)";

torch::Tensor grey_pixels() {
  return torch::arange(2 * 1 * 12 * 12).reshape({2, 1, 12, 12}).remainder(256).to(torch::kFloat32);
}

}  // namespace

TEST(FeatureNetwork, GreyIsRepeatedToTheFirstConvolutionsChannelsInTheStatedRange) {
  TempDir dir;
  const std::string path = save_module(dir, "f.pt", 3, kConvForward);
  auto module = torch::jit::load(path);
  const auto weight = module.attr("weight").toTensor();
  const auto px = grey_pixels();
  const auto reference = [&](const torch::Tensor& x) {
    return torch::conv2d(x.repeat({1, 3, 1, 1}), weight).mean({2, 3});
  };
  for (const auto& [input, scaled] : {std::pair{FeatureInput::signed_unit, px / 127.5 - 1.0},
                                      std::pair{FeatureInput::unit, px / 255.0}, std::pair{FeatureInput::pixels, px}}) {
    FeatureNetwork net({path, input, 0, 0}, torch::kCPU);
    EXPECT_EQ(net.facts().channels, 3);
    EXPECT_EQ(net.facts().kind, "torchscript");
    const auto f = net.features(px);
    ASSERT_EQ(f.sizes(), (std::vector<std::int64_t>{2, 4}));
    EXPECT_TRUE(torch::allclose(f, reference(scaled), 1e-5, 1e-5)) << to_string(input);
  }
  // --features-size: resized (bilinear) before the network.
  FeatureNetwork sized({path, FeatureInput::unit, 0, 20}, torch::kCPU);
  const auto resized = torch::nn::functional::interpolate(px / 255.0, torch::nn::functional::InterpolateFuncOptions()
                                                                          .size(std::vector<std::int64_t>{20, 20})
                                                                          .mode(torch::kBilinear)
                                                                          .align_corners(false));
  EXPECT_TRUE(torch::allclose(sized.features(px), reference(resized), 1e-5, 1e-5));
}

TEST(FeatureNetwork, ColourIsAveragedForOneChannelAndOtherCountsAreRefused) {
  TempDir dir;
  const std::string path = save_module(dir, "f1.pt", 1, kConvForward);
  FeatureNetwork net({path, FeatureInput::pixels, 0, 0}, torch::kCPU);
  const auto colour = torch::rand({2, 3, 10, 10}) * 255;
  const auto weight = torch::jit::load(path).attr("weight").toTensor();
  EXPECT_TRUE(
      torch::allclose(net.features(colour), torch::conv2d(colour.mean(1, true), weight).mean({2, 3}), 1e-5, 1e-4));
  FeatureNetwork three({save_module(dir, "f3.pt", 3, kConvForward), FeatureInput::pixels, 0, 0}, torch::kCPU);
  EXPECT_NE(error_of([&] {
              three.features(torch::rand({2, 2, 10, 10}));
            }).find("takes 3 channels and the images have 2"),
            std::string::npos);
}

TEST(FeatureNetwork, ReturnFeaturesIsTheCleanFidConvention) {
  TempDir dir;
  const std::string path = save_module(dir, "inception-like.pt", 3, R"(
def forward(self, x, return_features: bool = False):
    h = torch.conv2d(x, self.weight).mean(dim=[2, 3])
    if return_features:
        return h
    return h.sum(dim=1)
)");
  FeatureNetwork net({path, FeatureInput::automatic, 0, 0}, torch::kCPU);
  EXPECT_TRUE(net.facts().return_features);
  EXPECT_EQ(net.facts().input, FeatureInput::pixels);
  EXPECT_EQ(net.features(grey_pixels()).sizes(), (std::vector<std::int64_t>{2, 4}));
  EXPECT_EQ(net.facts().sha256.size(), 64u);
  // Without return_features the range must be said.
  const std::string plain = save_module(dir, "plain.pt", 3, kConvForward);
  EXPECT_THROW(FeatureNetwork({plain, FeatureInput::automatic, 0, 0}, torch::kCPU), UsageError);
}

TEST(FeatureNetwork, OutputsThatAreNotFeaturesAreRefusedNamingTheFile) {
  TempDir dir;
  const auto refusal = [&](const std::string& name, const std::string& body) {
    FeatureNetwork net({save_module(dir, name, 3, body), FeatureInput::unit, 0, 0}, torch::kCPU);
    return error_of([&] { net.features(grey_pixels()); });
  };
  const std::string spatial = refusal("spatial.pt", "def forward(self, x):\n    return torch.conv2d(x, self.weight)\n");
  EXPECT_NE(spatial.find("spatial.pt"), std::string::npos) << spatial;
  EXPECT_NE(spatial.find("is [2, 4, 10, 10]; features must be 2-D"), std::string::npos) << spatial;
  EXPECT_NE(refusal("tuple.pt", "def forward(self, x):\n    return (x, x)\n").find("not a tensor"), std::string::npos);
  EXPECT_NE(refusal("nan.pt", "def forward(self, x):\n    return x.mean(dim=[2, 3]) / 0.0 * 0.0\n")
                .find("NaN or infinite features for 2 of 2 images"),
            std::string::npos);
  const std::string failed = refusal("bad.pt", "def forward(self, x):\n    return torch.mm(x, x)\n");
  EXPECT_NE(failed.find("the network failed on images [2, 3, 12, 12]"), std::string::npos) << failed;
  std::ofstream(dir / "text.pt") << "not a network";
  EXPECT_NE(error_of([&] {
              FeatureNetwork({dir / "text.pt", FeatureInput::unit, 0, 0}, torch::kCPU);
            }).find("text.pt: neither a TorchScript module"),
            std::string::npos);
}

TEST(FeatureNetwork, AClassifierGivesItsPenultimateLayerAtItsOwnSize) {
  TempDir dir;
  torch::manual_seed(2);
  nets::ClassifierOptions o;
  o.height = o.width = 16;
  o.filters = 4;
  nets::Classifier classifier(o);
  classifier->eval();
  const std::string path = dir / "c.pt";
  checkpoint::save_classifier(path, *classifier, {1, 0.5, "d.h5"});
  FeatureNetwork net({path, FeatureInput::automatic, 0, 0}, torch::kCPU);
  EXPECT_EQ(net.facts().kind, "classifier");
  EXPECT_EQ(net.facts().input, FeatureInput::signed_unit);
  const auto px = torch::rand({3, 1, 16, 16}) * 255;
  torch::NoGradGuard no_grad;
  const auto expected = classifier->embed(px / 127.5 - 1.0);
  EXPECT_EQ(expected.size(1), 8);  // the last stage's channels: 2 stages for 16x16, 4 << 1
  EXPECT_TRUE(torch::allclose(net.features(px), expected, 1e-5, 1e-5));
  EXPECT_EQ(net.features(torch::rand({3, 1, 32, 32}) * 255).sizes(), expected.sizes());  // resized to 16x16
  EXPECT_THROW(FeatureNetwork({path, FeatureInput::unit, 0, 0}, torch::kCPU), UsageError);
  EXPECT_THROW(FeatureNetwork({path, FeatureInput::automatic, 0, 32}, torch::kCPU), UsageError);
}
