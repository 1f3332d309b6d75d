// Enumerated options ("--norm batch|instance|none"): one table per enum gives both the parser,
// with a uniform error naming the option and the choices, and the name of each value.
#pragma once

#include <initializer_list>
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

}  // namespace pix2pix
