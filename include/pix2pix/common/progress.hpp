// Progress reporting for long loops: a redrawn bar on a terminal, periodic plain lines otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace pix2pix {

// --progress: a bar redrawn in place (10 times a second at most), a plain line every 10 s (for
// logs: under mpirun a rank's stdout is a terminal even when the job's output goes to a file,
// and a batch log would fill with redraws), or nothing. Unset (auto): a bar on a terminal,
// lines otherwise.
enum class ProgressStyle { bar, lines, none };
std::optional<ProgressStyle> parse_progress_style(const std::string& text);  // auto → nullopt

class Progress {
 public:
  // `label` prefixes every line; `total` is the expected number of items (0 = unknown).
  Progress(std::string label, std::int64_t total, std::FILE* out = stderr,
           std::optional<ProgressStyle> style = std::nullopt);
  void advance(std::int64_t items = 1);
  // Whether the next advance() redraws (so that a caller reads what it shows only then).
  bool draws_next() const;
  // Text shown after the counts (losses, rates); kept until replaced.
  void set_status(std::string status) { status_ = std::move(status); }
  // Prints the final state; called by the destructor if not called before.
  void finish();
  ~Progress();

  double seconds() const;
  std::int64_t done() const { return done_; }

 private:
  void draw(bool final_line);

  std::string label_;
  std::string status_;
  std::int64_t total_;
  std::int64_t done_ = 0;
  std::FILE* out_;
  ProgressStyle style_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace pix2pix
