// See Note [options a resume may change] (option_changes.hpp).
#include "pix2pix/train/option_changes.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace pix2pix::train {
namespace {

// Options about this invocation, not the run: never compared.
const std::set<std::string> kNotCompared = {"run-dir", "resume", "overwrite", "config", "accept-changed-options"};

// Options that say how the job runs, not what it learns (names as in config.cfg).
const std::set<std::string> kHowTheJobRuns = {
    "device",
    "comm",
    "collective-timeout",
    "cudnn-benchmark",
    "channels-last",  // a layout, not a value (See Note [channels-last parameters])
    "deterministic",  // the same values, the same bits on GPUs: not what is learned
    "collective-log",
    "tensorboard",
    "threads",
    "check-replicas",
    "progress",
    "max-epochs",
    "keep-last",
    "val-every",
    "val-batch-size",
    "sample-count",
    "quality-targets",
    "bucket-mb",
    "overlap-grad-sync",
    "cache",
    "h5-driver",
    "batch-size",
    "global-batch",
    "init-generator",
    "init-discriminator",  // a resume continues from the checkpoint, not from them
    "data",                // its path: the file's contents are compared as "data-contents"
    // What validation reports besides PSNR. With --es-metric fid or kid the feature network is what
    // early stopping watches, and the Trainer refuses a change of it (run_checkpoints.cpp).
    "val-metrics",
    "val-features",
    "val-features-input",
    "val-features-channels",
    "val-features-size",
    "val-kid-subsets",
    "val-kid-subset-size",
};

// Options added after checkpoints began to record options, with the value the runs before them
// had in effect: absent from an older checkpoint's options, they compare as that value.
const std::map<std::string, std::string> kBeforeTheyExisted = {
    {"ema-decay", "0"},  // no moving average
};

std::vector<std::pair<std::string, std::string>> parse(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find(" = ");
    if (eq != std::string::npos) lines.emplace_back(line.substr(0, eq), line.substr(eq + 3));
  }
  return lines;
}

// Significant digits of a number's text ("0.000133333": 6, "0.0002": 1, "1.5e-05": 2).
int significant_digits(const std::string& text) {
  int digits = 0;
  bool leading = true;
  for (const char c : text.substr(0, text.find_first_of("eE"))) {
    if (c < '0' || c > '9') continue;
    if (c == '0' && leading) continue;
    leading = false;
    ++digits;
  }
  return digits;
}

// The same value: the same text, or a number an older version wrote with six significant digits
// (all %g gives) that `now` rounds to. A shorter text is exact in either version.
// See Note [options as the exact values parsed] (cli/options.cpp).
bool same_value(const std::string& trained, const std::string& now) {
  if (trained == now) return true;
  char* end = nullptr;
  const double value = std::strtod(now.c_str(), &end);
  if (now.empty() || end != now.c_str() + now.size() || significant_digits(trained) != 6) return false;
  char six[32];
  std::snprintf(six, sizeof(six), "%g", value);
  return trained == six;
}

}  // namespace

std::vector<OptionChange> option_changes(const std::string& trained, const std::string& now) {
  std::vector<OptionChange> changes;
  if (trained.empty() || now.empty()) return changes;
  const auto before_lines = parse(trained), now_lines = parse(now);
  const std::map<std::string, std::string> before(before_lines.begin(), before_lines.end());
  const std::map<std::string, std::string> after(now_lines.begin(), now_lines.end());
  const auto add = [&](const std::string& name, const std::string& was, const std::string& is) {
    if (kNotCompared.count(name)) return;
    changes.push_back({"--" + name, was, is, kHowTheJobRuns.count(name) == 0});
  };
  for (const auto& [name, value] : now_lines) {
    const auto it = before.find(name);
    const auto implied = kBeforeTheyExisted.find(name);
    if (it == before.end() && implied != kBeforeTheyExisted.end() && implied->second == value) continue;
    if (it == before.end())
      add(name, "(not set)", value);
    else if (!same_value(it->second, value))
      add(name, it->second, value);
  }
  for (const auto& [name, value] : before_lines)
    if (!after.count(name)) add(name, value, "(not set)");
  return changes;
}

std::string describe_changes(const std::vector<OptionChange>& changes, std::size_t shown) {
  std::string text;
  for (std::size_t i = 0; i < std::min(shown, changes.size()); ++i)
    text += (i ? ", " : "") + changes[i].option + " " + changes[i].before + " -> " + changes[i].now;
  if (changes.size() > shown) text += " and " + std::to_string(changes.size() - shown) + " more";
  return text;
}

}  // namespace pix2pix::train
