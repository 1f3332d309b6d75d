// Enumerated options ("--norm batch|instance|none"): one table per enum gives both the parser,
// with a uniform error naming the option and the choices, and the name of each value.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "pix2pix/common/error.hpp"

namespace pix2pix {

template <class Enum>
using Choices = std::initializer_list<std::pair<const char*, Enum>>;

template <class Enum>
Enum parse_choice(const std::string& text, const char* option, Choices<Enum> choices) {
  std::string names;
  for (const auto& [name, value] : choices) {
    if (text == name) return value;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw UsageError(std::string(option) + " must be one of " + names + "; got '" + text + "'");
}

// The first name listed for `value` (later entries may be aliases).
template <class Enum>
std::string choice_name(Enum value, Choices<Enum> choices) {
  for (const auto& [name, v] : choices)
    if (v == value) return name;
  return "?";
}

// "on" | "off" | "auto": true, false, or nullopt for "the program decides" (--channels-last,
// --overlap-grad-sync, --cudnn-benchmark).
inline const Choices<std::optional<bool>> kOnOffAuto = {{"on", true}, {"off", false}, {"auto", std::nullopt}};
inline std::optional<bool> parse_on_off_auto(const std::string& text, const char* option) {
  return parse_choice(text, option, kOnOffAuto);
}
// The name parse_on_off_auto takes for `value`: what a start-up line says was asked.
inline std::string on_off_auto_name(std::optional<bool> value) {
  return choice_name(value, kOnOffAuto);
}

}  // namespace pix2pix
