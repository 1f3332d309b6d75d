// pix2pix: git-style dispatch to one subcommand. Reads like a table of contents.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "pix2pix/cli/commands.hpp"
#include "pix2pix/cli/options.hpp"
#include "pix2pix/cli/thread_options.hpp"
#include "pix2pix/common/cxx_runtime.hpp"
#include "pix2pix/common/interrupt.hpp"
#include "pix2pix/common/memory_budget.hpp"
#include "pix2pix/common/threads.hpp"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

const Command kCommands[] = {
    {"prepare", "images in, one HDF5 dataset file out", pix2pix::cli::run_prepare},
    {"inspect", "describe and validate a dataset file", pix2pix::cli::run_inspect},
    {"train", "train an image-to-image GAN (--model: see train --help) with early stopping", pix2pix::cli::run_train},
    {"train-classifier", "train a classifier of B images (the recognition network of the paper)",
     pix2pix::cli::run_train_classifier},
    {"translate", "run a trained generator on images or a dataset split", pix2pix::cli::run_translate},
    {"evaluate", "score a trained generator on a dataset split (PSNR, SSIM, L1)", pix2pix::cli::run_evaluate},
    {"export", "write a trained model as ONNX or as reference-named PyTorch state dicts", pix2pix::cli::run_export},
    {"report", "a run's summary, and its curves.png redrawn", pix2pix::cli::run_report},
    {"bench", "measure training steps, the loader or dataset reads (--what train|loader|read)",
     pix2pix::cli::run_bench},
};

void print_usage(std::FILE* out) {
  std::fprintf(out, "usage: pix2pix <command> [options]   (pix2pix <command> --help for its options)\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-16s %s\n", c.name, c.summary);
  std::fprintf(out, "\n  --version  print the version and the libraries it was built with\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(stdout);
    return 0;
  }
  // Said before anything can crash of it. See Note [two C++ runtimes in one process].
  const pix2pix::CxxRuntime runtime = pix2pix::inspect_cxx_runtime();
  pix2pix::restart_with_whole_runtime(runtime, argv);  // See Note [a program that mends its own runtime]
  const std::string runtime_warning = pix2pix::cxx_runtime_warning(runtime);
  if (!runtime_warning.empty()) std::fprintf(stderr, "%s\n", runtime_warning.c_str());
  if (name == "--version") return pix2pix::cli::print_version();
  // The budget of a process alone (See Note [one thread budget per rank]); a command that starts
  // MPI settles it again with the ranks that share its cores, and says what it was not given.
  const auto threads = pix2pix::apply_thread_budget(pix2pix::decide_thread_budget(
      pix2pix::thread_request_from_environment(0), pix2pix::CoreShare{pix2pix::usable_cores(), 1}));
  if (!threads.warning.empty() && !pix2pix::cli::settles_threads(name))
    std::fprintf(stderr, "%s\n", threads.warning.c_str());
  for (const Command& command : kCommands) {
    if (name != command.name) continue;
    try {
      return command.run(argc - 1, argv + 1);
    } catch (const pix2pix::UsageError& e) {
      std::fprintf(stderr, "pix2pix %s: %s (see pix2pix %s --help)\n", command.name, e.what(), command.name);
      return 2;
    } catch (const pix2pix::Interrupted& e) {
      std::fprintf(stderr, "pix2pix %s: %s\n", command.name, e.what());
      return 128 + e.signal();
    } catch (const std::bad_alloc&) {
      // Sized allocations say what they were for (common/memory_budget.hpp); this is any other.
      std::fprintf(stderr, "pix2pix %s: error: out of memory (%s available now)\n", command.name,
                   pix2pix::format_bytes(pix2pix::available_memory().bytes).c_str());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pix2pix %s: error: %s\n", command.name, pix2pix::cli::error_message(e).c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "pix2pix: unknown command '%s'\n\n", name.c_str());
  print_usage(stderr);
  return 2;
}
