// See Note [options a resume may change] (option_changes.hpp).
#include "pix2pix/train/option_changes.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

namespace pix2pix::train {
namespace {

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

std::vector<OptionChange> option_changes(const std::string& trained, const std::string& now, const OptionRoles& roles) {
  std::vector<OptionChange> changes;
  if (trained.empty() || now.empty()) return changes;
  const auto before_lines = parse(trained), now_lines = parse(now);
  const std::map<std::string, std::string> before(before_lines.begin(), before_lines.end());
  const std::map<std::string, std::string> after(now_lines.begin(), now_lines.end());
  const auto role_of = [&](const std::string& name) {
    const auto it = roles.find(name);
    return it == roles.end() ? OptionRole{} : it->second;
  };
  const auto add = [&](const std::string& name, const std::string& was, const std::string& is) {
    const OptionRole::Kind kind = role_of(name).kind;
    if (kind == OptionRole::this_invocation) return;
    changes.push_back({"--" + name, was, is, kind == OptionRole::learned});
  };
  for (const auto& [name, value] : now_lines) {
    const auto it = before.find(name);
    if (it == before.end() && role_of(name).before_it_existed == value) continue;
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
