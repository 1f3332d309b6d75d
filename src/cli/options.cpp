// Boost.Program_options keeps the first value stored for an option, so storing the command line
// before the config file makes the command line win.
#include "pix2pix/cli/options.hpp"

#include <boost/any.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

namespace pix2pix::cli {

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
    po::store(po::command_line_parser(argc, argv).options(parsed).positional(positional).run(), vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  if (vm.count("help")) {
    std::cout << "usage: " << spec.synopsis << "\n\n" << spec.summary << "\n\n" << all << "\n";
    return std::nullopt;
  }
  if (vm.count("config")) {
    const std::string path = vm["config"].as<std::string>();
    std::ifstream file(path);
    if (!file) throw UsageError("--config " + path + ": cannot read file");
    try {
      po::store(po::parse_config_file(file, options, /*allow_unregistered=*/false), vm);
    } catch (const po::error& e) {
      throw UsageError("--config " + path + ": " + e.what());
    }
  }
  try {
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(e.what());
  }
  return vm;
}

std::string effective_options(const po::variables_map& vm, const po::options_description& options) {
  std::ostringstream out;
  for (const auto& [name, value] : vm) {
    if (options.find_nothrow(name, /*approx=*/false) == nullptr) continue;
    const boost::any& v = value.value();
    out << name << " = ";
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
      out << *d;
    else if (const auto* b = boost::any_cast<bool>(&v))
      out << (*b ? "true" : "false");
    else if (const auto* list = boost::any_cast<std::vector<std::string>>(&v)) {
      for (size_t i = 0; i < list->size(); ++i) out << (i ? " " : "") << (*list)[i];
    } else {
      out << "?";
    }
    out << "\n";
  }
  return out.str();
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
