// Checkpoint files on their own: the seal catches truncation, extension and flipped bytes; a
// failed write leaves the previous file; last.pt keeps its predecessor; resume candidates come
// newest first.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "pix2pix/common/error.hpp"
#include "pix2pix/train/checkpoint.hpp"
#include "pix2pix/train/checkpoint_seal.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;

namespace {

void write_bytes(const std::string& path, size_t n, char seed) {
  std::ofstream out(path, std::ios::binary);
  for (size_t i = 0; i < n; ++i) out.put(static_cast<char>(seed + static_cast<char>(i * 7)));
}

// The same bytes as write_bytes, through the checkpoint writer (payload + seal).
void write_sealed(const std::string& path, size_t n, char seed) {
  std::string bytes(n, '\0');
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(seed + static_cast<char>(i * 7));
  train::SealedFileWriter file(path);
  for (size_t at = 0; at < n; at += 4099) file.write(bytes.data() + at, std::min<size_t>(4099, n - at));
  file.finish();
}

}  // namespace

TEST(CheckpointSeal, AcceptsWhatItSealedAndRejectsEveryKindOfDamage) {
  TempDir dir;
  const std::string path = dir / "c.pt";
  for (size_t n : {size_t{0}, size_t{5}, size_t{8}, size_t{1000003}}) {
    write_bytes(path, n, 3);
    EXPECT_TRUE(train::check_seal(path).has_value()) << "an unsealed file of " << n << " bytes passed";
    write_sealed(path, n, 3);
    EXPECT_EQ(train::check_seal(path), std::nullopt) << n << " bytes";
    EXPECT_EQ(static_cast<std::int64_t>(fs::file_size(path)), static_cast<std::int64_t>(n) + train::kSealBytes);
  }
  const std::string good = fixtures::read_file(path);
  {  // one flipped bit in the middle of the payload
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(500001);
    f.put(static_cast<char>(good[500001] ^ 0x10));
  }
  const auto flipped = train::check_seal(path);
  ASSERT_TRUE(flipped.has_value());
  EXPECT_NE(flipped->find("checksum mismatch"), std::string::npos) << *flipped;

  std::ofstream(path, std::ios::binary) << good.substr(0, good.size() / 2);  // truncated
  ASSERT_TRUE(train::check_seal(path).has_value());
  EXPECT_NE(train::check_seal(path)->find("no seal"), std::string::npos);

  std::ofstream(path, std::ios::binary) << "xx" << good;  // shifted by two bytes
  ASSERT_TRUE(train::check_seal(path).has_value());
  EXPECT_NE(train::check_seal(path)->find("bytes of payload"), std::string::npos) << *train::check_seal(path);
}

TEST(CheckpointFiles, AFailedWriteLeavesThePreviousFileAndNoTemporary) {
  TempDir dir;
  const std::string path = dir / "last.pt";
  std::ofstream(path) << "previous";
  try {
    train::write_atomically(path, [](const std::string& tmp) {
      std::ofstream(tmp) << "half of a new checkpoint";
      throw std::runtime_error("No space left on device");
    });
    ADD_FAILURE() << "the failure was swallowed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write " + path + ": No space left on device"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(fixtures::read_file(path), "previous");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  // A folder that cannot be written (here: it does not exist) is the same clear error.
  EXPECT_THROW(train::write_atomically(dir / "absent/last.pt",
                                       [](const std::string& tmp) {
                                         std::ofstream out(tmp);
                                         if (!out) throw std::runtime_error("cannot create " + tmp);
                                       }),
               Error);
}

TEST(CheckpointFiles, LastKeepsItsPredecessorAndCandidatesComeNewestFirst) {
  TempDir dir;
  const std::string last = dir / "last.pt";
  EXPECT_EQ(train::previous_checkpoint_path(last), dir / "last.prev.pt");
  train::keep_previous_checkpoint(last);  // nothing to keep yet
  EXPECT_FALSE(fs::exists(dir / "last.prev.pt"));
  std::ofstream(last) << "one";
  train::keep_previous_checkpoint(last);
  train::write_atomically(last, [](const std::string& tmp) { std::ofstream(tmp) << "two"; });
  EXPECT_EQ(fixtures::read_file(last), "two");
  EXPECT_EQ(fixtures::read_file(dir / "last.prev.pt"), "one");
  for (const char* name : {"epoch_0002.pt", "epoch_0010.pt", "best.pt", "epoch_0009.pt.tmp"})
    std::ofstream(dir / name) << "x";
  const auto candidates = train::resume_candidates(dir.path());
  const std::vector<std::string> expected = {dir / "last.pt", dir / "last.prev.pt", dir / "epoch_0010.pt",
                                             dir / "epoch_0002.pt"};
  EXPECT_EQ(candidates, expected);
  EXPECT_TRUE(train::resume_candidates(dir / "absent").empty());
}

// A full disk (/dev/full answers every write with ENOSPC) is an Error naming the file and the
// cause, raised after LibTorch's archive writer finished; never a terminate from its destructor.
TEST(CheckpointFiles, AFullDiskIsAnErrorNotACrash) {
  torch::serialize::OutputArchive archive;
  archive.write("weights", torch::ones({300000}));
  train::SealedFileWriter file("/dev/full");
  archive.save_to([&file](const void* data, size_t n) { return file.write(data, n); });
  try {
    file.finish();
    ADD_FAILURE() << "a write to /dev/full succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("writing /dev/full failed: No space left on device"), std::string::npos)
        << e.what();
  }
}

// The checksum does not depend on how the archive writer splits its writes.
TEST(CheckpointFiles, TheSealDoesNotDependOnHowWritesAreSplit) {
  TempDir dir;
  const std::string a = dir / "a", b = dir / "b";
  const std::string payload(100003, 'q');
  {
    train::SealedFileWriter file(a);
    file.write(payload.data(), 7);
    file.write(payload.data() + 7, payload.size() - 7);
    file.finish();
  }
  {
    train::SealedFileWriter file(b);
    file.write(payload.data(), payload.size());
    file.finish();
  }
  EXPECT_EQ(fixtures::read_file(a), fixtures::read_file(b));
  EXPECT_EQ(train::check_seal(a), std::nullopt);
}
