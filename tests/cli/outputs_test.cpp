// No writer may destroy one of its inputs (docs/input-checks.md, "Outputs"): an output that is an
// input, by file identity through symbolic links, ".." and hard links, is a usage error (status 2)
// with --overwrite too, and the input is left byte for byte as it was.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "cli/cli_helpers.hpp"
#include "support/fixtures.hpp"

using pix2pix::cli_tests::contains;
using pix2pix::fixtures::pattern_image;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::TempDir;
using pix2pix::fixtures::write_png;
namespace fs = std::filesystem;

namespace {

// Every regular file under `folder` with its contents.
std::map<std::string, std::string> snapshot(const std::string& folder) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(folder))
    if (entry.is_regular_file()) files[entry.path().string()] = pix2pix::fixtures::read_file(entry.path().string());
  return files;
}

}  // namespace

TEST(Outputs, TranslateNeverReplacesItsInputImages) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir), "");
  const std::string translate = "translate --progress none --overwrite --checkpoint " + (dir / "run");
  write_png(dir / "in/a.png", pattern_image(32, 32, 1, 1));
  write_png(dir / "in/deep/b.png", pattern_image(32, 32, 1, 2));
  const auto before = snapshot(dir / "in");
  fs::create_directory_symlink(dir / "in", dir / "alias");
  // A folder onto itself, the same through a link and through "..", one file into its own folder.
  for (const std::string& output : {dir / "in", dir / "alias", dir / "in/deep/../../in"}) {
    const auto r = run_cli(translate + " --input " + (dir / "in") + " --output " + output);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "is the input " + (dir / "in/a.png") + " (the same file); writing it would destroy"))
        << r.output;
  }
  auto r = run_cli(translate + " --input " + (dir / "in/deep/b.png") + " --output " + (dir / "in/deep"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "is the input " + (dir / "in/deep/b.png"))) << r.output;
  EXPECT_EQ(snapshot(dir / "in"), before) << "an input image was changed";
  // Into the input folder under other names (JPEG outputs of PNG inputs) destroys nothing: allowed.
  r = run_cli(translate + " --input " + (dir / "in") + " --output " + (dir / "in") + " --format jpg");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "in/deep/b.jpg"));
  for (const auto& [path, bytes] : before) EXPECT_EQ(pix2pix::fixtures::read_file(path), bytes) << path;
}

TEST(Outputs, EvaluateExportAndBenchNeverReplaceTheirInputs) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir), "");
  // The dataset under an evaluation file's name, in the --out folder.
  fs::create_directories(dir / "ev");
  fs::copy_file(dir / "d.h5", dir / "ev/evaluation.json");
  fs::create_hard_link(dir / "d.h5", dir / "ev/samples.png");
  const std::string dataset = pix2pix::fixtures::read_file(dir / "d.h5");
  for (const std::string& data : {dir / "ev/evaluation.json", dir / "ev/samples.png"}) {
    const auto r = run_cli("evaluate --progress none --overwrite --checkpoint " + (dir / "run") + " --data " + data +
                           " --split val --out " + (dir / "ev"));
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "is the input " + data + " (the same file)")) << r.output;
    EXPECT_EQ(pix2pix::fixtures::read_file(data), dataset) << data;
  }
  // export onto the checkpoint it reads, or onto the config it was given.
  const std::string generator = dir / "run/checkpoints/best_generator.pt";
  const std::string checkpoint = pix2pix::fixtures::read_file(generator);
  auto r = run_cli("export --overwrite --format onnx --checkpoint " + generator + " --out " + generator);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "is the input")) << r.output;
  EXPECT_EQ(pix2pix::fixtures::read_file(generator), checkpoint);
  std::ofstream(dir / "export.cfg") << "format = pytorch\n";
  r = run_cli("export --overwrite --config " + (dir / "export.cfg") + " --checkpoint " + generator + " --out " +
              (dir / "export.cfg"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(pix2pix::fixtures::read_file(dir / "export.cfg"), "format = pytorch\n");
  // bench --csv onto its config file.
  std::ofstream(dir / "bench.cfg") << "steps = 1\n";
  r = run_cli("bench --what train --config " + (dir / "bench.cfg") + " --data " + (dir / "d.h5") + " --csv " +
              (dir / "bench.cfg"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--csv " + (dir / "bench.cfg") + " is the input")) << r.output;
  EXPECT_EQ(pix2pix::fixtures::read_file(dir / "bench.cfg"), "steps = 1\n");
}

TEST(Outputs, ATrainingRunNeverWritesOverAnInputInItsRunDirectory) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir), "");
  // The dataset linked in as metrics.csv of the run a --resume continues.
  fs::remove(dir / "run/metrics.csv");
  fs::create_symlink(dir / "d.h5", dir / "run/metrics.csv");
  const std::string dataset = pix2pix::fixtures::read_file(dir / "d.h5");
  const std::string smoke = std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg";
  const auto r = run_cli("train --config " + smoke + " --data " + (dir / "d.h5") + " --run-dir " + (dir / "run") +
                         " --resume auto --max-epochs 3");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "holds the input " + (dir / "d.h5") + " as " + (dir / "run/metrics.csv"))) << r.output;
  EXPECT_EQ(pix2pix::fixtures::read_file(dir / "d.h5"), dataset);
}
