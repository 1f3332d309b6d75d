// `pix2pix report RUN_DIR`: a finished or running run at a glance: its summary and curves.png
// (redrawn from metrics.csv, with the best epoch and the stop marked when summary.json says them).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/options.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/metrics/curves.hpp"
#include "pix2pix/metrics/html_report.hpp"

namespace pix2pix::cli {
namespace {

namespace fs = std::filesystem;

// The integer value of `"key": N` in summary.json (which we write one field per line).
std::optional<std::int64_t> integer_field(const std::string& json, const std::string& key) {
  const std::string quoted = "\"" + key + "\":";
  const auto at = json.find(quoted);
  if (at == std::string::npos) return std::nullopt;
  try {
    return std::stoll(json.substr(at + quoted.size()));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

int run_report(int argc, char** argv) {
  const CommandSpec spec{"report", "pix2pix report RUN_DIR [--html]",
                         "Prints a run's summary and redraws RUN_DIR/curves.png from its metrics.csv: validation\n"
                         "PSNR raw and smoothed (the early-stopping curve) with the best epoch and the stop\n"
                         "marked, and the losses. With --html, also RUN_DIR/report.html: one self-contained page\n"
                         "with the summary, the curves, the best and last samples, the evaluations in RUN_DIR,\n"
                         "the options and the library versions. Works on a run in progress too."};
  po::options_description options("Options");
  options.add_options()("run-dir", po::value<std::string>()->value_name("DIR"),
                        "the run directory (also the first positional argument)")(
      "html", po::bool_switch(), "also write RUN_DIR/report.html (self-contained: images embedded)");
  po::positional_options_description positional;
  positional.add("run-dir", 1);
  const auto parsed = parse_command(spec, options, positional, argc, argv);
  if (!parsed) return 0;
  if (!parsed->count("run-dir")) throw UsageError("missing RUN_DIR");
  const std::string dir = (*parsed)["run-dir"].as<std::string>();
  const fs::path csv = fs::path(dir) / "metrics.csv", summary_path = fs::path(dir) / "summary.json";
  std::error_code ec;
  if (!fs::is_regular_file(csv, ec))
    throw Error(csv.string() + " does not exist: " + dir + " is not a pix2pix run directory (or has no epoch yet)");

  // curves.png is the one file report writes: never one it reads (a link to metrics.csv, say).
  const bool html = (*parsed)["html"].as<bool>();
  const InputFiles read({csv.string(), summary_path.string()});
  read.refuse("report: " + dir, (fs::path(dir) / "curves.png").string());
  if (html) read.refuse("report: " + dir, (fs::path(dir) / "report.html").string());
  metrics::CurveMarks marks;
  std::printf("%s\n", dir.c_str());
  std::ifstream summary_file(summary_path);
  if (summary_file) {
    std::ostringstream text;
    text << summary_file.rdbuf();
    const std::string summary = text.str();
    marks.best_epoch = integer_field(summary, "best_epoch").value_or(-1);
    marks.stop_epoch = integer_field(summary, "last_epoch").value_or(-1);
    std::istringstream lines(summary);
    for (std::string line; std::getline(lines, line);)
      if (line != "{" && line != "}") std::printf("  %s\n", line.c_str());
  } else {
    std::printf("  no summary.json: the run is in progress, or ended before writing it\n");
  }
  const std::string problem = metrics::draw_curves(dir, marks);
  // The page draws its own curves: without gnuplot it is still whole.
  if (!problem.empty() && !html) throw Error("cannot draw " + (fs::path(dir) / "curves.png").string() + ": " + problem);
  if (problem.empty())
    std::printf("  curves: %s\n", (fs::path(dir) / "curves.png").c_str());
  else
    std::fprintf(stderr, "warning: no curves.png (%s); report.html draws its curves itself\n", problem.c_str());
  if (html) std::printf("  report: %s\n", metrics::write_html_report(dir, version_text()).c_str());
  return 0;
}

}  // namespace pix2pix::cli
