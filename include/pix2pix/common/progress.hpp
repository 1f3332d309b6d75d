// Progress reporting for long loops: a redrawn bar on a terminal, periodic plain lines otherwise.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace pix2pix {

class Progress {
 public:
  // `label` prefixes every line; `total` is the expected number of items (0 = unknown).
  Progress(std::string label, std::int64_t total, std::FILE* out = stderr);
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
  bool is_terminal_;
  bool finished_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace pix2pix
