// `pix2pix report RUN_DIR`: a finished or running run at a glance: its summary and curves.png
// (redrawn from metrics.csv, with the best epoch and the stop marked when summary.json says them).
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>

#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/option_group.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/file_beneath.hpp"
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
    return std::stoll(json.substr(at + quoted.size(), 32));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A line of someone else's file as printed to a terminal: control characters (an escape sequence
// that would move the cursor or retitle the window) shown as '?'.
std::string printable(const std::string& line) {
  std::string out = line;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

}  // namespace

int run_report(int argc, char** argv) {
  const CommandSpec spec{"report", "pix2pix report RUN_DIR [--html]",
                         "Prints a run's summary and redraws RUN_DIR/curves.png from its metrics.csv: validation\n"
                         "PSNR raw and smoothed (the early-stopping curve) with the best epoch and the stop\n"
                         "marked, and the losses. With --html, also RUN_DIR/report.html: one self-contained page\n"
                         "with the summary, the curves, the best and last samples, the evaluations in RUN_DIR,\n"
                         "the options and the library versions. Works on a run in progress too."};
  std::string dir;
  bool html = false;
  OptionGroup options("Options");
  options.optional_text("run-dir", dir, "the run directory (also the first positional argument)").value_name("DIR");
  options.flag("html", html, "also write RUN_DIR/report.html (self-contained: images embedded)");
  po::positional_options_description positional;
  positional.add("run-dir", 1);
  if (!parse_command(spec, options.description(), positional, argc, argv)) return 0;
  if (dir.empty()) throw UsageError("missing RUN_DIR");
  // Everything is read beneath DIR and bounded; what report writes (curves.png, report.html) is
  // renamed into place from a fresh name, so no file of DIR, a link included, is written through.
  // See Note [a run directory is untrusted input].
  if (!open_beneath(dir, "metrics.csv", kMetricsFileLimit, /*must_exist=*/false))
    throw Error(dir + "/metrics.csv does not exist: " + dir + " is not a pix2pix run directory (or has no epoch yet)");
  metrics::CurveMarks marks;
  std::printf("%s\n", dir.c_str());
  if (const auto summary = read_beneath(dir, "summary.json", kTextFileLimit, /*must_exist=*/false)) {
    marks.best_epoch = integer_field(*summary, "best_epoch").value_or(-1);
    marks.stop_epoch = integer_field(*summary, "last_epoch").value_or(-1);
    std::istringstream lines(*summary);
    for (std::string line; std::getline(lines, line);)
      if (line != "{" && line != "}") std::printf("  %s\n", printable(line).c_str());
  } else {
    std::printf("  no summary.json: the run is in progress, or ended before writing it\n");
  }
  const std::string problem = metrics::draw_curves(dir, marks);
  if (!problem.empty()) throw Error("cannot draw " + (fs::path(dir) / "curves.png").string() + ": " + problem);
  std::printf("  curves: %s\n", (fs::path(dir) / "curves.png").c_str());
  if (html) std::printf("  report: %s\n", metrics::write_html_report(dir, version_text()).c_str());
  return 0;
}

}  // namespace pix2pix::cli
