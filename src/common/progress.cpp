// Progress bar: redraw at most 10 times a second on a terminal; elsewhere (logs, CI) one line
// every 10 seconds so that batch logs stay short.
#include "pix2pix/common/progress.hpp"

#include <unistd.h>

#include <algorithm>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/stopwatch.hpp"

namespace pix2pix {

std::optional<ProgressStyle> parse_progress_style(const std::string& text) {
  return parse_choice<std::optional<ProgressStyle>>(text, "--progress",
                                                    {{"auto", std::nullopt},
                                                     {"bar", ProgressStyle::bar},
                                                     {"lines", ProgressStyle::lines},
                                                     {"none", ProgressStyle::none}});
}

Progress::Progress(std::string label, std::int64_t total, std::FILE* out, std::optional<ProgressStyle> style)
    : label_(std::move(label)),
      total_(total),
      out_(out),
      style_(style.value_or(isatty(fileno(out)) != 0 ? ProgressStyle::bar : ProgressStyle::lines)),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() {
  finish();
}

double Progress::seconds() const {
  return seconds_since(start_);
}

bool Progress::draws_next() const {
  if (style_ == ProgressStyle::none) return false;
  const auto interval =
      style_ == ProgressStyle::bar ? std::chrono::milliseconds(100) : std::chrono::milliseconds(10000);
  return std::chrono::steady_clock::now() - last_draw_ >= interval;
}

void Progress::advance(std::int64_t items) {
  done_ += items;
  if (draws_next()) {
    last_draw_ = std::chrono::steady_clock::now();
    draw(false);
  }
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  if (style_ != ProgressStyle::none) draw(true);
}

void Progress::draw(bool final_line) {
  const double secs = std::max(seconds(), 1e-9);
  const double rate = static_cast<double>(done_) / secs;
  if (style_ == ProgressStyle::bar) {
    const int width = 30;
    const double frac = total_ > 0 ? std::min(1.0, static_cast<double>(done_) / total_) : 0.0;
    const int filled = static_cast<int>(frac * width);
    const double eta = rate > 0 && total_ > done_ ? static_cast<double>(total_ - done_) / rate : 0.0;
    std::fprintf(out_, "\r%s [%-*s] %lld/%lld %.0f/s ETA %.0fs %s\033[K", label_.c_str(), width,
                 std::string(filled, '#').c_str(), static_cast<long long>(done_), static_cast<long long>(total_), rate,
                 eta, status_.c_str());
    if (final_line) std::fprintf(out_, "\n");
  } else {
    std::fprintf(out_, "%s: %lld/%lld done, %.1f s, %.0f/s %s\n", label_.c_str(), static_cast<long long>(done_),
                 static_cast<long long>(total_), secs, rate, status_.c_str());
  }
  std::fflush(out_);
}

}  // namespace pix2pix
