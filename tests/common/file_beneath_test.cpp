// Files of a folder someone else may have written (common/file_beneath.hpp) and files written
// beside them (common/atomic_file.hpp): no link followed, no FIFO or device opened, no unbounded
// read, no write through an existing name. See Note [a run directory is untrusted input].
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "pix2pix/common/atomic_file.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/file_beneath.hpp"
#include "support/fixtures.hpp"

namespace fs = std::filesystem;
using pix2pix::append_to_file;
using pix2pix::read_beneath;
using pix2pix::read_regular_file;
using pix2pix::write_file_atomically;
using pix2pix::fixtures::contains;
using pix2pix::fixtures::error_of;
using pix2pix::fixtures::TempDir;

namespace {

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST(FileBeneath, ReadsRegularFilesBelowTheFolder) {
  TempDir dir;
  fs::create_directories(dir / "samples");
  std::ofstream(dir / "samples/a.txt") << "hello";
  EXPECT_EQ(read_beneath(dir.path().string(), "samples/a.txt", 100), "hello");
  EXPECT_EQ(read_beneath(dir.path().string(), "./samples//a.txt", 100), "hello");
  EXPECT_FALSE(read_beneath(dir.path().string(), "samples/missing.txt", 100, /*must_exist=*/false));
  EXPECT_FALSE(read_beneath(dir.path().string(), "nofolder/missing.txt", 100, /*must_exist=*/false));
  EXPECT_TRUE(contains(error_of([&] { read_beneath(dir.path().string(), "samples/missing.txt", 100); }),
                       "samples/missing.txt: no such file"));
  // The folder itself may be a link the user named.
  TempDir other;
  fs::create_symlink(dir.path(), other / "run");
  EXPECT_EQ(read_beneath(other / "run", "samples/a.txt", 100), "hello");
}

TEST(FileBeneath, RefusesLinksFifosDevicesAndLargeFilesByName) {
  TempDir outside, dir;
  std::ofstream(outside / "secret") << "secret";
  fs::create_directories(outside / "folder");
  std::ofstream(outside / "folder/a.png") << "png";
  fs::create_symlink(outside / "secret", dir / "summary.json");
  fs::create_symlink(outside / "folder", dir / "samples");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  std::ofstream(dir / "big") << std::string(101, 'x');
  const std::string d = dir.path().string();
  EXPECT_TRUE(contains(error_of([&] { read_beneath(d, "summary.json", 100); }), "summary.json: is a symbolic link"));
  EXPECT_TRUE(contains(error_of([&] { read_beneath(d, "summary.json", 100, false); }), "is a symbolic link"));
  EXPECT_TRUE(contains(error_of([&] { read_beneath(d, "samples/a.png", 100); }), "samples is a symbolic link"));
  EXPECT_TRUE(contains(error_of([&] { read_beneath(d, "fifo", 100); }), "fifo: is a FIFO"));  // and no hang
  EXPECT_TRUE(contains(error_of([&] { read_beneath(d, "big", 100); }), "big: is 101 bytes, more than the 100"));
  EXPECT_TRUE(contains(error_of([&] { read_beneath(d, "../" + outside.path().filename().string() + "/secret", 100); }),
                       "(\"..\") is not read"));
  EXPECT_TRUE(contains(error_of([&] { read_beneath(d, "/etc/passwd", 100); }), "not a file inside"));
  EXPECT_EQ(read_beneath(d, "big", 101)->size(), 101u);
}

TEST(FileBeneath, ReadRegularFileRefusesDevicesAndFifosNamingTheOption) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  EXPECT_TRUE(contains(error_of([] { read_regular_file("/dev/zero", 1 << 20, "--config"); }),
                       "--config /dev/zero: is a character device"));
  EXPECT_TRUE(contains(error_of([&] { read_regular_file(dir / "fifo", 1 << 20, "cache"); }), "is a FIFO"));
  std::ofstream(dir / "a") << "abc";
  EXPECT_EQ(read_regular_file(dir / "a", 3), "abc");
  EXPECT_TRUE(contains(error_of([&] { read_regular_file(dir / "a", 2); }), "is 3 bytes, more than the 2"));
}

// Issue 45, item 2: a link planted at a target, or at a temporary name, is never written through.
TEST(FileBeneath, WritesNeverGoThroughALink) {
  TempDir outside, dir;
  const std::string precious = outside / "precious";
  std::ofstream(precious) << "keep";
  fs::create_symlink(precious, dir / "summary.json");
  // Every temporary name of the old scheme, for this process.
  fs::create_symlink(precious, dir / (".summary.json.tmp-" + std::to_string(::getpid())));
  write_file_atomically(dir / "summary.json", "{}\n");
  EXPECT_EQ(text_of(precious), "keep");
  EXPECT_FALSE(fs::is_symlink(dir / "summary.json"));
  EXPECT_EQ(text_of(dir / "summary.json"), "{}\n");

  // Appends refuse a link or a FIFO by name (O_NOFOLLOW, O_NONBLOCK: no hang without a reader).
  fs::create_symlink(precious, dir / "train.log");
  EXPECT_TRUE(contains(error_of([&] { append_to_file(dir / "train.log", "line\n"); }), "is a symbolic link"));
  EXPECT_EQ(text_of(precious), "keep");
  ASSERT_EQ(::mkfifo((dir / "metrics.csv").c_str(), 0644), 0);
  EXPECT_TRUE(contains(error_of([&] { append_to_file(dir / "metrics.csv", "row\n"); }), "cannot append to"));
}
