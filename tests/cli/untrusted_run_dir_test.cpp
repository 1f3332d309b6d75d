// A run directory is untrusted input (issue 45; See Note [a run directory is untrusted input]):
// through the binary, `report`, `train --resume` and inference given a run directory run no
// command from its contents, write through none of its links, read no file from outside it into a
// report, and refuse a FIFO or a link by name without hanging; `train --overwrite` deletes only
// what a run writes.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_helpers.hpp"
#include "support/fixtures.hpp"

using pix2pix::cli_tests::contains;
using pix2pix::cli_tests::prepare_and_train_smoke;
using pix2pix::fixtures::read_file;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::run_shell;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;

namespace {

// A copy of the trained run under `name`, for one hostile change.
std::string copy_run(const TempDir& dir, const std::string& name) {
  fs::copy(dir / "run", dir / name, fs::copy_options::recursive);
  return dir / name;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string base64_prefix_of(const std::string& bytes) {  // the first 16 characters of its base64
  static const char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i + 2 < bytes.size() && out.size() < 16; i += 3) {
    const unsigned v = static_cast<unsigned char>(bytes[i]) << 16 | static_cast<unsigned char>(bytes[i + 1]) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int shift : {18, 12, 6, 0}) out += table[(v >> shift) & 63];
  }
  return out;
}

// A run directory by hand: a metrics.csv of three epochs, as report reads it.
void fake_run(const std::string& run) {
  fs::create_directories(run);
  write(run + "/metrics.csv",
        "epoch,step,lr,loss_D,val_psnr,val_psnr_smoothed\n0,1,0.0002,0.7,12,\n1,2,0.0002,0.6,13,12.5\n"
        "2,3,0.0002,0.5,14,13.5\n");
}

}  // namespace

// Items 1-3: no command from metrics.csv's names, no write through a link, no outside file in the page.
TEST(UntrustedRunDir, ReportRunsNothingWritesThroughNoLinkAndEmbedsNothingFromOutside) {
  TempDir dir;
  ASSERT_EQ(prepare_and_train_smoke(dir), "");

  // 1. A header cell that ran a command through gnuplot's script.
  const std::string injected = copy_run(dir, "injected"), pwned = dir / "PWNED";
  std::string csv = read_file(injected + "/metrics.csv");
  const auto comma = csv.find(",loss_D,");
  ASSERT_NE(comma, std::string::npos) << csv;
  csv.replace(comma, 8, ",loss_D\" with lines; system(\"touch " + pwned + "\") #,");
  write(injected + "/metrics.csv", csv);
  auto r = run_cli("report " + injected + " --html");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(fs::exists(pwned));
  EXPECT_TRUE(contains(read_file(injected + "/report.html"), "&quot; with lines; system(&quot;touch")) << "escaped";

  // 2. Links at every name report writes, fixed temporary names of the old scheme included.
  const std::string linked = copy_run(dir, "linked"), precious = dir / "precious";
  write(precious, "keep me\n");
  for (const char* name :
       {".curves.png.tmp", ".curves.err.tmp", ".curves.gp.tmp", "curves.png", "report.html", ".report.html.tmp"}) {
    fs::remove(linked + "/" + name);
    fs::create_symlink(precious, linked + "/" + name);
  }
  r = run_cli("report " + linked + " --html");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_file(precious), "keep me\n");
  EXPECT_FALSE(fs::is_symlink(linked + "/curves.png"));
  EXPECT_FALSE(fs::is_symlink(linked + "/report.html"));

  // 3. A sample that is a link to an image outside, another that is no image, an evaluation folder
  // that is a link to one outside: none reaches the page.
  const std::string planted = copy_run(dir, "planted");
  const std::string secret = read_file(dir / "run/samples/epoch_0001.png");  // a real PNG, outside the run
  fs::copy_file(dir / "run/samples/epoch_0001.png", dir / "secret.png");
  fs::remove(planted + "/samples/epoch_0001.png");
  fs::create_symlink(dir / "secret.png", planted + "/samples/epoch_0001.png");
  write(planted + "/samples/epoch_0000.png", "not a PNG at all");
  fs::create_directories(dir / "elsewhere");
  write(dir / "elsewhere/evaluation.json", "{\n  \"split\": \"secret-split\",\n  \"images\": 3\n}\n");
  fs::create_directory_symlink(dir / "elsewhere", planted + "/eval-link");
  write(planted + "/summary.json", "{\n  \"best_epoch\": 0,\n  \"last_epoch\": 1\n}\n");
  r = run_cli("report " + planted + " --html");
  EXPECT_EQ(r.status, 0) << r.output;
  const std::string page = read_file(planted + "/report.html");
  EXPECT_FALSE(contains(page, base64_prefix_of(secret.substr(48)))) << "the outside PNG is embedded";
  EXPECT_FALSE(contains(page, "secret-split"));
  EXPECT_TRUE(contains(page, "samples/epoch_0001.png not embedded: ")) << page.substr(0, 3000);
  EXPECT_TRUE(contains(page, "is a symbolic link"));
  EXPECT_TRUE(contains(page, "samples/epoch_0000.png not embedded: not a PNG image"));
  EXPECT_TRUE(contains(r.output, "warning: report: "));
}

// Item 5: FIFOs and links to devices are refused by name, at once.
TEST(UntrustedRunDir, ReportRefusesFifosAndDevicesByNameWithoutHanging) {
  TempDir dir;
  const std::string bin = pix2pix::fixtures::pix2pix_bin();
  fake_run(dir / "fifo-summary");
  ASSERT_EQ(::mkfifo((dir / "fifo-summary/summary.json").c_str(), 0644), 0);
  auto r = run_shell("timeout 60 " + bin + " report " + (dir / "fifo-summary"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "fifo-summary/summary.json: is a FIFO")) << r.output;

  fake_run(dir / "zero-config");
  fs::create_symlink("/dev/zero", dir / "zero-config/config.cfg");
  r = run_shell("timeout 60 " + bin + " report " + (dir / "zero-config") + " --html");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "zero-config/config.cfg: is a symbolic link")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "zero-config/report.html"));

  fs::create_directories(dir / "fifo-metrics");
  ASSERT_EQ(::mkfifo((dir / "fifo-metrics/metrics.csv").c_str(), 0644), 0);
  r = run_shell("timeout 60 " + bin + " report " + (dir / "fifo-metrics"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "fifo-metrics/metrics.csv: is a FIFO")) << r.output;

  // A summary of 17 MiB is no summary: refused unread.
  fake_run(dir / "large");
  write(dir / "large/summary.json", std::string(17 << 20, ' '));
  r = run_shell("timeout 60 " + bin + " report " + (dir / "large"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "large/summary.json: is 17825792 bytes, more than the")) << r.output;
}

// `train --resume auto` and inference given a run directory read only its own files; --overwrite
// deletes only what a run writes.
TEST(UntrustedRunDir, ResumeInferenceAndOverwriteKeepToTheRunsOwnFiles) {
  TempDir dir;
  ASSERT_EQ(prepare_and_train_smoke(dir), "");
  const std::string smoke = std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg";
  const std::string train = "train --config " + smoke + " --data " + (dir / "d.h5") + " --progress none ";

  // last.pt replaced by a link (to a copy of itself outside): passed over, named; last.prev.pt continues.
  const std::string linked = copy_run(dir, "linked");
  fs::rename(linked + "/checkpoints/last.pt", dir / "outside.pt");
  fs::create_symlink(dir / "outside.pt", linked + "/checkpoints/last.pt");
  auto r = run_cli(train + "--run-dir " + linked + " --resume auto --max-epochs 3");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "checkpoints/last.pt: is a symbolic link")) << r.output;
  EXPECT_TRUE(contains(r.output, "resumed from " + linked + "/checkpoints/last.prev.pt")) << r.output;

  // The checkpoints folder as a link out of the run directory: refused before anything is written.
  const std::string folder = copy_run(dir, "folder");
  fs::rename(folder + "/checkpoints", dir / "elsewhere");
  fs::create_directory_symlink(dir / "elsewhere", folder + "/checkpoints");
  r = run_cli(train + "--run-dir " + folder + " --resume auto --max-epochs 3");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "checkpoints is a symbolic link")) << r.output;

  // Inference given a run directory whose best_generator.pt is a link.
  const std::string generator = copy_run(dir, "generator");
  fs::rename(generator + "/checkpoints/best_generator.pt", dir / "g.pt");
  fs::create_symlink(dir / "g.pt", generator + "/checkpoints/best_generator.pt");
  r = run_cli("evaluate --checkpoint " + generator + " --data " + (dir / "d.h5") + " --split val --out " +
              (dir / "eval") + " --progress none");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "checkpoints/best_generator.pt: is a symbolic link")) << r.output;

  // --overwrite and a regular file named tensorboard (a run writes a folder there): not deleted.
  const std::string mine = copy_run(dir, "mine");
  write(mine + "/tensorboard", "my notes\n");
  r = run_cli(train + "--run-dir " + mine + " --overwrite");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "tensorboard is not a folder, where a run writes one")) << r.output;
  EXPECT_EQ(read_file(mine + "/tensorboard"), "my notes\n");
}
