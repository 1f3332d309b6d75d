// One entry point per subcommand; each parses its own options and returns the exit status.
#pragma once

#include <string>

namespace pix2pix::cli {

int run_prepare(int argc, char** argv);
int run_inspect(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_bench_train(int argc, char** argv);  // bench --what train
int run_train(int argc, char** argv);
int run_train_classifier(int argc, char** argv);
int run_report(int argc, char** argv);
int run_evaluate(int argc, char** argv);
int run_translate(int argc, char** argv);
int run_export(int argc, char** argv);
int print_version();
// What --version prints.
std::string version_text();

}  // namespace pix2pix::cli
