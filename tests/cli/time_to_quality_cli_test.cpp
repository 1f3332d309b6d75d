// Time to quality as a user reads it (See Note [time to quality]): metrics.csv has the run's two
// clocks at every epoch, summary.json the epoch and time each --quality-targets value was first
// reached, and both continue over a resumed session; bad targets are refused by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "cli/cli_helpers.hpp"
#include "support/fixtures.hpp"

using pix2pix::cli_tests::contains;
using pix2pix::cli_tests::json_value;
using pix2pix::cli_tests::metrics_column;
using pix2pix::cli_tests::prepare_small_pairs;
using pix2pix::cli_tests::smoke_train_command;
using pix2pix::fixtures::read_file;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::TempDir;

namespace {

// summary.json's time_to_quality line.
std::string time_to_quality(const TempDir& dir) {
  const std::string summary = read_file(dir / "run/summary.json");
  const auto at = summary.find("\"time_to_quality\": ");
  if (at == std::string::npos) return "no time_to_quality in " + summary;
  return summary.substr(at, summary.find('\n', at) - at);
}

}  // namespace

TEST(TimeToQualityCli, TheSummarySaysWhenEachTargetWasReachedOverResumes) {
  TempDir dir;
  ASSERT_EQ(prepare_small_pairs(dir), "");
  // A window of 1: every validation has a smoothed PSNR; -1000 dB is reached at once, 1000 never.
  const std::string options = "--es-window 1 --quality-targets=-1000,1000";
  auto r = run_cli(smoke_train_command(dir, "run", options));
  ASSERT_EQ(r.status, 0) << r.output;
  std::string line = time_to_quality(dir);
  EXPECT_TRUE(contains(line, "{\"column\": \"val_psnr_smoothed\", \"lower_is_better\": false, \"train_s\": ")) << line;
  EXPECT_TRUE(contains(line, "\"targets\": [{\"target\": -1000, \"epoch\": 0, \"train_s\": ")) << line;
  EXPECT_TRUE(contains(line, "{\"target\": 1000, \"epoch\": null, \"train_s\": null, \"wall_s\": null}]}")) << line;
  const std::string best =
      "\"best\": {\"epoch\": " +
      std::to_string(static_cast<long>(json_value(read_file(dir / "run/summary.json"), "best_epoch"))) +
      ", \"train_s\": ";
  EXPECT_TRUE(contains(line, best)) << line;

  // A second session: the clocks go on from the checkpoint's, and the targets are read from every
  // session's rows.
  r = run_cli(smoke_train_command(dir, "run", options + " --resume auto --max-epochs 4"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto train_s = metrics_column(dir / "run/metrics.csv", "train_s");
  const auto wall_s = metrics_column(dir / "run/metrics.csv", "wall_s");
  ASSERT_EQ(train_s.size(), 4u);
  for (std::size_t e = 0; e < train_s.size(); ++e) {
    EXPECT_GT(train_s[e], e ? train_s[e - 1] : 0.0) << "epoch " << e << ": the training clock goes on";
    EXPECT_GT(wall_s[e], e ? wall_s[e - 1] : 0.0) << "epoch " << e << ": the wall clock goes on";
    EXPECT_GE(wall_s[e], train_s[e]) << "epoch " << e << ": wall time includes each session's set-up";
  }
  line = time_to_quality(dir);
  EXPECT_TRUE(contains(line, "\"targets\": [{\"target\": -1000, \"epoch\": 0, \"train_s\": ")) << line;
  const double total = json_value(line.substr(line.find('{')), "train_s");
  EXPECT_GE(total, train_s.back()) << line;

  // report.html shows it beside the curves, read from metrics.csv.
  r = run_cli("report " + (dir / "run") + " --html");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string html = read_file(dir / "run/report.html");
  const auto table = html.find("<h2>Time to quality</h2>");
  ASSERT_NE(table, std::string::npos) << html;
  EXPECT_LT(table, html.find("<h2>Curves</h2>"));
  char first[64];
  std::snprintf(first, sizeof(first), "%.5g", train_s[0]);
  EXPECT_TRUE(contains(html, "<tr><td>val_psnr_smoothed &gt;= -1000</td><td>0</td><td>" + std::string(first) + "</td>"))
      << html.substr(table, 600);
  EXPECT_TRUE(contains(html, "<tr><td>val_psnr_smoothed &gt;= 1000</td><td>–</td><td>–</td><td>–</td></tr>"))
      << html.substr(table, 600);

  // Which way is better is the run's word in the summary, not a guess from the column's name:
  // said the other way, -1000 is never reached and 1000 at once.
  std::string summary = read_file(dir / "run/summary.json");
  const std::string said = "\"lower_is_better\": false";
  ASSERT_NE(summary.find(said), std::string::npos) << summary;
  summary.replace(summary.find(said), said.size(), "\"lower_is_better\": true");
  std::ofstream(dir / "run/summary.json") << summary;
  r = run_cli("report " + (dir / "run") + " --html");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string lower = read_file(dir / "run/report.html");
  EXPECT_TRUE(contains(lower, "<tr><td>val_psnr_smoothed &lt;= -1000</td><td>–</td><td>–</td><td>–</td></tr>"))
      << lower;
  EXPECT_TRUE(contains(lower, "<tr><td>val_psnr_smoothed &lt;= 1000</td><td>0</td><td>" + std::string(first) + "</td>"))
      << lower;
}

TEST(TimeToQualityCli, BadTargetsAreRefusedByName) {
  TempDir dir;
  ASSERT_EQ(prepare_small_pairs(dir), "");
  auto r = run_cli(smoke_train_command(dir, "run", "--quality-targets 16,abc"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--quality-targets: 'abc' is not a number")) << r.output;
  r = run_cli("bench --what train --data " + (dir / "d.h5") + " --steps 1 --warmup 0 --quality-targets 16");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--quality-targets is train's")) << r.output;
}
