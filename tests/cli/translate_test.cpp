// pix2pix translate as a user meets it: a folder of images (nested names, other sizes, a broken
// file, --max-bad), a dataset split (the same pixels as evaluate's G(A)), --aligned, --format,
// --channels, existing outputs, and usage and input errors named with their exit status.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "cli/cli_helpers.hpp"
#include "support/fixtures.hpp"

using pix2pix::fixtures::pattern_image;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::TempDir;
using pix2pix::fixtures::write_png;
namespace fs = std::filesystem;
using pix2pix::cli_tests::contains;

TEST(TranslateCli, FoldersAndSplitsBecomeImagesOfTheirOwnNamesAndSizes) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir), "");
  pix2pix::fixtures::CommandResult r;
  const std::string translate = "translate --progress none --checkpoint " + (dir / "run");

  // A dataset split: the files hold what evaluate's sample grid shows as G(A), row by row.
  r = run_cli(translate + " --data " + (dir / "d.h5") + " --split val --output " + (dir / "val"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "translated 8 of 8 images (0 skipped)")) << r.output;
  r = run_cli("evaluate --progress none --checkpoint " + (dir / "run") + " --data " + (dir / "d.h5") +
              " --split val --out " + (dir / "ev"));
  ASSERT_EQ(r.status, 0) << r.output;
  const cv::Mat grid = cv::imread(dir / "ev/samples.png", cv::IMREAD_UNCHANGED);
  // The output of pair i is named by its stored name, which evaluation.csv lists by index.
  std::vector<fs::path> outputs;
  std::ifstream csv(dir / "ev/evaluation.csv");
  std::string line;
  std::getline(csv, line);
  while (std::getline(csv, line)) {
    const auto first = line.find(','), second = line.find(',', first + 1);
    outputs.push_back(fs::path(dir / "val") / (line.substr(first + 1, second - first - 1) + ".png"));
  }
  ASSERT_EQ(outputs.size(), 8u);
  // The sheet's tiles are 4x the 32 px images (nearest neighbour), under a label band.
  ASSERT_EQ(grid.cols, 3 * 128);
  const int header = grid.rows - 8 * 128;
  ASSERT_GT(header, 0);
  for (int i = 0; i < 8; ++i) {
    cv::Mat image = cv::imread(outputs[static_cast<size_t>(i)].string(), cv::IMREAD_UNCHANGED);
    cv::resize(image, image, cv::Size(), 4, 4, cv::INTER_NEAREST);
    const cv::Mat fake = grid(cv::Rect(128, header + 128 * i, 128, 128));
    ASSERT_EQ(image.type(), fake.type()) << outputs[static_cast<size_t>(i)];
    EXPECT_EQ(cv::norm(image, fake, cv::NORM_INF), 0) << outputs[static_cast<size_t>(i)];
  }

  // A folder: nested names mirrored, other sizes come back at their size, a broken file skipped.
  write_png(dir / "in/a.png", pattern_image(32, 32, 1, 1));
  write_png(dir / "in/deep/b.png", pattern_image(45, 37, 1, 2));
  std::ofstream(dir / "in/broken.png") << "not an image";
  std::ofstream(dir / "in/readme.txt") << "ignored";
  r = run_cli(translate + " --input " + (dir / "in") + " --output " + (dir / "out"));
  EXPECT_EQ(r.status, 1) << r.output;  // 1 of 3 undecodable > --max-bad 0.01
  EXPECT_TRUE(contains(r.output, "skipping " + (dir / "in/broken.png"))) << r.output;
  EXPECT_TRUE(contains(r.output, "1 of 3 inputs could not be decoded, more than --max-bad 0.01")) << r.output;
  EXPECT_TRUE(fs::exists(dir / "out/a.png"));
  EXPECT_EQ(cv::imread(dir / "out/deep/b.png", cv::IMREAD_UNCHANGED).size(), cv::Size(37, 45));
  r = run_cli(translate + " --input " + (dir / "in") + " --output " + (dir / "out") + " --max-bad 0.5");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, (dir / "out/a.png") + " exists (and 1 more outputs); use --overwrite")) << r.output;
  r = run_cli(translate + " --input " + (dir / "in") + " --output " + (dir / "out") + " --max-bad 0.5 --overwrite" +
              " --resize none --format jpg");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(cv::imread(dir / "out/deep/b.jpg", cv::IMREAD_UNCHANGED).size(), cv::Size(37, 45));

  // A|B images: the left half is A. RGB into a grey model only with --channels.
  cv::Mat ab;
  cv::hconcat(pattern_image(32, 32, 3, 5), pattern_image(32, 32, 3, 6), ab);
  write_png(dir / "ab/pair.png", ab);
  r = run_cli(translate + " --input " + (dir / "ab/pair.png") + " --aligned --output " + (dir / "ab-out"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, (dir / "ab/pair.png") + ": 3 channel(s), the generator takes 1 (--channels converts)"))
      << r.output;
  r = run_cli(translate + " --input " + (dir / "ab/pair.png") + " --aligned --channels 1 --output " + (dir / "ab-out"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(cv::imread(dir / "ab-out/pair.png", cv::IMREAD_UNCHANGED).size(), cv::Size(32, 32));

  struct Bad {
    std::string args, message;
    int status;
  };
  for (const Bad& bad : {
           Bad{translate + " --input " + (dir / "in") + " --data " + (dir / "d.h5") + " --output " + (dir / "x"),
               "exactly one of", 2},
           Bad{translate + " --input " + (dir / "in") + " --split val --output " + (dir / "x"),
               "--split goes with --data", 2},
           Bad{translate + " --data " + (dir / "d.h5") + " --aligned --output " + (dir / "x"),
               "--aligned goes with --input", 2},
           Bad{translate + " --input " + (dir / "in") + " --resize stretch --output " + (dir / "x"),
               "--resize must be one of model, none", 2},
           Bad{translate + " --input " + (dir / "in") + " --format gif --output " + (dir / "x"),
               "--format must be one of auto, png, jpg, tif, npy", 2},
           Bad{translate + " --input " + (dir / "in") + " --channels 3 --output " + (dir / "x"),
               "--channels 3, but the generator of", 2},
           Bad{translate + " --input " + (dir / "in"), "missing --output", 2},
           Bad{translate + " --data " + (dir / "d.h5") + " --split test --output " + (dir / "x"),
               (dir / "d.h5") + ": has no test split", 1},
           Bad{translate + " --input " + (dir / "nothing") + " --output " + (dir / "x"),
               "--input " + (dir / "nothing") + ": no such file or folder", 1},
           Bad{"translate --progress none --checkpoint " + (dir / "none.pt") + " --input " + (dir / "in") +
                   " --output " + (dir / "x"),
               dir / "none.pt", 1},
           Bad{translate + " --input " + (dir / "in") + " --output /proc/no/such", "--output /proc/no/such", 1},
       }) {
    r = run_cli(bad.args);
    EXPECT_EQ(r.status, bad.status) << bad.args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, bad.message)) << bad.args << "\n" << r.output;
  }
}

// --netG resnet_6blocks through the binary: the run says what it trained, translate and evaluate
// rebuild that generator from the run alone, and both export formats write it.
TEST(TranslateCli, AResnetGeneratorRunIsUsedLikeAUnetRun) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir, "--netG resnet_6blocks --norm instance"), "");
  EXPECT_TRUE(contains(pix2pix::fixtures::read_file(dir / "run/config.cfg"), "netG = resnet_6blocks"))
      << pix2pix::fixtures::read_file(dir / "run/config.cfg");
  pix2pix::fixtures::CommandResult r = run_cli("translate --progress none --checkpoint " + (dir / "run") + " --data " +
                                               (dir / "d.h5") + " --split val --output " + (dir / "val"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "translated 8 of 8 images (0 skipped)")) << r.output;
  r = run_cli("evaluate --progress none --checkpoint " + (dir / "run") + " --data " + (dir / "d.h5") +
              " --split val --out " + (dir / "ev"));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli("export --checkpoint " + (dir / "run") + " --format onnx --out " + (dir / "g.onnx"));
  ASSERT_EQ(r.status, pix2pix::cli_tests::kOnnxExportStatus) << r.output;
  r = run_cli("export --checkpoint " + (dir / "run") + " --format pytorch --out " + (dir / "g.pth"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "reference ResnetGenerator names")) << r.output;
  // The reference-format file is a generator for translate too: the same pixels.
  r = run_cli("translate --progress none --checkpoint " + (dir / "g.pth") + " --data " + (dir / "d.h5") +
              " --split val --output " + (dir / "val-pth"));
  ASSERT_EQ(r.status, 0) << r.output;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "val")) {
    if (!entry.is_regular_file()) continue;
    const fs::path twin = dir / "val-pth" / fs::relative(entry.path(), dir / "val");
    EXPECT_EQ(pix2pix::fixtures::read_file(entry.path()), pix2pix::fixtures::read_file(twin)) << twin;
  }

  // A Pix2Pix run has no B-to-A generator.
  r = run_cli("translate --progress none --direction BtoA --checkpoint " + (dir / "run") + " --data " + (dir / "d.h5") +
              " --split val --output " + (dir / "no-ba"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--direction BtoA needs the checkpoint of a model with a generator back (B to A)"))
      << r.output;

  // What --netG refuses, before anything is read.
  const std::string train = "train --data " + (dir / "d.h5") + " --run-dir " + (dir / "refused") + " ";
  r = run_cli(train + "--netG resnet_7blocks");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "--netG resnet_7blocks: not unet, unet_128")) << r.output;
  r = run_cli(train + "--netG resnet_9blocks --num-downs 6");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "--num-downs is the depth of a U-Net")) << r.output;
  r = run_cli(train + "--netG unet_128 --num-downs 6");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "--netG unet_128 is a U-Net of depth 7, --num-downs says 6")) << r.output;
  // unet_128 on 32x32 images: a depth the images cannot take, named.
  r = run_cli(train + "--netG unet_128 --max-epochs 1");
  EXPECT_EQ(r.status, 1) << r.output;
}

// --model cyclegan through the binary: it trains on the shared engine with the reference's
// defaults (ResNet generators, instance norm, LSGAN), its G_A translates, and options of the other
// model are refused rather than ignored.
TEST(TranslateCli, ACycleGanRunTrainsAndItsGeneratorTranslates) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir, "--model cyclegan --pool-size 4"), "");
  const std::string log = pix2pix::fixtures::read_file(dir / "run/train.log");
  EXPECT_TRUE(contains(log, "loss_cycle_A")) << log;
  EXPECT_FALSE(contains(log, "no curves.png")) << log;
  EXPECT_TRUE(fs::exists(dir / "run/curves.png"));
  const std::string config = pix2pix::fixtures::read_file(dir / "run/config.cfg");
  EXPECT_TRUE(contains(config, "model = cyclegan")) << config;
  pix2pix::fixtures::CommandResult r = run_cli("translate --progress none --checkpoint " + (dir / "run") + " --data " +
                                               (dir / "d.h5") + " --split val --output " + (dir / "val"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "translated 8 of 8 images (0 skipped)")) << r.output;
  r = run_cli("export --checkpoint " + (dir / "run") + " --format onnx --out " + (dir / "g.onnx"));
  EXPECT_EQ(r.status, pix2pix::cli_tests::kOnnxExportStatus) << r.output;
  // G_B on request: translate the split's B images and export it; it maps B's channels back to A.
  r = run_cli("translate --progress none --direction BtoA --checkpoint " + (dir / "run") + " --data " + (dir / "d.h5") +
              " --split val --output " + (dir / "val-ba"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "translated 8 of 8 images (0 skipped)")) << r.output;
  std::size_t differing = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir / "val")) {
    if (!entry.is_regular_file()) continue;
    const fs::path twin = dir / "val-ba" / fs::relative(entry.path(), dir / "val");
    ASSERT_TRUE(fs::exists(twin)) << twin;
    differing += pix2pix::fixtures::read_file(entry.path()) != pix2pix::fixtures::read_file(twin) ? 1 : 0;
  }
  EXPECT_EQ(differing, 8u) << "G_B(B) is another image than G_A(A)";
  r = run_cli("export --direction BtoA --checkpoint " + (dir / "run") + " --format pytorch --out " + (dir / "gb.pth"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "best.pt")) << r.output;
  r = run_cli("export --direction BtoA --checkpoint " + (dir / "run/checkpoints/best_generator.pt") +
              " --format onnx --out " + (dir / "gb.onnx"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "holds no G_B")) << r.output;
  r = run_cli("export --direction BtoA --checkpoint " + (dir / "run") + " --format pytorch --out " + (dir / "gb2.pth") +
              " --discriminator-out " + (dir / "d.pth"));
  EXPECT_EQ(r.status, 2) << r.output;
  // evaluate --direction BtoA scores G_B on each val pair's B against its A.
  r = run_cli("evaluate --progress none --direction BtoA --checkpoint " + (dir / "run") + " --data " + (dir / "d.h5") +
              " --split val --out " + (dir / "eval-ba"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "direction BtoA: G_B translated each pair's B")) << r.output;
  EXPECT_TRUE(contains(pix2pix::fixtures::read_file(dir / "eval-ba/evaluation.json"), "\"direction\": \"BtoA\""));
  r = run_cli("evaluate --progress none --checkpoint " + (dir / "run") + " --data " + (dir / "d.h5") +
              " --split val --out " + (dir / "eval-ab"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(pix2pix::fixtures::read_file(dir / "eval-ab/evaluation.csv"),
            pix2pix::fixtures::read_file(dir / "eval-ba/evaluation.csv"));

  // Its config.cfg (which lists both models' options at their values) repeats it.
  r = run_cli("train --config " + (dir / "run/config.cfg") + " --run-dir " + (dir / "again") + " --progress none");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(pix2pix::fixtures::read_file(dir / "again/config.cfg"), "model = cyclegan"));

  const std::string train = "train --data " + (dir / "d.h5") + " --run-dir " + (dir / "refused") + " ";
  r = run_cli(train + "--model cyclegan --lambda-l1 50");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "--lambda-l1 is an option of pix2pix; --model cyclegan does not take it")) << r.output;
  r = run_cli(train + "--pool-size 10");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "--pool-size is an option of cyclegan and onesided; --model pix2pix does not take it"))
      << r.output;
  r = run_cli(train + "--model cycle");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "--model")) << r.output;
  r = run_cli(train + "--lambda-deviation 5");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "--lambda-deviation is an option of onesided; --model pix2pix does not take it"))
      << r.output;
  r = run_cli(train + "--model onesided --lambda-A 5");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "--lambda-A is an option of cyclegan; --model onesided does not take it")) << r.output;
}

// --model onesided from the command line: it trains, its generator translates, its run exports,
// and it has no G_B.
TEST(TranslateCli, AOneSidedRunTrainsAndItsGeneratorTranslates) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir, "--model onesided --pool-size 4"), "");
  const std::string log = pix2pix::fixtures::read_file(dir / "run/train.log");
  EXPECT_TRUE(contains(log, "loss_G_dev")) << log;
  EXPECT_TRUE(contains(pix2pix::fixtures::read_file(dir / "run/config.cfg"), "model = onesided"));
  pix2pix::fixtures::CommandResult r = run_cli("translate --progress none --checkpoint " + (dir / "run") + " --data " +
                                               (dir / "d.h5") + " --split val --output " + (dir / "val"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "translated 8 of 8 images (0 skipped)")) << r.output;
  r = run_cli("export --checkpoint " + (dir / "run/checkpoints/best.pt") + " --format pytorch --out " +
              (dir / "g.pth") + " --discriminator-out " + (dir / "d.pth"));
  EXPECT_EQ(r.status, 0) << r.output;
  r = run_cli("translate --progress none --direction BtoA --checkpoint " + (dir / "run/checkpoints/best.pt") +
              " --data " + (dir / "d.h5") + " --split val --output " + (dir / "val-ba"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "needs the checkpoint of a model with a generator back")) << r.output;
}
