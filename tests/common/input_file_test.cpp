// What a command may read and what it may write: regular readable files in, never an input out.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"
#include "support/fixtures.hpp"

using namespace pix2pix;
using fixtures::TempDir;

namespace {
std::string refusal(const std::string& path) {
  try {
    require_readable_file(path, "--data");
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}
}  // namespace

TEST(InputFile, OnlyReadableRegularFilesAreAccepted) {
  TempDir dir;
  std::ofstream(dir / "ok.txt") << "12345";
  EXPECT_EQ(require_readable_file(dir / "ok.txt"), 5);
  EXPECT_EQ(refusal(dir / "absent"), "--data " + (dir / "absent") + ": no such file");
  EXPECT_EQ(refusal(dir.path().string()), "--data " + dir.path().string() + ": is a directory");
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(refusal(dir / "fifo"), "--data " + (dir / "fifo") + ": is a FIFO (named pipe), not a regular file");
  EXPECT_EQ(refusal("/dev/zero"), "--data /dev/zero: is a character device, not a regular file");
  EXPECT_EQ(refusal(dir / "ok.txt/below"), "--data " + (dir / "ok.txt/below") + ": no such file");
}

TEST(InputFile, AnOutputThatIsAnInputIsRefusedWhateverItsSpelling) {
  TempDir dir;
  std::ofstream(dir / "in.idx") << "data";
  std::filesystem::create_hard_link(dir / "in.idx", dir / "hard.idx");
  std::filesystem::create_symlink(dir / "in.idx", dir / "soft.idx");
  EXPECT_TRUE(same_file(dir / "in.idx", dir / "hard.idx"));
  EXPECT_TRUE(same_file(dir / "in.idx", dir / "soft.idx"));
  EXPECT_TRUE(same_file(dir / "in.idx", dir.path().string() + "/./in.idx"));
  EXPECT_FALSE(same_file(dir / "in.idx", dir / "absent"));
  for (const char* output : {"in.idx", "hard.idx", "soft.idx"}) {
    try {
      refuse_output_among_inputs("--out", dir / output, {dir / "other", dir / "in.idx"});
      ADD_FAILURE() << output << " accepted as an output although it is the input";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("is the input " + (dir / "in.idx")), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(refuse_output_among_inputs("--out", dir / "new.h5", {dir / "in.idx"}));
}
