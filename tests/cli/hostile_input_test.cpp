// The binary against hostile and careless input (issue 9): bad values are usage errors before
// anything runs, nothing given to a command is destroyed, files that are not what they seem get
// a named error and never a hang, and memory stays bounded under a hard address-space limit.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/train_setup.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/data/h5_writer.hpp"
#include "support/child_process.hpp"
#include "support/fixtures.hpp"
#include "support/h5_craft.hpp"

using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::run_shell;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;
namespace po = boost::program_options;

using pix2pix::fixtures::contains;

namespace {

std::string bin() {
  return pix2pix::fixtures::pix2pix_bin();
}

std::string smoke_config() {
  return std::string(PIX2PIX_SOURCE_DIR) + "/configs/smoke.cfg";
}

// pix2pix under a hard address-space limit (its own mappings take about 0.8 GiB).
// pix2pix under an address-space limit of what its program and libraries map plus `headroom_mib`.
std::string limited(const std::string& args, long long headroom_mib = 2300) {
  return pix2pix::fixtures::address_space_limit(headroom_mib << 20) + "timeout 120 " + bin() + " " + args;
}

// A 32x32 Fashion-MNIST edges dataset of `pairs` pairs.
std::string fashion_dataset(const TempDir& dir, const std::string& name, int pairs) {
  const auto r = run_cli("prepare --images idx:" + pix2pix::fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz") +
                         " --derive edges --size 32 --limit " + std::to_string(pairs) + " --out " + (dir / name));
  EXPECT_EQ(r.status, 0) << r.output;
  return dir / name;
}

// The UsageError a command line gives, parsed in this process exactly as the binary parses it:
// training options through TrainCommandLine::resolve, the other commands through their entry points
// (which refuse a bad value before they open a file or start MPI).
std::string usage_error(const std::string& command_line) {
  std::vector<std::string> words;
  std::istringstream in(command_line);
  for (std::string w; in >> w;) words.push_back(w);
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const int argc = static_cast<int>(words.size());
  try {
    if (words[0] == "train") {
      const pix2pix::cli::TrainCommandLine train;
      const auto vm = pix2pix::cli::parse_command(
          {"train", "", ""}, train.options(), po::positional_options_description(), argc, argv.data(), &train.hidden());
      train.resolve(*vm, 1);
      train.faults(1);
    } else if (words[0] == "prepare") {
      pix2pix::cli::run_prepare(argc, argv.data());
    } else if (words[0] == "inspect") {
      pix2pix::cli::run_inspect(argc, argv.data());
    } else {
      pix2pix::cli::run_bench(argc, argv.data());
    }
  } catch (const pix2pix::UsageError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not a usage error) ") + e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(HostileInput, NonFiniteAndOutOfRangeValuesAreUsageErrorsThatNameTheOption) {
  struct Case {
    std::string args, needle;
  };
  const std::vector<Case> cases = {
      {"train --data x.h5 --lr inf", "--lr must be a finite number, got inf"},
      {"train --data x.h5 --lr nan", "--lr must be a finite number, got nan"},
      {"train --data x.h5 --lr -0.1", "--lr must be > 0, got -0.1"},
      {"train --data x.h5 --lambda-l1 inf", "--lambda-l1 must be a finite number"},
      {"train --data x.h5 --lambda-l1 -1", "--lambda-l1 must be >= 0, got -1"},
      {"train --data x.h5 --beta1 1", "--beta1 must be in [0, 1), got 1"},
      {"train --data x.h5 --beta2 -0.5", "--beta2 must be in [0, 1), got -0.5"},
      {"train --data x.h5 --n-layers-d 0", "--n-layers-d must be in 1..8, got 0"},
      {"train --data x.h5 --ngf 100000", "--ngf must be in 1..1024, got 100000"},
      {"train --data x.h5 --num-downs 3", "--num-downs must be 0 (from the crop size) or in 5..14"},
      {"train --data x.h5 --bucket-mb 0", "--bucket-mb must be in (0, 65536], got 0"},
      {"train --data x.h5 --es-min-delta nan", "--es-min-delta must be a finite number"},
      {"train --data x.h5 --collective-timeout -1", "--collective-timeout must be > 0"},
      {"train --data x.h5 --max-epochs 0", "--max-epochs must be >= 1, got 0"},
      {"train --data x.h5 --val-every 0", "--val-every must be >= 1, got 0"},
      {"train --data x.h5 --batch-size 0", "--batch-size must be in 1..2147483648, got 0"},
      {"train --data x.h5 --cache everywhere", "--cache must be one of auto, device, host, none"},
      {"train --data x.h5 --precision fp64", "--precision must be one of"},
      {"train --data x.h5 --overlap-grad-sync sometimes", "--overlap-grad-sync must be one of on, off, auto"},
      {"train --data x.h5 --grad-dtype fp16", "--grad-dtype must be one of fp32, bf16"},
      {"train --data x.h5 --progress sometimes", "--progress must be one of auto, bar, lines, none"},
      {"prepare --aligned x --out y.h5 --progress 1", "--progress must be one of auto, bar, lines, none"},
      {"train --data x.h5 --resume auto --run-dir r --overwrite", "--overwrite starts a new run"},
      {"prepare --aligned x --out y.h5 --val-fraction nan", "--val-fraction must be a finite number"},
      {"prepare --aligned x --out y.h5 --val-fraction 1", "--val-fraction must be in [0, 1), got 1"},
      {"prepare --aligned x --out y.h5 --max-bad inf", "--max-bad must be a finite number"},
      {"prepare --aligned x --out y.h5 --blur-sigma 0", "--blur-sigma must be in (0, 1000], got 0"},
      {"prepare --aligned x --out y.h5 --channels 2", "must be 1 or 3"},
      {"prepare --aligned x --out y.h5 --compression 10", "--compression must be in 0..9, got 10"},
      {"inspect x.h5 --sample -3", "--sample must be >= 0, got -3"},
      {"bench --what loader --data x.h5 --epochs 0", "--epochs must be in 1..1000000, got 0"},
  };
  for (const Case& c : cases) {
    const std::string message = usage_error(c.args);
    EXPECT_TRUE(contains(message, c.needle)) << c.args << "\nexpected: " << c.needle << "\ngot: " << message;
  }
  // The binary turns them into status 2, from the command line and from a config file alike.
  TempDir dir;
  std::ofstream(dir / "inf.cfg") << "lr = inf\n";
  for (const std::string& args :
       std::vector<std::string>{"train --data x.h5 --beta1 1", "train --data x.h5 --device gpu",
                                "train --config " + (dir / "inf.cfg") + " --data x.h5",
                                "prepare --aligned x --out y.h5 --val-fraction nan"}) {
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "must be")) << r.output;
  }
}

TEST(HostileInput, ConfigMustBeASmallReadableRegularFile) {
  TempDir dir;
  ASSERT_EQ(mkfifo((dir / "fifo.cfg").c_str(), 0600), 0);
  std::ofstream(dir / "big.cfg") << std::string(2 << 20, '#');
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir.path().string(), "is a directory"},
      {"/dev/zero", "is a character device, not a regular file"},
      {dir / "fifo.cfg", "is a FIFO (named pipe), not a regular file"},
      {dir / "big.cfg", "2097152 bytes is not a config file"},
      {dir / "absent.cfg", "no such file"}};
  for (const auto& [path, needle] : cases) {
    const auto r = run_shell("timeout 20 " + bin() + " train --data x.h5 --config " + path);
    EXPECT_EQ(r.status, 2) << path << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "--config " + path + ": " + needle)) << r.output;
  }
}

TEST(HostileInput, ANonEmptyRunDirectoryIsNeverReplacedSilently) {
  TempDir dir;
  const std::string data = fashion_dataset(dir, "d.h5", 80);
  const std::string run = dir / "run";
  auto r = run_cli("train --config " + smoke_config() + " --data " + data + " --run-dir " + run);
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string best = pix2pix::fixtures::read_file(run + "/checkpoints/best.pt"),
                    metrics = pix2pix::fixtures::read_file(run + "/metrics.csv");
  ASSERT_FALSE(best.empty());

  // Another shape into the same folder, without --resume: refused, nothing touched.
  r = run_cli("train --config " + smoke_config() + " --ngf 4 --data " + data + " --run-dir " + run);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "--run-dir " + run + " is not empty (checkpoints, config.cfg") &&
              contains(r.output, "--resume auto") && contains(r.output, "--overwrite"))
      << r.output;
  EXPECT_EQ(pix2pix::fixtures::read_file(run + "/checkpoints/best.pt"), best);
  EXPECT_EQ(pix2pix::fixtures::read_file(run + "/metrics.csv"), metrics);

  // A folder holding anything at all is not taken either.
  fs::create_directories(dir / "notes");
  std::ofstream(dir / "notes/todo.txt") << "keep me";
  r = run_cli("train --config " + smoke_config() + " --data " + data + " --run-dir " + (dir / "notes"));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "is not empty (todo.txt)")) << r.output;

  // --overwrite says what it deletes, and leaves no file of the old run behind.
  std::ofstream(run + "/mine.txt") << "not the trainer's";
  r = run_cli("train --config " + smoke_config() + " --ngf 4 --max-epochs 1 --data " + data + " --run-dir " + run +
              " --overwrite");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "--overwrite: deleted the previous run in " + run +
                                     ": checkpoints samples config.cfg "
                                     "metrics.csv metrics.jsonl train.log summary.json"))
      << r.output;
  EXPECT_FALSE(fs::exists(run + "/checkpoints/last.prev.pt")) << "a checkpoint of the old run survived";
  EXPECT_NE(pix2pix::fixtures::read_file(run + "/checkpoints/best.pt"), best);
  EXPECT_EQ(pix2pix::fixtures::read_file(run + "/mine.txt"), "not the trainer's");

  // --overwrite never deletes an input: the dataset inside the run's folders.
  fs::copy_file(data, run + "/samples/d.h5");
  r = run_cli("train --config " + smoke_config() + " --data " + run + "/samples/d.h5 --run-dir " + run +
              " --overwrite");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "which is the input")) << r.output;
  EXPECT_TRUE(fs::exists(run + "/samples/d.h5"));
}

TEST(HostileInput, NoCommandWritesOverOneOfItsInputs) {
  TempDir dir;
  // An IDX image file as --out of the prepare that reads it, also through a hard link.
  fs::copy_file(pix2pix::fixtures::fashion_mnist("t10k-images-idx3-ubyte.gz"), dir / "images-idx3-ubyte.gz");
  fs::create_hard_link(dir / "images-idx3-ubyte.gz", dir / "link.gz");
  const std::string before = pix2pix::fixtures::read_file(dir / "images-idx3-ubyte.gz");
  for (const char* out : {"images-idx3-ubyte.gz", "link.gz"}) {
    const auto r = run_cli("prepare --images idx:" + (dir / "images-idx3-ubyte.gz") +
                           " --derive edges --limit 50 --overwrite --out " + (dir / out));
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_TRUE(contains(r.output, "--out " + (dir / out) + " is the input")) << r.output;
  }
  EXPECT_EQ(pix2pix::fixtures::read_file(dir / "images-idx3-ubyte.gz"), before) << "prepare destroyed its input";

  // An image of an aligned folder.
  pix2pix::fixtures::write_pattern_folder(dir / "ab", 6, 8, 8, 3, true);
  const std::string image = pix2pix::fixtures::read_file(dir / "ab/img002.png");
  auto r =
      run_cli("prepare --aligned " + (dir / "ab") + " --val-fraction 0.5 --overwrite --out " + (dir / "ab/img002.png"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(pix2pix::fixtures::read_file(dir / "ab/img002.png"), image);

  // bench --csv onto the dataset it reads.
  const std::string data = fashion_dataset(dir, "d.h5", 40);
  const std::string dataset = pix2pix::fixtures::read_file(data);
  r = run_cli("bench --what train --config " + smoke_config() + " --data " + data + " --csv " + data);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--csv " + data + " is the input")) << r.output;
  EXPECT_EQ(pix2pix::fixtures::read_file(data), dataset);
}

TEST(HostileInput, FilesThatAreNotWhatTheySeemGetNamedErrorsQuickly) {
  TempDir dir;
  ASSERT_EQ(mkfifo((dir / "fifo.h5").c_str(), 0600), 0);
  for (const std::string& args :
       {"inspect " + (dir / "fifo.h5") + " --check", "train --data " + (dir / "fifo.h5") + " --run-dir " + (dir / "r"),
        "prepare --images idx:" + (dir / "fifo.h5") + " --derive edges --out " + (dir / "o.h5")}) {
    const auto r = run_shell("timeout 20 " + bin() + " " + args);
    EXPECT_EQ(r.status, 1) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "fifo.h5: is a FIFO (named pipe), not a regular file")) << r.output;
  }
  // Unreadable by this user: "permission denied", not "not an HDF5 file". As root, the command
  // runs as nobody (setpriv), since root reads any file.
  const std::string data = fashion_dataset(dir, "d.h5", 40);
  fs::permissions(dir.path(), fs::perms::all, fs::perm_options::add);
  fs::permissions(data, fs::perms::none);
  const std::string as_user = geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
  const auto r = run_shell(as_user + bin() + " inspect " + data);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, data + ": permission denied")) << r.output;
}

TEST(HostileInput, DeclaredSizesCannotExhaustMemory) {
  TempDir dir;
  // The probe's 94 KB file: [10^9, 4096, 4096, 3] declared, nothing stored.
  auto split = pix2pix::fixtures::crafted_split("train");
  split[0].second.dims = {1000000000, 4096, 4096, 3};
  split[1].second.dims = {1000000000, 4096, 4096, 3};
  split[0].second.stored = split[1].second.stored = false;
  for (auto& d : pix2pix::fixtures::crafted_split("val")) split.push_back(d);
  pix2pix::fixtures::craft_h5(dir / "hostile.h5", {"train", "val"}, split);
  for (const std::string& args :
       {"train --data " + (dir / "hostile.h5") + " --run-dir " + (dir / "r"), "inspect " + (dir / "hostile.h5")}) {
    const auto r = run_shell(limited(args));
    EXPECT_EQ(r.status, 1) << args << "\n" << r.output;
    EXPECT_TRUE(contains(r.output, "hostile.h5: /train/A: declares 1000000000 pairs") &&
                contains(r.output, "but stores only 0 of its 1000000000 chunks"))
        << r.output;
  }

  // IDX headers: a 16-byte file that declares 2^31-1 images, and a header of 10^6 28x28
  // images followed by one image.
  {
    std::ofstream f(dir / "tiny-images-idx3-ubyte", std::ios::binary);
    const unsigned char header[16] = {0, 0, 8, 3, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 28, 0, 0, 0, 28};
    f.write(reinterpret_cast<const char*>(header), 16);
    gzFile g = gzopen((dir / "short-images-idx3-ubyte.gz").c_str(), "wb");
    const unsigned char million[16] = {0, 0, 8, 3, 0, 0x0f, 0x42, 0x40, 0, 0, 0, 28, 0, 0, 0, 28};
    gzwrite(g, million, 16);
    const std::string image(28 * 28, '\x80');
    gzwrite(g, image.data(), static_cast<unsigned>(image.size()));
    gzclose(g);
  }
  for (const auto& [file, needle] : std::vector<std::pair<std::string, std::string>>{
           {"tiny-images-idx3-ubyte", "declares 2147483647 images of 28x28"},
           {"short-images-idx3-ubyte.gz", "declares 1000000 images of 28x28"}}) {
    const auto r =
        run_shell(limited("prepare --images idx:" + (dir / file) + " --derive edges --out " + (dir / "o.h5")));
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_TRUE(contains(r.output, file + ": IDX file is truncated: its header " + needle)) << r.output;
  }
}

TEST(HostileInput, TooLittleMemoryToTrainIsAnErrorNotAHang) {
  TempDir dir;
  const std::string data = fashion_dataset(dir, "d.h5", 80);
  // About what this test binary maps (the same libraries as pix2pix) plus 200 MiB: enough to
  // start and read the data, not the 512 MiB floor of training. Without the floor, OpenBLAS
  // retries its failed buffer allocation forever and the run hangs until `timeout` ends it (124).
  const long long limit = pix2pix::fixtures::mapped_bytes() + (200LL << 20);
  const auto r = run_shell("prlimit --as=" + std::to_string(limit) + " timeout 60 " + bin() + " train --config " +
                           smoke_config() + " --data " + data + " --run-dir " + (dir / "run"));
  EXPECT_EQ(r.status, 1) << "limit " << limit << "\n" << r.output;
  EXPECT_TRUE(contains(r.output, "training these networks") && contains(r.output, "(ulimit -v)")) << r.output;
}

TEST(HostileInput, InspectReadsLargeImagesInBoundedBlocks) {
  TempDir dir;
  // 80 pairs of 512x512 RGB (1.5 MiB a pair): 120 MiB of pixels that must not be read, nor
  // widened to float64, all at once.
  {
    pix2pix::data::PairedFileWriter writer(dir / "big.h5", 0);
    writer.write_root_attributes("tests", "big", "tests");
    const cv::Mat image = pix2pix::fixtures::pattern_image(512, 512, 3, 1);
    for (const char* split : {"train", "val"}) {
      writer.begin_split(split, {512, 512, 3, 3, false, false, 1});
      for (int i = 0; i < 40; ++i) writer.append(image.data, image.data, 0, "");
      writer.end_split();
    }
    writer.close();
  }
  const auto r = run_shell(limited("inspect " + (dir / "big.h5") + " --sample 0 --check", 450));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "check: OK")) << r.output;
}

TEST(HostileInput, ASignalDuringSetUpStopsTheRunThere) {
  TempDir dir;
  // More train pairs than one cache block (4096), so that the fill has a second block to skip.
  const std::string data = fashion_dataset(dir, "d.h5", 5000);
  const std::string run = dir / "run";
  const auto r = run_shell("timeout 120 " + bin() + " train --config " + smoke_config() + " --data " + data +
                           " --run-dir " + run + " --test-signal TERM --test-signal-in-setup --test-rank 0");
  EXPECT_EQ(r.status, 75) << r.output;
  EXPECT_TRUE(contains(r.output, "interrupted by signal 15 while caching the shard (8192 of 9000 images read)") &&
              contains(r.output, "nothing was written"))
      << r.output;
  EXPECT_FALSE(fs::exists(run + "/checkpoints/last.pt")) << "a step ran after the signal";
  EXPECT_FALSE(fs::exists(run + "/summary.json"));
}

TEST(HostileInput, ARunThatCannotLearnFailsInsteadOfReportingABestModel) {
  TempDir dir;
  const std::string data = fashion_dataset(dir, "d.h5", 80);
  const std::string run = dir / "run";
  // A finite but absurd learning rate: the first update blows the weights up, and from then on
  // every gradient is non-finite and every step is skipped.
  const auto r = run_cli("train --config " + smoke_config() + " --data " + data + " --run-dir " + run +
                         " --lr 1e30 --max-epochs 4");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "steps left the generator") && contains(r.output, "the run cannot learn")) << r.output;
  EXPECT_FALSE(fs::exists(run + "/summary.json")) << "a run that cannot learn must not look finished";
}

// A resume is never silently a different experiment (See Note [options a resume may change]): options
// that change what is learned are refused by name unless --accept-changed-options; the others are
// listed and taken.
TEST(HostileInput, AResumeThatChangesWhatIsLearnedIsRefusedByName) {
  TempDir dir;
  const std::string data = fashion_dataset(dir, "d.h5", 80);
  const std::string run = dir / "run";
  const std::string train = "train --config " + smoke_config() + " --data " + data + " --run-dir " + run;
  auto r = run_cli(train);
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli(train + " --resume auto --max-epochs 3 --lr 1e-3 --gan-mode lsgan");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output,
                       "this run changes what the checkpoint's run learns: --gan-mode vanilla -> lsgan, "
                       "--lr 0.0002 -> 0.001; give the values it was trained with"))
      << r.output;
  // Another file under the dataset's name is another experiment too.
  const std::string other = fashion_dataset(dir, "other.h5", 90);
  fs::copy_file(other, data, fs::copy_options::overwrite_existing);
  r = run_cli(train + " --resume auto --max-epochs 3");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--data-contents ")) << r.output;
  r = run_cli(train + " --resume auto --max-epochs 3 --accept-changed-options");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "note: --resume: options changed since the checkpoint: ")) << r.output;
  EXPECT_TRUE(contains(r.output, "--max-epochs 2 -> 3")) << r.output;
  // How the job runs may change without a word more than the note.
  r = run_cli(train + " --resume auto --max-epochs 4 --val-batch-size 4");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "--max-epochs 3 -> 4, --val-batch-size 64 -> 4")) << r.output;
}
