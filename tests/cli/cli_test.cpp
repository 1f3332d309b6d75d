// The pix2pix binary as a user meets it: exit codes, messages that name the option or file,
// --config files, --version, inspect --check on a damaged file, and an interrupted prepare.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "pix2pix/cli/rank_agreement.hpp"
#include "support/fixtures.hpp"

using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;

using pix2pix::fixtures::contains;

TEST(Cli, VersionNamesEveryLibrary) {
  const auto r = run_cli("--version");
  EXPECT_EQ(r.status, 0) << r.output;
  for (const char* lib : {"pix2pix-mpi", "LibTorch", "HDF5", "MPI", "OpenCV", "ONNX", "CUDA/NCCL", "GPUs"})
    EXPECT_TRUE(contains(r.output, lib)) << lib << " missing in:\n" << r.output;
}

TEST(Cli, UsageErrorsExitWithTwoAndNameTheProblem) {
  EXPECT_EQ(run_cli("").status, 2);
  auto r = run_cli("train-everything");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "unknown command 'train-everything'")) << r.output;
  r = run_cli("prepare --aligned x --out y --frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "frobnicate")) << r.output;
  r = run_cli("prepare --aligned x --out y --size big");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "--size")) << r.output;
  r = run_cli("prepare --aligned x --images y --out z");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "exactly one of --aligned, --paired, --images")) << r.output;
  r = run_cli("inspect");
  EXPECT_EQ(r.status, 2);
}

TEST(Cli, EveryCommandHasHelp) {
  for (const char* command : {"prepare", "inspect", "bench", "train", "report"}) {
    const auto r = run_cli(std::string(command) + " --help");
    EXPECT_EQ(r.status, 0) << command;
    EXPECT_TRUE(contains(r.output, "usage: pix2pix " + std::string(command))) << r.output;
    EXPECT_TRUE(contains(r.output, "--config")) << r.output;
  }
}

TEST(Cli, ConfigFileSuppliesOptionsAndTheCommandLineWins) {
  TempDir dir;
  pix2pix::fixtures::write_pattern_folder(dir / "ab", 10, 8, 8, 3, true);
  std::ofstream(dir / "prep.ini") << "# comment\naligned = " << (dir / "ab") << "\nsize = 4\nval-fraction = 0.5\n";
  auto r = run_cli("prepare --config " + (dir / "prep.ini") + " --size 6 --out " + (dir / "o.h5"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "10 pairs of 6x6")) << r.output;  // size from the command line
  EXPECT_TRUE(contains(r.output, "val: 5 pairs")) << r.output;     // val-fraction from the file
  std::ofstream(dir / "bad.ini") << "sise = 4\n";
  r = run_cli("prepare --config " + (dir / "bad.ini") + " --aligned x --out y");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "bad.ini") && contains(r.output, "sise")) << r.output;
  r = run_cli("prepare --config " + (dir / "absent.ini") + " --aligned x --out y");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "absent.ini")) << r.output;
}

TEST(Cli, BadInputsExitNonZeroWithTheirName) {
  TempDir dir;
  auto r = run_cli("prepare --aligned " + (dir / "nowhere") + " --out " + (dir / "o.h5"));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.output, "nowhere: no such folder")) << r.output;
  std::ofstream(dir / "not.h5") << "hello";
  r = run_cli("inspect " + (dir / "not.h5"));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.output, "not.h5: not an HDF5 file")) << r.output;
  r = run_cli("inspect " + (dir / "not.h5") + " --h5-driver posix");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "--h5-driver")) << r.output;
}

TEST(Cli, FashionMnistPrepareThenInspectCheck) {
  TempDir dir;
  auto r = run_cli("prepare --images idx:" + pix2pix::fixtures::fashion_mnist("train-images-idx3-ubyte.gz") +
                   " --derive edges --size 32 --labels --limit 300 --threads 2 --out " + (dir / "f.h5"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "train: 270 pairs")) << r.output;
  EXPECT_TRUE(contains(r.output, "images/s")) << r.output;
  r = run_cli("inspect " + (dir / "f.h5") + " --check");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "A uint8 [270, 32, 32, 1]")) << r.output;
  EXPECT_TRUE(contains(r.output, "check: OK")) << r.output;
  r = run_cli("bench --what loader --data " + (dir / "f.h5") + " --batch-size 16 --cache none --epochs 1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "cache none") && contains(r.output, "images/s")) << r.output;
  r = run_cli("bench --what read --data " + (dir / "f.h5") + " --worlds 1 3");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "\n3 ") && contains(r.output, "90")) << r.output;  // 270 / 3 pairs
  r = run_cli("bench --what loader --data " + (dir / "f.h5") + " --batch-size 1000");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.output, "fewer than --batch-size 1000")) << r.output;
  r = run_cli("bench --what everything --data " + (dir / "f.h5"));
  EXPECT_EQ(r.status, 2);
}

TEST(Cli, InspectCheckFindsACorruptChunk) {
  TempDir dir;
  const std::string path = dir / "c.h5";
  auto r = run_cli("prepare --images idx:" + pix2pix::fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz") +
                   " --derive blur --limit 50 --compression 6 --out " + path);
  ASSERT_EQ(r.status, 0) << r.output;
  // Find where pair 7 of train/B lies in the file and overwrite its compressed bytes.
  haddr_t offset = 0;
  hsize_t size = 0;
  {
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t ds = H5Dopen2(file, "/train/B", H5P_DEFAULT);
    const hsize_t coords[4] = {7, 0, 0, 0};
    ASSERT_GE(H5Dget_chunk_info_by_coord(ds, coords, nullptr, &offset, &size), 0);
    H5Dclose(ds);
    H5Fclose(file);
  }
  ASSERT_GT(size, 8u);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    const std::string garbage(static_cast<size_t>(size), '\x5a');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  r = run_cli("inspect " + path + " --check --sample 1");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "/train: pairs 0..") && contains(r.output, "unreadable")) << r.output;
}

TEST(Cli, InterruptedPrepareLeavesNoOutputFile) {
  TempDir dir;
  const std::string out = dir / "big.h5";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (freopen("/dev/null", "w", stdout) == nullptr || freopen("/dev/null", "w", stderr) == nullptr) _exit(126);
    const std::string source = "idx:" + pix2pix::fixtures::fashion_mnist("train-images-idx3-ubyte.gz");
    execl(PIX2PIX_BIN, "pix2pix", "prepare", "--images", source.c_str(), "--derive", "edges", "--size", "128",
          "--compression", "9", "--out", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until it is writing (its temporary file exists), then interrupt it.
  bool writing = false;
  for (int i = 0; i < 600 && !writing; ++i) {
    for (const auto& entry : fs::directory_iterator(dir.path()))
      writing = writing || entry.path().filename().string().rfind(".big.h5.tmp-", 0) == 0;
    if (!writing) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(writing) << "prepare never started writing";
  kill(child, SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << "status " << status;
  EXPECT_FALSE(fs::exists(out)) << "an interrupted prepare left a file under the final name";
  for (const auto& entry : fs::directory_iterator(dir.path())) ADD_FAILURE() << "left behind: " << entry.path();
}

TEST(Cli, TrainRunsFromAConfigAndItsRunConfigRepeatsIt) {
  TempDir dir;
  auto r = run_cli("prepare --images idx:" + pix2pix::fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz") +
                   " --derive edges --size 32 --limit 80 --out " + (dir / "d.h5"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string smoke = std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg";
  r = run_cli("train --config " + smoke + " --data " + (dir / "d.h5") + " --run-dir " + (dir / "run"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "baseline val PSNR")) << r.output;
  EXPECT_TRUE(contains(r.output, "stopped: reached --max-epochs 2")) << r.output;
  // The start-up table names the libraries this process runs with and every rank's device.
  EXPECT_TRUE(contains(r.output, "libraries              LibTorch ")) << r.output;
  EXPECT_EQ(contains(r.output, "CUDA/NCCL compiled for CUDA runtime"),
            contains(run_cli("--version").output, "compiled for"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "rank 0  host ") && contains(r.output, "local rank 0  device ")) << r.output;
  EXPECT_TRUE(fs::exists(dir / "run/checkpoints/best_generator.pt"));
  // Not a terminal: the progress is plain lines (auto), one at each epoch's end at least.
  EXPECT_TRUE(contains(r.output, "epoch 0: 9/9 done")) << r.output;
  // curves.png is drawn after each validation; `report` prints the summary and redraws it.
  ASSERT_TRUE(fs::exists(dir / "run/curves.png"));
  fs::remove(dir / "run/curves.png");
  r = run_cli("report " + (dir / "run"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "\"best_epoch\": ")) << r.output;
  EXPECT_TRUE(contains(r.output, "curves: " + (dir / "run/curves.png"))) << r.output;
  EXPECT_TRUE(fs::exists(dir / "run/curves.png"));
  r = run_cli("report " + (dir / "nowhere"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, (dir / "nowhere/metrics.csv") + " does not exist")) << r.output;
  // The run's own config.cfg is a valid --config: it repeats the run elsewhere (without progress).
  r = run_cli("train --config " + (dir / "run/config.cfg") + " --run-dir " + (dir / "again") + " --progress none");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_FALSE(contains(r.output, " done, ")) << r.output;
  EXPECT_TRUE(contains(r.output, "epoch 1: loss_D")) << r.output;
  std::ifstream a(dir / "run/metrics.csv"), b(dir / "again/metrics.csv");
  std::string line_a, line_b;
  std::getline(a, line_a);
  std::getline(b, line_b);
  std::getline(a, line_a);
  std::getline(b, line_b);
  EXPECT_EQ(line_a.substr(0, 60), line_b.substr(0, 60)) << "same options, same seed: same first epoch";
}

TEST(Cli, TrainUsageAndInputErrorsNameTheirCause) {
  TempDir dir;
  std::ofstream(dir / "bad.cfg") << "batch-size = 4\nlearning-rate = 0.1\n";
  auto r = run_cli("train --config " + (dir / "bad.cfg") + " --data x.h5");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "learning-rate")) << r.output;
  r = run_cli("train --data " + (dir / "missing.h5") + " --run-dir " + (dir / "run"));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.output, "missing.h5: no such file")) << r.output;
  r = run_cli("train --data x.h5 --resume auto");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "--run-dir")) << r.output;
  r = run_cli("train --data x.h5 --comm gloo");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "--comm must be one of auto, nccl, mpi")) << r.output;
  r = run_cli("train --data x.h5 --comm nccl --device cpu");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.output, "--comm nccl needs GPU ranks")) << r.output;
  r = run_cli("train --data x.h5 --precision fp64");
  EXPECT_NE(r.status, 0);
  EXPECT_TRUE(contains(r.output, "--precision")) << r.output;
}

TEST(Cli, InterruptedTrainingExitsWith75AndResumes) {
  TempDir dir;
  auto r = run_cli("prepare --images idx:" + pix2pix::fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz") +
                   " --derive edges --size 32 --limit 400 --out " + (dir / "d.h5"));
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string smoke = std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg";
  const std::string data = dir / "d.h5", run = dir / "run";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (freopen("/dev/null", "w", stdout) == nullptr || freopen("/dev/null", "w", stderr) == nullptr) _exit(126);
    execl(PIX2PIX_BIN, "pix2pix", "train", "--config", smoke.c_str(), "--data", data.c_str(), "--run-dir", run.c_str(),
          "--max-epochs", "1000", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Interrupt once the first epoch is checkpointed.
  const std::string last = dir / "run/checkpoints/last.pt";
  for (int i = 0; i < 1200 && !fs::exists(last); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(last)) << "no checkpoint appeared";
  kill(child, SIGTERM);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal instead of stopping cleanly";
  EXPECT_EQ(WEXITSTATUS(status), 75);
  EXPECT_FALSE(fs::exists(dir / "run/summary.json")) << "an interrupted run must not look finished";
  r = run_cli("train --config " + smoke + " --data " + data + " --run-dir " + run + " --max-epochs 3 --resume auto");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "resumed from")) << r.output;
  EXPECT_TRUE(fs::exists(dir / "run/summary.json"));
}

// See Note [ranks that agree]: the first difference is named by rank, field and both values, a field
// only one side has too; equal fields in any order agree.
TEST(RankAgreement, TheFirstDifferenceNamesTheRankTheFieldAndBothValues) {
  using pix2pix::cli::AgreedFields;
  using pix2pix::cli::first_disagreement;
  const AgreedFields root = {{"--lr", "0.0002"}, {"--batch-size", "1"}};
  EXPECT_EQ(first_disagreement({root, root, {{"--batch-size", "1"}, {"--lr", "0.0002"}}}), "");
  EXPECT_EQ(first_disagreement({root, root, {{"--lr", "0.0002"}, {"--batch-size", "4"}}}),
            "rank 2 has --batch-size 4, rank 0 has 1");
  EXPECT_EQ(first_disagreement({root, {{"--lr", "0.0002"}}}), "rank 0 has --batch-size 1, rank 1 has no --batch-size");
  EXPECT_EQ(first_disagreement({root, {{"--lr", "0.0002"}, {"--batch-size", "1"}, {"--x", ""}}}),
            "rank 1 has --x (empty), rank 0 has no --x");
  EXPECT_EQ(first_disagreement({root}), "");
}

// --sync-bn as a user meets it (See Note [synchronised batch norm]): a bad value is a usage error, and
// the start-up table says what batch norm normalises over, also when the option changes nothing.
TEST(SyncBnOption, TheStartUpTableSaysWhatBatchNormNormalisesOver) {
  pix2pix::fixtures::TempDir dir;
  const std::string data = dir / "d.h5";
  auto r = pix2pix::fixtures::run_cli(
      "prepare --images idx:" + pix2pix::fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz") +
      " --derive edges --size 32 --limit 40 --out " + data);
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string train = "train --config " + std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg --data " + data +
                            " --max-epochs 1 --run-dir ";
  r = pix2pix::fixtures::run_cli(train + (dir / "bad") + " --sync-bn maybe");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--sync-bn must be one of auto, on, off; got 'maybe'"), std::string::npos) << r.output;
  r = pix2pix::fixtures::run_cli(train + (dir / "one") + " --sync-bn on");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("batch norm             over the batch of 8 (one rank: --sync-bn on changes nothing)"),
            std::string::npos)
      << r.output;
  r = pix2pix::fixtures::run_cli(train + (dir / "instance") + " --sync-bn on --norm instance");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("batch norm             none (--norm instance); --sync-bn on has nothing to synchronise"),
            std::string::npos)
      << r.output;
  // See Note [batch norm over too few images]: warned at batch 1 with eval-mode validation, not otherwise.
  const std::string warned = "warning: batch norm normalises over 1 image at a time";
  EXPECT_EQ(r.output.find(warned), std::string::npos) << "instance norm: " << r.output;
  r = pix2pix::fixtures::run_cli(train + (dir / "b1") + " --batch-size 1");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find(warned), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("a larger --batch-size, --norm instance or --val-mode train avoid it"), std::string::npos)
      << r.output;
  r = pix2pix::fixtures::run_cli(train + (dir / "b1-train-mode") + " --batch-size 1 --val-mode train");
  EXPECT_EQ(r.output.find(warned), std::string::npos) << r.output;
  EXPECT_EQ(pix2pix::fixtures::run_cli(train + (dir / "b8")).output.find("warning: batch norm"), std::string::npos);
}

// See Note [cuDNN's autotuner and determinism]: the options of train, bench and train-classifier,
// refused by name where they cannot apply, and said at start-up where they do.
TEST(Cli, ConvolutionOptionsAreRefusedWhereTheyCannotApplyAndSaidWhereTheyDo) {
  TempDir dir;
  pix2pix::fixtures::make_pattern_dataset(dir / "d.h5", 16, 4, 32, 3, 3, /*labels=*/true);
  const std::string smoke = std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg";
  const std::string data = " --data " + dir / "d.h5" + " --device cpu --progress none";
  for (const std::string& command : std::vector<std::string>{"train --config " + smoke + " --run-dir " + dir / "run",
                                                             "bench --what train --steps 1 --warmup 0",
                                                             "train-classifier --max-epochs 1 --out " + dir / "c.pt"}) {
    auto r = run_cli(command + data + " --cudnn-benchmark on");
    EXPECT_EQ(r.status, 2) << command << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "--cudnn-benchmark on needs GPU ranks (--device cuda)")) << r.output;
    r = run_cli(command + data + " --cudnn-benchmark sometimes");
    EXPECT_EQ(r.status, 2) << command << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "--cudnn-benchmark")) << r.output;
    r = run_cli(command + data + " --tf32 on");  // See Note [TF32 convolutions]
    EXPECT_EQ(r.status, 2) << command << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "--tf32 on needs GPU ranks (--device cuda)")) << r.output;
  }
  const auto r = run_cli("train --config " + smoke + " --run-dir " + dir / "det" + " --max-epochs 1 --deterministic" +
                         data + " --cudnn-benchmark off");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "kernels: deterministic (--deterministic: an op without a deterministic kernel"))
      << r.output;
  const auto help = run_cli("train --help");
  EXPECT_TRUE(contains(help.output, "auto | nccl | mpi")) << "--comm's help names every backend";
}
