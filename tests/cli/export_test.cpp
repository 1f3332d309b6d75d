// pix2pix export as a user meets it: a trained run exported as ONNX runs in OpenCV's DNN module and
// gives what translate gives; exported as PyTorch state dicts it loads strictly into the reference
// networks in plain PyTorch and computes the same; bad requests are named with their exit status.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#if PIX2PIX_HAVE_ONNX
#include <opencv2/dnn.hpp>
#endif
#include <opencv2/imgcodecs.hpp>

#include "cli/cli_helpers.hpp"
#include "pix2pix/checkpoint/generator_file.hpp"
#include "pix2pix/data/format.hpp"
#include "pix2pix/data/paired_dataset.hpp"
#include "pix2pix/infer/translation_inputs.hpp"
#include "pix2pix/metrics/image_metrics.hpp"
#include "support/fixtures.hpp"
#include "support/torch_files.hpp"

using namespace pix2pix;
using pix2pix::cli_tests::contains;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;

namespace {

// The val split's A images as float NCHW in [-1, 1], as translate feeds them.
torch::Tensor val_inputs(const std::string& dataset) {
  const auto d = data::PairedDataset::open(dataset);
  const auto& info = d->split(data::format::kVal);
  std::vector<std::int64_t> all(static_cast<std::size_t>(info.count));
  for (std::int64_t i = 0; i < info.count; ++i) all[static_cast<std::size_t>(i)] = i;
  const torch::Tensor a = d->read(data::format::kVal, all).a;  // uint8 NHWC
  return a.permute({0, 3, 1, 2}).to(torch::kFloat32).div(127.5).sub(1.0).contiguous();
}

}  // namespace

#if PIX2PIX_HAVE_ONNX
TEST(ExportCli, OnnxRunsInOpenCvAndGivesWhatTranslateGives) {
  TempDir dir;
  ASSERT_EQ(cli_tests::prepare_and_train_smoke(dir), "");
  auto r = run_cli("export --checkpoint " + (dir / "run") + " --format onnx --out " + (dir / "g.onnx"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "wrote " + (dir / "g.onnx"))) << r.output;

  const torch::Tensor a = val_inputs(dir / "d.h5");
  cv::dnn::Net net = cv::dnn::readNetFromONNX(dir / "g.onnx");
  const std::vector<int> sizes(a.sizes().begin(), a.sizes().end());
  net.setInput(cv::Mat(4, sizes.data(), CV_32F, a.data_ptr<float>()));
  const cv::Mat out = net.forward();
  const torch::Tensor onnx_out =
      torch::from_blob(const_cast<float*>(out.ptr<float>()), a.sizes(), torch::kFloat32).clone();
  auto saved = checkpoint::load_generator(dir / "run", torch::kCPU);
  torch::NoGradGuard no_grad;
  EXPECT_LE((onnx_out - saved.generator->forward(a)).abs().max().item<double>(), 1e-4);

  // translate --mode eval writes the same pixels (up to a rounding step where 1e-4 crosses one).
  r = run_cli("translate --progress none --mode eval --checkpoint " + (dir / "run") + " --data " + (dir / "d.h5") +
              " --split val --output " + (dir / "val"));
  ASSERT_EQ(r.status, 0) << r.output;
  // to_pixels gives [N, C, H, W] values in [0, 255]; each file holds one grey image.
  const torch::Tensor pixels = metrics::to_pixels(onnx_out).to(torch::kUInt8);
  const auto d = data::PairedDataset::open(dir / "d.h5");
  const auto inputs = infer::list_dataset_inputs(*d, data::format::kVal, ".png");
  ASSERT_EQ(inputs.size(), static_cast<std::size_t>(a.size(0)));
  for (const auto& input : inputs) {
    const cv::Mat written = cv::imread(dir / ("val/" + input.output), cv::IMREAD_UNCHANGED);
    ASSERT_FALSE(written.empty()) << input.output;
    const torch::Tensor mine = pixels[input.index][0].contiguous();
    const cv::Mat ours(written.rows, written.cols, CV_8UC1, mine.data_ptr<std::uint8_t>());
    EXPECT_LE(cv::norm(written, ours, cv::NORM_INF), 1) << input.output;
  }
}
#endif  // PIX2PIX_HAVE_ONNX

TEST(ExportCli, PytorchStateDictsLoadIntoTheReferenceNetworks) {
  TempDir dir;
  ASSERT_EQ(cli_tests::prepare_and_train_smoke(dir), "");
  const std::string last = dir / "run/checkpoints/last.pt";
  auto r = run_cli("export --checkpoint " + last + " --format pytorch --out " + (dir / "latest_net_G.pth") +
                   " --discriminator-out " + (dir / "latest_net_D.pth"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "wrote " + (dir / "latest_net_D.pth"))) << r.output;

  const torch::Tensor a = val_inputs(dir / "d.h5");
  fixtures::save_tensor(dir / "a.pt", a);
  const std::string script = std::string(PIX2PIX_SOURCE_DIR) + "/tests/infer/reference_check.py";
  // configs/smoke.cfg on 32x32 grey pairs: ngf 8, 5 levels, batch norm.
  r = fixtures::run_shell(fixtures::reference_python() + script +
                          " --norm batch --in-channels 1 --out-channels 1 --num-downs 5 --ngf 8 --generator " +
                          (dir / "latest_net_G.pth") + " --input " + (dir / "a.pt") + " --output " + (dir / "fake.pt"));
  ASSERT_EQ(r.status, 0) << r.output;
  auto saved = checkpoint::load_generator(last, torch::kCPU);
  torch::NoGradGuard no_grad;
  const torch::Tensor fake = fixtures::load_tensor(dir / "fake.pt");
  EXPECT_LE((fake - saved.generator->forward(a)).abs().max().item<double>(), 1e-5);

  const torch::Tensor pair = torch::cat({a, fake}, 1);
  fixtures::save_tensor(dir / "pair.pt", pair);
  r = fixtures::run_shell(fixtures::reference_python() + script +
                          " --norm batch --in-channels 1 --out-channels 1 --ndf 8 --n-layers 3 --discriminator " +
                          (dir / "latest_net_D.pth") + " --input " + (dir / "pair.pt") + " --output " +
                          (dir / "logits.pt"));
  ASSERT_EQ(r.status, 0) << r.output;
  auto d = checkpoint::load_discriminator(last, torch::kCPU);
  const torch::Tensor logits = fixtures::load_tensor(dir / "logits.pt");
  EXPECT_LE((logits - d->forward(pair)).abs().max().item<double>(), 1e-5);
}

TEST(ExportCli, BadRequestsAreNamedWithTheirStatus) {
  TempDir dir;
  ASSERT_EQ(cli_tests::prepare_and_train_smoke(dir), "");
  const std::string run = " --checkpoint " + (dir / "run");
  struct Case {
    std::string args;
    int status;
    std::string message;
  };
  std::ofstream(dir / "taken.onnx") << "keep me";
  fs::copy_file(dir / "run/checkpoints/last.pt", dir / "short.pt");
  fs::resize_file(dir / "short.pt", fs::file_size(dir / "short.pt") / 2);
  const std::vector<Case> cases = {
      {"export" + run + " --out " + (dir / "x.onnx"), 2, "missing --format"},
      {"export" + run + " --format tflite --out " + (dir / "x"), 2, "--format"},
      {"export --format onnx --out " + (dir / "x.onnx"), 2, "missing --checkpoint"},
      {"export" + run + " --format onnx", 2, "missing --out"},
      {"export" + run + " --format onnx --out " + (dir / "x.onnx") + " --discriminator-out " + (dir / "d.pth"), 2,
       "--discriminator-out goes with --format pytorch"},
      {"export" + run + " --format onnx --out " + (dir / "taken.onnx"), 1,
       (dir / "taken.onnx") + " exists; pass --overwrite"},
      {"export" + run + " --format onnx --out " + (dir / "no/such/g.onnx"), 1, "does not exist"},
      {"export" + run + " --format pytorch --out " + (dir / "g.pth") + " --discriminator-out " + (dir / "d.pth"), 1,
       "holds no discriminator"},
      {"export --checkpoint " + (dir / "run/checkpoints/last.pt") + " --format pytorch --out " +
           (dir / "run/checkpoints/last.pt"),
       2, "is the input"},
      {"export --checkpoint " + (dir / "nothing.pt") + " --format onnx --out " + (dir / "x.onnx"), 1,
       (dir / "nothing.pt")},
      {"export --checkpoint " + (dir / "short.pt") + " --format onnx --out " + (dir / "x.onnx"), 1,
       (dir / "short.pt") + " is damaged"},
      {"export --checkpoint " + (dir / "run/checkpoints/last.pt") + " --format pytorch --out " + (dir / "s.pth") +
           " --discriminator-out " + (dir / "s.pth"),
       1, "both name"},
  };
  fixtures::CommandResult r;
  for (const auto& c : cases) {
    r = run_cli(c.args);
    EXPECT_EQ(r.status, c.status) << c.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, c.message)) << c.args << "\n" << r.output;
  }
  // Nothing was written by a refused request, and the existing file is untouched.
  EXPECT_FALSE(fs::exists(dir / "x.onnx"));
  EXPECT_FALSE(fs::exists(dir / "g.pth"));
  EXPECT_EQ(fixtures::read_file(dir / "taken.onnx"), "keep me");
  r = run_cli("export" + run + " --format onnx --overwrite --out " + (dir / "taken.onnx"));
#if PIX2PIX_HAVE_ONNX
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(fixtures::read_file(dir / "taken.onnx"), "keep me");
#else
  // A build without ONNX says so, and only after every check a build with it makes, above.
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "built without ONNX (PIX2PIX_WITH_ONNX=OFF")) << r.output;
  EXPECT_EQ(fixtures::read_file(dir / "taken.onnx"), "keep me");
#endif
}

// A reference-format state dict is a --checkpoint like any other: the generator exported here and
// read back scores exactly what the run's own file scores.
TEST(ImportCli, StateDictsEvaluateAndTranslateLikeTheirCheckpoint) {
  TempDir dir;
  ASSERT_EQ(cli_tests::prepare_and_train_smoke(dir), "");
  auto r = run_cli("export --checkpoint " + (dir / "run") + " --format pytorch --out " + (dir / "latest_net_G.pth"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string evaluate = "evaluate --progress none --mode eval --split val --data " + (dir / "d.h5");
  r = run_cli(evaluate + " --checkpoint " + (dir / "run") + " --out " + (dir / "ev-run"));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli(evaluate + " --checkpoint " + (dir / "latest_net_G.pth") + " --out " + (dir / "ev-pth"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(fixtures::read_file(dir / "ev-pth/evaluation.csv"), fixtures::read_file(dir / "ev-run/evaluation.csv"));
  r = run_cli("translate --progress none --checkpoint " + (dir / "latest_net_G.pth") + " --data " + (dir / "d.h5") +
              " --split val --output " + (dir / "val"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "translated 8 of 8 images")) << r.output;

  // Training starts from it (train --init-generator); --resume PATH continues a run instead.
  const std::string train = "train --config " + std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg --data " +
                            (dir / "d.h5") + " --progress none --max-epochs 1 --init-generator " +
                            (dir / "latest_net_G.pth");
  r = run_cli(train + " --run-dir " + (dir / "run2"));
  EXPECT_EQ(r.status, 0) << r.output;
  r = run_cli(train + " --run-dir " + (dir / "run3") + " --resume " + (dir / "run/checkpoints/last.pt"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "start a run from given weights")) << r.output;

  std::ofstream(dir / "broken.pth") << "not a state dict";
  r = run_cli("export --checkpoint " + (dir / "latest_net_G.pth") + " --format pytorch --out " + (dir / "g2.pth") +
              " --discriminator-out " + (dir / "d2.pth"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--discriminator-out needs a full checkpoint")) << r.output;
  r = run_cli(evaluate + " --checkpoint " + (dir / "broken.pth") + " --out " + (dir / "ev-broken"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, (dir / "broken.pth") + " is not a state dict torch.save wrote")) << r.output;
}
