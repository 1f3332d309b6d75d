// --progress: each style writes what it says (a bar redrawn in place, plain lines, nothing), and
// auto picks lines when the stream is not a terminal.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/progress.hpp"

using pix2pix::Progress;
using pix2pix::ProgressStyle;

namespace {

// What a Progress of `style` writes for 3 of 5 items, a status, then finish().
std::string written(std::optional<ProgressStyle> style, bool* drew_next = nullptr) {
  std::FILE* out = std::tmpfile();
  {
    Progress progress("work", 5, out, style);
    if (drew_next != nullptr) *drew_next = progress.draws_next();
    progress.set_status("loss 0.5");
    progress.advance(3);
    progress.finish();
  }
  std::string text(4096, '\0');
  std::rewind(out);
  text.resize(std::fread(text.data(), 1, text.size(), out));
  std::fclose(out);
  return text;
}

}  // namespace

TEST(Progress, EachStyleWritesWhatItSays) {
  const std::string bar = written(ProgressStyle::bar);
  EXPECT_NE(bar.find("\r"), std::string::npos) << bar;
  EXPECT_NE(bar.find("3/5"), std::string::npos) << bar;
  EXPECT_NE(bar.find("loss 0.5"), std::string::npos) << bar;

  const std::string lines = written(ProgressStyle::lines);
  EXPECT_EQ(lines.find("\r"), std::string::npos) << lines;
  EXPECT_NE(lines.find("work: 3/5 done"), std::string::npos) << lines;
  EXPECT_NE(lines.find("loss 0.5"), std::string::npos) << lines;

  bool drew_next = true;
  EXPECT_EQ(written(ProgressStyle::none, &drew_next), "");
  EXPECT_FALSE(drew_next) << "nothing is drawn, so nothing needs reading";

  const std::string automatic = written(std::nullopt);  // on a file: lines
  EXPECT_EQ(automatic.find("\r"), std::string::npos) << automatic;
  EXPECT_EQ(automatic.rfind("work: 3/5 done", 0), 0u) << automatic;
}

TEST(Progress, StyleNamesParseAndOthersAreUsageErrors) {
  EXPECT_EQ(pix2pix::parse_progress_style("auto"), std::nullopt);
  EXPECT_EQ(pix2pix::parse_progress_style("bar"), ProgressStyle::bar);
  EXPECT_EQ(pix2pix::parse_progress_style("lines"), ProgressStyle::lines);
  EXPECT_EQ(pix2pix::parse_progress_style("none"), ProgressStyle::none);
  try {
    pix2pix::parse_progress_style("sometimes");
    ADD_FAILURE() << "no error";
  } catch (const pix2pix::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--progress must be one of auto, bar, lines, none"), std::string::npos)
        << e.what();
  }
}
