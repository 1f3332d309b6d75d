// export: the ONNX graph computes what LibTorch's generator computes, run by OpenCV's DNN module
// (an ONNX implementation other than ours), for every norm, several depths, channel counts and
// image sizes; the PyTorch state dicts load strictly into the reference networks rebuilt in plain
// PyTorch (tests/infer/reference_check.py) and compute what ours do.
#include <gtest/gtest.h>
#if PIX2PIX_HAVE_ONNX
#include <onnx/onnx_pb.h>
#endif

#include <filesystem>
#include <fstream>
#if PIX2PIX_HAVE_ONNX
#include <opencv2/dnn.hpp>
#endif

#include "pix2pix/common/error.hpp"
#if PIX2PIX_HAVE_ONNX
#include "pix2pix/interop/onnx_export.hpp"
#endif
#include "pix2pix/interop/pytorch_export.hpp"
#include "pix2pix/nets/resnet_generator.hpp"
#include "support/fixtures.hpp"
#include "support/random_weights.hpp"
#include "support/torch_files.hpp"

using namespace pix2pix;
using pix2pix::fixtures::TempDir;

namespace {

nets::Generator random_generator(const nets::GeneratorOptions& options, std::uint64_t seed) {
  nets::Generator g = nets::make_generator(options);
  fixtures::randomise(*g, seed);
  return g;
}

#if PIX2PIX_HAVE_ONNX
torch::Tensor torch_output(nets::Generator& g, const torch::Tensor& input) {
  torch::NoGradGuard no_grad;
  return g->forward(input);
}

torch::Tensor opencv_output(cv::dnn::Net& net, const torch::Tensor& input) {
  torch::Tensor in = input.contiguous();
  const std::vector<int> sizes(in.sizes().begin(), in.sizes().end());
  const cv::Mat blob(static_cast<int>(sizes.size()), sizes.data(), CV_32F, in.data_ptr<float>());
  net.setInput(blob, interop::kOnnxInput);
  const cv::Mat out = net.forward();
  std::vector<std::int64_t> out_sizes;
  for (int i = 0; i < out.dims; ++i) out_sizes.push_back(out.size[i]);
  return torch::from_blob(const_cast<float*>(out.ptr<float>()), out_sizes, torch::kFloat32).clone();
}

struct OnnxCase {
  nets::GeneratorOptions options;
  std::vector<std::vector<std::int64_t>> inputs;  // several sizes through one file: dynamic axes
};
#endif  // PIX2PIX_HAVE_ONNX

}  // namespace

// ONNX export exists in builds with PIX2PIX_WITH_ONNX (ExportCli tests the message of those without).
#if PIX2PIX_HAVE_ONNX
TEST(OnnxExport, OpenCvDnnComputesWhatLibTorchComputes) {
  using nets::Norm;
  const std::vector<OnnxCase> cases = {
      {{3, 3, 5, 4, Norm::batch, true}, {{2, 3, 32, 32}, {1, 3, 64, 96}}},
      {{1, 3, 6, 4, Norm::instance, true}, {{2, 1, 64, 64}, {1, 1, 128, 64}}},
      {{3, 1, 5, 8, Norm::none, false}, {{1, 3, 64, 32}}},
      {{1, 1, 7, 2, Norm::batch, true}, {{2, 1, 128, 128}}},
      // ResNet generators: reflection padding, residual additions, output padding.
      {nets::resnet_generator_options(3, 3, 4, 2, Norm::instance, false), {{1, 3, 32, 32}, {2, 3, 24, 40}}},
      {nets::resnet_generator_options(1, 3, 4, 1, Norm::batch, true), {{2, 1, 16, 16}}},
  };
  TempDir dir;
  int k = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE("case " + std::to_string(k) + ": " + nets::net_g_name(c.options) + ", norm " +
                 nets::to_string(c.options.norm));
    auto g = random_generator(c.options, 100 + k);
    const std::string path = dir / ("g" + std::to_string(k++) + ".onnx");
    interop::write_onnx_model(path, interop::generator_to_onnx(g, {{"pix2pix.case", "test"}}));
    for (const auto& sizes : c.inputs) {
      // One Net per size: OpenCV 4.6 keeps what it planned for the first input's shape, and a Net
      // reused for another size computed wrong outputs (docs/deploy.md); the file itself is sized
      // by nothing but its input.
      cv::dnn::Net net = cv::dnn::readNetFromONNX(path);
      torch::manual_seed(7);
      const torch::Tensor input = torch::rand(sizes) * 2 - 1;
      const torch::Tensor expected = torch_output(g, input), actual = opencv_output(net, input);
      ASSERT_EQ(actual.sizes(), expected.sizes());
      EXPECT_GT(expected.std().item<double>(), 0.05);  // not a saturated or constant output
      EXPECT_LE((actual - expected).abs().max().item<double>(), 1e-4) << "input " << input.sizes();
    }
  }
}

TEST(OnnxExport, TheFileDescribesItsInputOutputAndModel) {
  auto g = random_generator({1, 3, 6, 4, nets::Norm::batch, true}, 1);
  TempDir dir;
  interop::write_onnx_model(
      dir / "g.onnx", interop::generator_to_onnx(g, {{"pix2pix.value_range", "[-1, 1]"}, {"pix2pix.epoch", "7"}}));
  onnx::ModelProto model;
  const auto bytes = fixtures::file_bytes(dir / "g.onnx");
  ASSERT_TRUE(model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
  ASSERT_EQ(model.opset_import_size(), 1);
  EXPECT_EQ(model.opset_import(0).version(), interop::kOnnxOpset);
  EXPECT_GE(interop::kOnnxOpset, 11);
  EXPECT_EQ(model.producer_name(), "pix2pix-mpi");
  const auto& graph = model.graph();
  ASSERT_EQ(graph.input_size(), 1);
  ASSERT_EQ(graph.output_size(), 1);
  const auto& in = graph.input(0).type().tensor_type().shape();
  EXPECT_EQ(graph.input(0).name(), "A");
  EXPECT_EQ(graph.output(0).name(), "fake_B");
  ASSERT_EQ(in.dim_size(), 4);
  EXPECT_EQ(in.dim(0).dim_param(), "batch");
  EXPECT_EQ(in.dim(1).dim_value(), 1);
  EXPECT_EQ(in.dim(2).dim_param(), "height");
  EXPECT_EQ(in.dim(3).dim_param(), "width");
  EXPECT_EQ(graph.output(0).type().tensor_type().shape().dim(1).dim_value(), 3);
  std::map<std::string, std::string> metadata;
  for (const auto& entry : model.metadata_props()) metadata[entry.key()] = entry.value();
  EXPECT_EQ(metadata["pix2pix.value_range"], "[-1, 1]");
  EXPECT_EQ(metadata["pix2pix.epoch"], "7");
  // Every parameter and running statistic is an initializer under its own (the reference's) name.
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  for (const auto& p : g->named_parameters()) EXPECT_TRUE(initializers.count(p.key())) << p.key();
  EXPECT_TRUE(initializers.count("model.model.1.model.2.running_mean"));
  // Eval mode: no dropout node.
  for (const auto& node : graph.node()) EXPECT_NE(node.op_type(), "Dropout");
}

TEST(OnnxExport, AFailedWriteLeavesNoFile) {
  auto g = random_generator({1, 1, 5, 2, nets::Norm::batch, false}, 1);
  TempDir dir;
  const std::string path = dir / "missing-folder/g.onnx";
  EXPECT_THROW(interop::write_onnx_model(path, interop::generator_to_onnx(g, {})), Error);
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

#endif  // PIX2PIX_HAVE_ONNX

TEST(PytorchExport, TheStateDictHoldsEveryTensorByItsName) {
  auto g = random_generator({1, 3, 5, 4, nets::Norm::batch, true}, 3);
  TempDir dir;
  interop::write_state_dict(dir / "g.pth", *g);
  const c10::IValue loaded = torch::pickle_load(fixtures::file_bytes(dir / "g.pth"));
  ASSERT_TRUE(loaded.isGenericDict());
  const auto dict = loaded.toGenericDict();
  std::size_t expected = 0;
  for (const auto& p : g->named_parameters()) {
    ++expected;
    ASSERT_TRUE(dict.contains(p.key())) << p.key();
    EXPECT_TRUE(torch::equal(dict.at(p.key()).toTensor(), p.value())) << p.key();
  }
  for (const auto& b : g->named_buffers()) {
    ++expected;
    ASSERT_TRUE(dict.contains(b.key())) << b.key();
    EXPECT_TRUE(torch::equal(dict.at(b.key()).toTensor(), b.value())) << b.key();
  }
  EXPECT_EQ(dict.size(), expected);
  EXPECT_TRUE(dict.contains("model.model.0.weight"));
  EXPECT_EQ(dict.at("model.model.1.model.2.num_batches_tracked").toTensor().scalar_type(), torch::kLong);
}

TEST(PytorchExport, NormNoneHasNoReferenceForm) {
  EXPECT_THROW(interop::require_reference_form(nets::Norm::none), Error);
  EXPECT_NO_THROW(interop::require_reference_form(nets::Norm::batch));
  EXPECT_NO_THROW(interop::require_reference_form(nets::Norm::instance));
}

// The reference networks rebuilt in plain PyTorch take our files with strict=True and compute
// what ours compute: the names, the shapes and the architecture (skip connections included).
TEST(PytorchExport, TheReferenceNetworksInPyTorchComputeWhatOursCompute) {
  const std::string script = std::string(PIX2PIX_SOURCE_DIR) + "/tests/infer/reference_check.py";
  TempDir dir;
  struct Case {
    nets::GeneratorOptions g;
    std::int64_t ndf, n_layers, side;
  };
  const std::vector<Case> cases = {{{1, 3, 6, 4, nets::Norm::batch, true}, 4, 3, 64},
                                   {{3, 3, 5, 4, nets::Norm::instance, true}, 8, 2, 32}};
  int k = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE("norm " + nets::to_string(c.g.norm));
    auto g = random_generator(c.g, 20 + k);
    nets::PatchDiscriminator d(
        nets::DiscriminatorOptions{c.g.in_channels + c.g.out_channels, c.ndf, c.n_layers, c.g.norm});
    fixtures::randomise(*d, 30 + k);
    const std::string tag = std::to_string(k++);
    interop::write_state_dict(dir / ("g" + tag + ".pth"), *g);
    interop::write_state_dict(dir / ("d" + tag + ".pth"), *d);
    torch::manual_seed(5);
    const torch::Tensor a = torch::rand({2, c.g.in_channels, c.side, c.side}) * 2 - 1;
    const torch::Tensor pair = torch::rand({2, c.g.in_channels + c.g.out_channels, c.side, c.side}) * 2 - 1;
    fixtures::save_tensor(dir / "a.pt", a);
    fixtures::save_tensor(dir / "pair.pt", pair);
    const std::string shape = " --norm " + nets::to_string(c.g.norm) + " --in-channels " +
                              std::to_string(c.g.in_channels) + " --out-channels " + std::to_string(c.g.out_channels);
    auto r = fixtures::run_shell(fixtures::reference_python() + script + shape + " --num-downs " +
                                 std::to_string(c.g.num_downs) + " --ngf " + std::to_string(c.g.ngf) + " --generator " +
                                 (dir / ("g" + tag + ".pth")) + " --input " + (dir / "a.pt") + " --output " +
                                 (dir / "fake.pt"));
    ASSERT_EQ(r.status, 0) << r.output;
    r = fixtures::run_shell(fixtures::reference_python() + script + shape + " --ndf " + std::to_string(c.ndf) +
                            " --n-layers " + std::to_string(c.n_layers) + " --discriminator " +
                            (dir / ("d" + tag + ".pth")) + " --input " + (dir / "pair.pt") + " --output " +
                            (dir / "logits.pt"));
    ASSERT_EQ(r.status, 0) << r.output;
    torch::NoGradGuard no_grad;
    const torch::Tensor fake = fixtures::load_tensor(dir / "fake.pt");
    const torch::Tensor logits = fixtures::load_tensor(dir / "logits.pt");
    EXPECT_LE((fake - g->forward(a)).abs().max().item<double>(), 1e-5);
    EXPECT_LE((logits - d->forward(pair)).abs().max().item<double>(), 1e-5);
  }
  // strict=True is strict: the same file read as another architecture is refused, naming keys.
  const auto r = fixtures::run_shell(fixtures::reference_python() + script +
                                     " --norm batch --in-channels 3 --out-channels 3 --num-downs 5 --ngf 4"
                                     " --generator " +
                                     (dir / "g1.pth") + " --input " + (dir / "a.pt") + " --output " + (dir / "x.pt"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("Missing key(s)"), std::string::npos) << r.output;
}
