// See Note [test fault injection] (test_faults.hpp).
#include "pix2pix/train/test_faults.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"

namespace pix2pix::train {

int parse_test_signal(const std::string& text) {
  const Choices<int> names = {{"INT", SIGINT},   {"TERM", SIGTERM}, {"USR1", SIGUSR1},
                              {"USR2", SIGUSR2}, {"HUP", SIGHUP},   {"KILL", SIGKILL}};
  std::string name = text.rfind("SIG", 0) == 0 ? text.substr(3) : text;
  for (const auto& [choice, number] : names)
    if (name == choice || name == std::to_string(number)) return number;
  return parse_choice(name, "--test-signal", names);  // throws, listing the names
}

void raise_test_signal(int signal) {
  std::raise(signal);
}

void die_for_test(int rank, const std::string& what) {
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::fprintf(stderr, "rank %d: %s: dying now (test fault injection) at unix time %.3f\n", rank, what.c_str(), now);
  std::fflush(stderr);
  std::raise(SIGKILL);
  std::abort();  // not reached: SIGKILL cannot be caught
}

}  // namespace pix2pix::train
