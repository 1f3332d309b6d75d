// `report RUN_DIR --html` as a user opens it: rendered by the distribution's headless Chromium,
// whose screenshot must not be blank and whose DOM, after the page's load event, says every image
// loaded (the check itself fails on a page with one image damaged).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "cli/cli_helpers.hpp"
#include "support/fixtures.hpp"

using pix2pix::cli_tests::contains;
using pix2pix::fixtures::read_file;
using pix2pix::fixtures::run_cli;
using pix2pix::fixtures::run_shell;
using pix2pix::fixtures::TempDir;
namespace fs = std::filesystem;

namespace {

// The headless Chromium of the distribution (chromium-headless-shell, or chromium), "" without.
std::string chromium() {
  const auto r = run_shell("command -v chromium-headless-shell || command -v chromium");
  return r.status == 0 ? r.output.substr(0, r.output.find('\n')) : "";
}

std::string render(const std::string& browser, const TempDir& dir, const std::string& page, const std::string& what) {
  return run_shell("timeout 120 " + browser + " --headless --no-sandbox --disable-gpu --user-data-dir=" +
                   (dir / "profile") + " --window-size=1000,1600 " + what + " file://" + page + " 2>/dev/null")
      .output;
}

}  // namespace

TEST(HtmlReport, RendersInChromiumWithEveryImageLoaded) {
  const std::string browser = chromium();
  ASSERT_FALSE(browser.empty()) << "no headless Chromium: install chromium-headless-shell (scripts/install-deps.sh)";
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir), "");
  auto r = run_cli("evaluate --progress none --checkpoint " + (dir / "run") + " --data " + (dir / "d.h5") +
                   " --split val --out " + (dir / "run/eval-val"));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli("report " + (dir / "run") + " --html");
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string page = dir / "run/report.html";
  EXPECT_TRUE(contains(r.output, "report: " + page)) << r.output;
  const std::string html = read_file(page);
  EXPECT_TRUE(contains(html, "<svg")) << "the curves";
  EXPECT_TRUE(contains(html, "eval-val")) << "the evaluation found in the run directory";
  EXPECT_TRUE(contains(html, "ngf = 8")) << "the run's options";
  EXPECT_TRUE(contains(html, "LibTorch")) << "the library versions";
  int images = 0;
  for (auto at = html.find("<img "); at != std::string::npos; at = html.find("<img ", at + 1)) ++images;
  ASSERT_GE(images, 3) << "best and last samples and the evaluation's";

  const std::string dom = render(browser, dir, page, "--dump-dom");
  const std::string all = "images loaded: " + std::to_string(images) + " of " + std::to_string(images);
  EXPECT_TRUE(contains(dom, all)) << dom.substr(0, 400);

  render(browser, dir, page, "--screenshot=" + (dir / "shot.png"));
  const cv::Mat shot = cv::imread(dir / "shot.png", cv::IMREAD_GRAYSCALE);
  ASSERT_FALSE(shot.empty()) << "no screenshot";
  cv::Scalar mean, deviation;
  cv::meanStdDev(shot, mean, deviation);
  EXPECT_GT(deviation[0], 20) << "a blank page (mean " << mean[0] << ")";

  // The check is able to fail: one embedded image damaged.
  std::string broken = html;
  const auto at = broken.find("base64,");
  ASSERT_NE(at, std::string::npos);
  broken.replace(at + 7, 16, "!!!!notbase64!!!");
  std::ofstream(dir / "broken.html") << broken;
  const std::string damaged = render(browser, dir, dir / "broken.html", "--dump-dom");
  EXPECT_TRUE(contains(damaged, "images loaded: " + std::to_string(images - 1) + " of " + std::to_string(images)))
      << damaged.substr(0, 400);
}

TEST(HtmlReport, ARunInProgressAndBadRequests) {
  TempDir dir;
  ASSERT_EQ(pix2pix::cli_tests::prepare_and_train_smoke(dir), "");
  fs::remove(dir / "run/summary.json");  // as while the run goes on
  auto r = run_cli("report " + (dir / "run") + " --html");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(read_file(dir / "run/report.html"), "the run is in progress"));
  r = run_cli("report " + (dir / "nowhere") + " --html");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "is not a pix2pix run directory")) << r.output;
  EXPECT_FALSE(fs::exists(dir / "nowhere/report.html"));
}
