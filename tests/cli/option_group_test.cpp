// See Note [an option is declared once]: a declaration binds an option to its field, checks its
// range as it is parsed, and carries what a resume, the ranks and the run directory must know.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pix2pix/cli/option_group.hpp"
#include "pix2pix/cli/train_setup.hpp"
#include "pix2pix/common/choices.hpp"

namespace po = boost::program_options;
using pix2pix::Range;
using pix2pix::cli::OptionGroup;
using pix2pix::train::OptionRole;

namespace {

po::variables_map parse(const po::options_description& options, std::vector<std::string> words) {
  words.insert(words.begin(), "test");
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  return *pix2pix::cli::parse_command({"test", "", ""}, options, po::positional_options_description(),
                                      static_cast<int>(words.size()), argv.data());
}

std::string usage_error(const po::options_description& options, const std::vector<std::string>& words) {
  try {
    parse(options, words);
  } catch (const pix2pix::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OptionGroup, StoresEachValueInItsFieldAndChecksItAsItIsParsed) {
  long count = 3;
  double rate = 0.5;
  std::string name = "x", path;
  bool flip = true, verbose = false;
  std::optional<bool> layout;
  std::optional<std::int64_t> step;
  OptionGroup g("Test");
  g.count("count", count, 1, 10, "");
  g.real("rate", rate, Range::right_open(0, 1), "");
  g.text("name", name, "");
  g.optional_text("path", path, "");
  g.flag("no-flip", flip, "", /*when_given=*/false);
  g.flag("verbose", verbose, "");
  g.on_off_auto("layout", layout, "");
  g.optional_count("step", step, 0, pix2pix::cli::kNoLimit, "");

  const po::variables_map defaults = parse(g.description(), {});
  EXPECT_EQ(count, 3);
  EXPECT_EQ(rate, 0.5);
  EXPECT_EQ(name, "x");
  EXPECT_TRUE(path.empty());
  EXPECT_TRUE(flip);
  EXPECT_FALSE(layout.has_value());
  EXPECT_FALSE(step.has_value());
  EXPECT_TRUE(pix2pix::cli::options_set(defaults, g.description()).empty()) << "defaults are not set";

  const po::variables_map given = parse(g.description(), {"--count", "7", "--rate", "0.25", "--path", "p", "--no-flip",
                                                          "--layout", "on", "--step", "12"});
  EXPECT_EQ(count, 7);
  EXPECT_EQ(rate, 0.25);
  EXPECT_EQ(path, "p");
  EXPECT_FALSE(flip);
  EXPECT_EQ(layout, std::optional<bool>(true));
  EXPECT_EQ(step, std::optional<std::int64_t>(12));
  EXPECT_EQ(pix2pix::cli::options_set(given, g.description()),
            (std::vector<std::string>{"count", "rate", "path", "no-flip", "layout", "step"}));

  EXPECT_EQ(usage_error(g.description(), {"--count", "11"}), "--count must be in 1..10, got 11");
  EXPECT_EQ(usage_error(g.description(), {"--rate", "1"}), "--rate must be in [0, 1), got 1");
  EXPECT_EQ(usage_error(g.description(), {"--step", "-1"}), "--step must be >= 0, got -1");
  EXPECT_EQ(usage_error(g.description(), {"--layout", "sideways"}),
            "--layout must be one of on, off, auto; got 'sideways'");
}

// What other parts of the program know of an option comes from its declaration: what a resume may
// change (option_changes), what ranks may give apart (options_to_agree), the files a job reads,
// and what belongs to the run directory (bench refuses it).
TEST(TrainCommandLine, DeclaresWhatAResumeMayChangeWhatRanksMayGiveApartAndTheFilesItReads) {
  const pix2pix::cli::TrainCommandLine train;
  const auto roles = pix2pix::cli::option_roles(train.options());
  const auto kind = [&](const char* name) { return roles.at(name).kind; };
  for (const char* learned : {"lr", "gan-mode", "ngf", "seed", "preprocess", "es-window", "lambda-l1", "model"})
    EXPECT_EQ(kind(learned), OptionRole::learned) << learned;
  for (const char* how : {"device", "comm", "threads", "batch-size", "global-batch", "max-epochs", "cache",
                          "channels-last", "val-features", "val-kid-subsets", "data", "init-generator"})
    EXPECT_EQ(kind(how), OptionRole::how_the_job_runs) << how;
  for (const char* invocation : {"run-dir", "resume", "overwrite", "accept-changed-options"})
    EXPECT_EQ(kind(invocation), OptionRole::this_invocation) << invocation;
  EXPECT_EQ(roles.at("ema-decay").before_it_existed, std::optional<std::string>("0"));

  std::vector<std::string> rank_local, run_directory;
  for (const auto& option : train.options().options()) {
    const auto* tags = pix2pix::cli::option_tags(train.options(), option->long_name());
    ASSERT_NE(tags, nullptr) << option->long_name() << " is not declared through OptionGroup";
    if (tags->rank_local) rank_local.push_back(option->long_name());
    if (tags->run_directory) run_directory.push_back(option->long_name());
  }
  EXPECT_EQ(rank_local, (std::vector<std::string>{"run-dir", "device", "collective-log", "progress",
                                                  "collective-timeout", "threads"}));
  EXPECT_EQ(run_directory, (std::vector<std::string>{"run-dir", "resume", "overwrite", "accept-changed-options",
                                                     "keep-last", "tensorboard", "quality-targets"}));

  const po::variables_map vm = parse(
      train.options(), {"--data", "d.h5", "--aux-classifier", "c.pt", "--val-features", "f.pt", "--run-dir", "r"});
  EXPECT_EQ(pix2pix::cli::input_files(vm, train.options()),
            (std::vector<std::pair<std::string, std::string>>{
                {"--data", "d.h5"}, {"--aux-classifier", "c.pt"}, {"--val-features", "f.pt"}}));
}
