// Boost.Program_options keeps the first value stored for an option, so storing the command line
// before the config file makes the command line win.
#include "pix2pix/cli/options.hpp"

#include <c10/util/Exception.h>
#include <boost/any.hpp>
#include <opencv2/core.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "pix2pix/common/file_beneath.hpp"
#include "pix2pix/common/input_file.hpp"
#include "pix2pix/common/memory_budget.hpp"

namespace pix2pix::cli {
namespace {

// A config file is a few hundred bytes of "name = value" lines; anything near this is not one.
constexpr std::int64_t kMaxConfigBytes = 1 << 20;

// The text of a --config file: a readable regular file (a folder or a device is refused before
// it is read) of bounded size, read once.
std::string read_config_file(const std::string& path) {
  const std::int64_t size = require_readable_file(path, "--config");
  if (size > kMaxConfigBytes)
    throw UsageError("--config " + path + ": " + std::to_string(size) + " bytes is not a config file (at most " +
                     std::to_string(kMaxConfigBytes) + ")");
  std::string text = read_regular_file(path, kMaxConfigBytes, "--config");
  // Editors on some systems start UTF-8 files with a byte-order mark, which would become part of
  // the first option's name (an unknown option whose name looks right).
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  return text;
}

// A number the parser would change: Boost reads "1e-400" as 0 and "1e400" as inf without a word.
// Every token given to a floating-point option is read again, and one beyond a double's range
// (or so small it loses precision) is refused naming the option.
void refuse_out_of_range_reals(const po::parsed_options& parsed, const po::options_description& options,
                               const std::string& where) {
  for (const po::option& option : parsed.options) {
    const po::option_description* description = options.find_nothrow(option.string_key, /*approx=*/false);
    if (description == nullptr ||
        dynamic_cast<const po::typed_value<double>*>(description->semantic().get()) == nullptr)
      continue;
    for (const std::string& token : option.value) {
      errno = 0;
      const double value = std::strtod(token.c_str(), nullptr);
      if (errno == ERANGE)
        throw UsageError(where + "--" + option.string_key + " " + token + " is beyond the range of a double (it " +
                         "would be read as " + number_text(value) + ")");
    }
  }
}

// No floating-point option may be inf or nan, whether or not its reader checks a range.
void refuse_non_finite(const po::variables_map& vm) {
  for (const auto& [name, value] : vm) {
    const auto* number = boost::any_cast<double>(&value.value());
    if (number != nullptr && !std::isfinite(*number))
      throw UsageError("--" + name + " must be a finite number, got " + number_text(*number));
  }
}

}  // namespace

std::optional<po::variables_map> parse_command(const CommandSpec& spec, const po::options_description& options,
                                               const po::positional_options_description& positional, int argc,
                                               char** argv, const po::options_description* hidden) {
  po::options_description common("General");
  common.add_options()("help,h", "show this help and exit")(
      "config", po::value<std::string>()->value_name("FILE"),
      "read options from an INI file (name = value per line); the command line wins");
  po::options_description all;
  all.add(options).add(common);
  po::options_description parsed;
  parsed.add(all);
  if (hidden != nullptr) parsed.add(*hidden);

  po::variables_map vm;
  try {
    const po::parsed_options given = po::command_line_parser(argc, argv).options(parsed).positional(positional).run();
    refuse_out_of_range_reals(given, parsed, "");
    po::store(given, vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  if (vm.count("help")) {
    std::cout << "usage: " << spec.synopsis << "\n\n" << spec.summary << "\n\n" << all << "\n";
    return std::nullopt;
  }
  if (vm.count("config")) {
    const std::string path = vm["config"].as<std::string>();
    std::istringstream file;
    try {
      file.str(read_config_file(path));
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
    try {
      const po::parsed_options given = po::parse_config_file(file, options, /*allow_unregistered=*/false);
      refuse_out_of_range_reals(given, options, "--config " + path + ": ");
      po::store(given, vm);
    } catch (const po::error& e) {
      throw UsageError("--config " + path + ": " + e.what());
    }
  }
  refuse_non_finite(vm);  // before the notifiers check ranges: the one message for inf and nan
  try {
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return vm;
}

std::string error_message(const std::exception& error) {
  if (const auto* torch_error = dynamic_cast<const c10::Error*>(&error)) {
    const std::string what = torch_error->what_without_backtrace();
    return (is_allocation_failure(*torch_error) ? "out of memory: " : "") + what.substr(0, what.find('\n'));
  }
  if (const auto* cv_error = dynamic_cast<const cv::Exception*>(&error))
    return "OpenCV: " + cv_error->err + " (in " + cv_error->func + ")";
  return error.what();
}

std::string value_text(const boost::any& v) {
  std::ostringstream out;
  if (const auto* s = boost::any_cast<std::string>(&v))
    out << *s;
  else if (const auto* i = boost::any_cast<int>(&v))
    out << *i;
  else if (const auto* l = boost::any_cast<long>(&v))
    out << *l;
  else if (const auto* ll = boost::any_cast<long long>(&v))
    out << *ll;
  else if (const auto* u = boost::any_cast<unsigned long>(&v))
    out << *u;
  else if (const auto* d = boost::any_cast<double>(&v))
    out << number_text(*d);  // See Note [options as the exact values parsed]
  else if (const auto* b = boost::any_cast<bool>(&v))
    out << (*b ? "true" : "false");
  else if (const auto* list = boost::any_cast<std::vector<std::string>>(&v)) {
    for (size_t i = 0; i < list->size(); ++i) out << (i ? " " : "") << (*list)[i];
  } else {
    out << "?";
  }
  return out.str();
}

std::string effective_options(const po::variables_map& vm, const po::options_description& options) {
  std::string out;
  for (const auto& [name, value] : vm)
    if (options.find_nothrow(name, /*approx=*/false) != nullptr) out += name + " = " + value_text(value.value()) + "\n";
  return out;
}

std::vector<std::string> options_set(const po::variables_map& vm, const po::options_description& options) {
  std::vector<std::string> set;
  for (const auto& option : options.options()) {
    const std::string& name = option->long_name();
    if (!vm.count(name) || vm[name].defaulted()) continue;
    boost::any default_value;
    if (!option->semantic()->apply_default(default_value) || value_text(default_value) != value_text(vm[name].value()))
      set.push_back(name);
  }
  return set;
}

std::string config_file(const po::variables_map& vm) {
  return vm.count("config") ? vm["config"].as<std::string>() : "";
}

void require_exactly_one(const po::variables_map& vm, std::initializer_list<const char*> names) {
  int given = 0;
  std::string list;
  for (const char* name : names) {
    given += vm.count(name) ? 1 : 0;
    list += (list.empty() ? "--" : ", --") + std::string(name);
  }
  if (given != 1) throw UsageError("give exactly one of " + list);
}

}  // namespace pix2pix::cli
