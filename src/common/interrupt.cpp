// Async-signal-safe: the handler only stores to lock-free atomics and may call _exit.
#include "pix2pix/common/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace pix2pix {
namespace {
std::atomic<int> g_signal{0};
std::atomic<int> g_settled_status{0};  // See Note [a graceful stop ends together]

void on_signal(int signo) {
  if (g_signal.load() != 0) {
    // SIGUSR1 asks for a graceful stop, and may arrive twice (Slurm's warning forwarded by the
    // batch script and sent to the tasks directly): asking again changes nothing. A second
    // SIGINT/SIGTERM means the user (or Slurm at the time limit) insists.
    if (signo == SIGUSR1) return;
    const int settled = g_settled_status.load();
    _exit(settled != 0 ? settled : 128 + signo);
  }
  g_signal.store(signo);
}
}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // Slurm's --signal=USR1@T (time limit ahead) and `scancel --signal=USR1`: a graceful stop.
  sigaction(SIGUSR1, &action, nullptr);
}

bool interrupt_requested() {
  return g_signal.load() != 0;
}
int interrupt_signal() {
  return g_signal.load();
}
void settle_interrupt(int exit_status) {
  g_settled_status.store(exit_status);
}
void clear_interrupt() {
  g_signal.store(0);
  g_settled_status.store(0);
}

}  // namespace pix2pix

namespace pix2pix {

Interrupted::Interrupted(int signal, const std::string& during)
    : Error("interrupted by signal " + std::to_string(signal) + " while " + during), signal_(signal) {}

void throw_if_interrupted(const std::string& during) {
  const int signal = g_signal.load();
  if (signal != 0) throw Interrupted(signal, during);
}

}  // namespace pix2pix
