// 16-bit data as a user runs it: thermal-like 16-bit frames (Fashion-MNIST rendered as smooth
// "temperature" fields) paired with the 8-bit images prepare into a uint16 domain with a measured
// range, train, and are scored by evaluate on that range exactly as validation logged them; the
// other way round a generator writes 16-bit frames, whole or tiled; the run's generator carries its
// values into export, and translate, evaluate and --resume refuse data of other values by name.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli_helpers.hpp"
#include "pix2pix/data/idx_reader.hpp"
#include "pix2pix/data/npy_file.hpp"
#include "support/fixtures.hpp"

using pix2pix::cli_tests::contains;
using pix2pix::cli_tests::json_value;
using pix2pix::cli_tests::metrics_column;
using pix2pix::fixtures::read_file;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;

namespace {

// Image i of Fashion-MNIST's test set as a 16-bit "temperature" field: 29315 (20 °C in
// centi-kelvin) plus up to 1500 where the garment is, blurred as heat spreads, plus sensor noise.
cv::Mat thermal(const cv::Mat& visible, int seed) {
  cv::Mat heat, noise(visible.size(), CV_32F);
  visible.convertTo(heat, CV_32F, 1500.0 / 255.0);
  cv::GaussianBlur(heat, heat, cv::Size(0, 0), 1.5);
  cv::RNG(static_cast<std::uint64_t>(seed)).fill(noise, cv::RNG::NORMAL, 0.0, 20.0);
  cv::Mat counts;
  cv::Mat(heat + noise + 29315.0).convertTo(counts, CV_16U);
  return counts;
}

// Paired folders thermal/{train,val} (16-bit PNG) and visible/{train,val} (8-bit PNG) of 32x32.
void write_pairs(const TempDir& dir, int train, int val) {
  const auto idx =
      pix2pix::data::read_idx_images(pix2pix::fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz"), train + val);
  for (int i = 0; i < train + val; ++i) {
    const std::string split = i < train ? "train" : "val";
    cv::Mat visible(28, 28, CV_8UC1, const_cast<std::uint8_t*>(idx.pixels.data() + i * 28 * 28));
    cv::resize(visible, visible, cv::Size(32, 32), 0, 0, cv::INTER_CUBIC);
    for (const char* side : {"thermal", "visible"}) fs::create_directories(dir / (side + ("/" + split)));
    const std::string name = "/f" + std::to_string(i) + ".png";
    cv::imwrite(dir / ("thermal/" + split + name), thermal(visible, i));
    cv::imwrite(dir / ("visible/" + split + name), visible);
  }
}

std::string prepare(const TempDir& dir, const std::string& out, const std::string& extra) {
  const auto r = run_cli("prepare --paired " + (dir / "thermal") + " " + (dir / "visible") +
                         " --channels-b 1 --progress none --out " + (dir / out) + " " + extra);
  return r.status == 0 ? r.output : "FAILED " + r.output;
}

std::string deep_train(const TempDir& dir, const std::string& data, const std::string& run, const std::string& extra) {
  return "train --config " + std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg --data " + (dir / data) +
         " --run-dir " + (dir / run) + " --progress none " + extra;
}

}  // namespace

TEST(DeepValuesCli, SixteenBitThermalFramesTrainAndAreScoredOnTheirRange) {
  TempDir dir;
  write_pairs(dir, 48, 8);
  std::string out = prepare(dir, "t.h5", "--range-a auto");
  ASSERT_FALSE(contains(out, "FAILED")) << out;
  EXPECT_TRUE(contains(out, "A: uint16, 1 channel, on [")) << out;
  EXPECT_TRUE(contains(out, "(--range-a auto: measured)")) << out;
  auto r = run_cli("inspect " + (dir / "t.h5") + " --check");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "version 4")) << r.output;
  EXPECT_TRUE(contains(r.output, "A uint16 [48, 32, 32, 1]")) << r.output;
  EXPECT_TRUE(contains(r.output, "check: values outside their domain's range: A 0")) << r.output;

  r = run_cli(deep_train(dir, "t.h5", "run", ""));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "values                 A uint16 on [")) << r.output;
  EXPECT_TRUE(contains(r.output, "val PSNR and SSIM on B's values (peak 255)")) << r.output;
  const double logged = metrics_column(dir / "run/metrics.csv", "val_psnr").back();
  EXPECT_GT(logged, 5.0);
  // evaluate reads the same uint16 values and maps them with the same range: the same PSNR.
  r = run_cli("evaluate --progress none --checkpoint " + (dir / "run") + " --data " + (dir / "t.h5") +
              " --split val --out " + (dir / "ev"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NEAR(json_value(read_file(dir / "ev/evaluation.json"), "psnr"), logged, 1e-6);

  // translate reads the 16-bit frames as the run read them: the same figures through files.
  r = run_cli("translate --checkpoint " + (dir / "run") + " --input " + (dir / "thermal/val") + " --output " +
              (dir / "tr") + " --progress none");
  ASSERT_EQ(r.status, 0) << r.output;
  const cv::Mat image = cv::imread(dir / "tr/f48.png", cv::IMREAD_UNCHANGED);
  ASSERT_FALSE(image.empty()) << r.output;
  EXPECT_EQ(image.depth(), CV_8U);
  EXPECT_EQ(image.size(), cv::Size(32, 32));
  // An 8-bit image is not what this generator reads: refused by name, not fed on the wrong scale.
  r = run_cli("translate --checkpoint " + (dir / "run") + " --input " + (dir / "visible/val/f48.png") + " --output " +
              (dir / "tr8") + " --progress none");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "f48.png: uint8 values, but the generator was trained on uint16 on [")) << r.output;
#if PIX2PIX_HAVE_ONNX
  r = run_cli("export --checkpoint " + (dir / "run") + " --format onnx --out " + (dir / "g.onnx"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string onnx = read_file(dir / "g.onnx");
  EXPECT_TRUE(contains(onnx, "pix2pix.input_range")) << "the ONNX metadata lacks the input's range";
  EXPECT_TRUE(contains(onnx, "uint16")) << "the ONNX metadata lacks the input's sample type";
#endif

  // The reference state dict cannot hold them: its side file does.
  r = run_cli("export --checkpoint " + (dir / "run") + " --format pytorch --out " + (dir / "g.pth"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string side = read_file(dir / "g.json");
  EXPECT_TRUE(contains(side, "\"input_samples\": \"uint16\"")) << side;
  EXPECT_TRUE(contains(side, "\"output_range\": \"[0, 255]\"")) << side;
  EXPECT_TRUE(contains(side, "\"in_channels\": \"1\"")) << side;
  EXPECT_EQ(pix2pix::fixtures::run_shell("/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' " +
                                         (dir / "g.json"))
                .status,
            0)
      << side;

  // The same frames on another range are other inputs to the network: refused by name.
  out = prepare(dir, "full.h5", "");
  ASSERT_FALSE(contains(out, "FAILED")) << out;
  r = run_cli("evaluate --progress none --checkpoint " + (dir / "run") + " --data " + (dir / "full.h5") +
              " --split val --out " + (dir / "ev2"));
  EXPECT_TRUE(contains(r.output, "full.h5: its A holds uint16 on [0, 65535], but the generator of")) << r.output;
  EXPECT_EQ(r.status, 1) << "an incompatible input file, not a wrong command line: " << r.output;
  r = run_cli(deep_train(dir, "full.h5", "run", "--resume auto --max-epochs 3"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "the checkpoint's run trained on A values uint16 on [")) << r.output;
}

TEST(DeepValuesCli, AGeneratorOf16BitFramesWritesThemWholeAndTiled) {
  TempDir dir;
  write_pairs(dir, 48, 8);
  // visible -> thermal: B is the 16-bit domain, on its measured range.
  auto r = run_cli("prepare --paired " + (dir / "visible") + " " + (dir / "thermal") +
                   " --channels-a 1 --range-b auto --progress none --out " + (dir / "v2t.h5"));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli(deep_train(dir, "v2t.h5", "run", ""));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli("inspect " + (dir / "v2t.h5"));
  const std::string range = r.output.substr(r.output.find("B uint16 on [") + 13);
  const double lo = std::stod(range), hi = std::stod(range.substr(range.find(", ") + 2));
  ASSERT_LT(lo, hi) << r.output;

  r = run_cli("translate --checkpoint " + (dir / "run") + " --input " + (dir / "visible/val") + " --output " +
              (dir / "tr") + " --progress none");
  ASSERT_EQ(r.status, 0) << r.output;
  const cv::Mat frame = cv::imread(dir / "tr/f50.png", cv::IMREAD_UNCHANGED);
  ASSERT_EQ(frame.type(), CV_16UC1) << "a 16-bit domain comes out as 16-bit PNG";
  double low = 0, high = 0;
  cv::minMaxLoc(frame, &low, &high);
  EXPECT_GE(low, lo);
  EXPECT_LE(high, hi);
  EXPECT_GT(high, low) << "a constant frame";

  // A 160x96 mosaic of the val images, tiled with 64 / 32: 16-bit, the input's size, and close
  // to the whole-image translation away from the borders.
  cv::Mat mosaic(96, 160, CV_8UC1);
  for (int i = 0; i < 15; ++i)
    cv::imread(dir / ("visible/val/f" + std::to_string(48 + i % 8) + ".png"), cv::IMREAD_GRAYSCALE)
        .copyTo(mosaic(cv::Rect(32 * (i % 5), 32 * (i / 5), 32, 32)));
  fs::create_directories(dir / "big");
  cv::imwrite(dir / "big/m.png", mosaic);
  r = run_cli("translate --checkpoint " + (dir / "run") + " --input " + (dir / "big") + " --output " + (dir / "tiled") +
              " --tile 64 --overlap 32 --progress none");
  ASSERT_EQ(r.status, 0) << r.output;
  const cv::Mat tiled = cv::imread(dir / "tiled/m.png", cv::IMREAD_UNCHANGED);
  ASSERT_EQ(tiled.type(), CV_16UC1);
  EXPECT_EQ(tiled.size(), mosaic.size());
  r = run_cli("translate --checkpoint " + (dir / "run") + " --input " + (dir / "big") + " --output " + (dir / "npy") +
              " --format npy --resize none --progress none");
  ASSERT_EQ(r.status, 0) << r.output;
  const torch::Tensor whole = pix2pix::data::read_npy(dir / "npy/m.npy");  // uint16 as int32 [96, 160]
  ASSERT_EQ(whole.sizes(), (std::vector<std::int64_t>{96, 160}));
  cv::Mat tiled_wide;
  tiled.convertTo(tiled_wide, CV_32S);
  const torch::Tensor from_tiles = torch::from_blob(tiled_wide.data, {96, 160}, torch::kInt32);
  const double inside =
      (from_tiles - whole).abs().narrow(0, 16, 64).narrow(1, 16, 128).to(torch::kFloat64).mean().item<double>();
  EXPECT_LT(inside / (hi - lo), 0.05) << "tiles on the U-Net's grid blend into the whole-image translation";

  r = run_cli("translate --checkpoint " + (dir / "run") + " --input " + (dir / "big") + " --output " + (dir / "jpg") +
              " --format jpg --progress none");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--format jpg cannot hold uint16 outputs of 1 channel: use png, tif or npy"))
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "jpg"));
}
