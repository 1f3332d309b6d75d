// See Note [test fault injection] (test_faults.hpp).
#include "pix2pix/train/test_faults.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "pix2pix/common/choices.hpp"
#include "pix2pix/common/error.hpp"
#include "pix2pix/common/interrupt.hpp"

namespace pix2pix::train {

int parse_test_signal(const std::string& text) {
  const Choices<int> names = {{"INT", SIGINT},   {"TERM", SIGTERM}, {"USR1", SIGUSR1},
                              {"USR2", SIGUSR2}, {"HUP", SIGHUP},   {"KILL", SIGKILL}};
  std::string name = text.rfind("SIG", 0) == 0 ? text.substr(3) : text;
  for (const auto& [choice, number] : names)
    if (name == choice || name == std::to_string(number)) return number;
  return parse_choice(name, "--test-signal", names);  // throws, listing the names
}

bool TestFaults::any() const {
  return kill_at_step || kill_in_checkpoint || signal_at_step || signal_in_setup || signal_in_validation ||
         signal_in_checkpoint;
}

void TestFaults::at(RunMoment moment, std::int64_t when, int my_rank,
                    const std::function<void(const std::string& what)>& write_half_and_die) const {
  switch (moment) {
    case RunMoment::cache_block:
      // Once: the signal arrives after the first block.
      if (signal_in_setup && here(my_rank) && !interrupt_requested()) raise_test_signal(signal);
      return;
    case RunMoment::before_step:
      if (!here(my_rank)) return;
      if (kill_at_step == when) die_for_test(my_rank, "--test-kill-at-step " + std::to_string(when));
      // As `scancel --signal=USR1` (or Ctrl-C, or Slurm's TERM) would.
      if (signal_at_step == when) raise_test_signal(signal);
      return;
    case RunMoment::validation:
      if (here(my_rank) && signal_in_validation == when) raise_test_signal(signal);
      return;
    case RunMoment::checkpoint:  // rank 0 writes it, whatever --test-rank says
      if (signal_in_checkpoint == when) raise_test_signal(signal);
      if (kill_in_checkpoint == when && write_half_and_die)
        write_half_and_die("--test-kill-in-checkpoint " + std::to_string(when));
      return;
  }
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
