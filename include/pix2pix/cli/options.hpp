// Option machinery shared by every subcommand: --help, --config FILE (INI; the command line
// wins), and errors that name the offending option.
#pragma once

#include <boost/program_options.hpp>

#include <optional>
#include <string>

#include "pix2pix/common/error.hpp"

namespace pix2pix::cli {

namespace po = boost::program_options;

// A malformed command line or config file: main() prints it with a hint and exits with 2.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(what) {}
};

struct CommandSpec {
  std::string name;      // "prepare"
  std::string synopsis;  // "pix2pix prepare (--aligned DIR | ...) --out FILE [options]"
  std::string summary;   // one paragraph shown by --help
};

// Parses argv[1..argc) of a subcommand. Returns nullopt after printing --help.
// `hidden` options parse like the others but are not listed by --help (test-only switches).
std::optional<po::variables_map> parse_command(const CommandSpec& spec, const po::options_description& options,
                                               const po::positional_options_description& positional, int argc,
                                               char** argv, const po::options_description* hidden = nullptr);

// The effective options declared in `options` as INI text ("name = value" per line), for
// provenance and run directories; reusable with --config (hidden options are left out).
std::string effective_options(const po::variables_map& vm, const po::options_description& options);

// Throws UsageError unless exactly one of `names` was given.
void require_exactly_one(const po::variables_map& vm, std::initializer_list<const char*> names);

}  // namespace pix2pix::cli
