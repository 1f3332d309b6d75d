// Option machinery shared by every subcommand: --help, --config FILE (INI; the command line
// wins), and errors that name the offending option.
#pragma once

#include <boost/program_options.hpp>

#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "pix2pix/common/error.hpp"
#include "pix2pix/common/option_range.hpp"

namespace pix2pix::cli {

namespace po = boost::program_options;

// A malformed command line or config file: main() prints it with a hint and exits with 2.
using UsageError = pix2pix::UsageError;

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

// What an error says to a person: its message; LibTorch's without the stack trace (the first line
// of what_without_backtrace, "out of memory: " before an allocation that failed), OpenCV's as its
// description and function, never the raw trace of either library.
std::string error_message(const std::exception& error);

// The effective options declared in `options` as INI text ("name = value" per line), for
// provenance and run directories; reusable with --config (hidden options are left out).
std::string effective_options(const po::variables_map& vm, const po::options_description& options);
// A parsed value as config.cfg writes it ("0.0002", "true", "a b").
std::string value_text(const boost::any& value);
// The options of `options` given (on the command line or in --config) a value other than their
// default, in declaration order: a run's config.cfg lists every option at its value, so "given"
// alone is not "set".
std::vector<std::string> options_set(const po::variables_map& vm, const po::options_description& options);

// The --config file given to the command ("": none), a file it reads.
std::string config_file(const po::variables_map& vm);

// Throws UsageError unless exactly one of `names` was given.
void require_exactly_one(const po::variables_map& vm, std::initializer_list<const char*> names);

}  // namespace pix2pix::cli
