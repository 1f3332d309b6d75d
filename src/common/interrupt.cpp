// Async-signal-safe: the handler only stores to lock-free atomics and may call _exit.
#include "pix2pix/common/interrupt.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>

namespace pix2pix {
namespace {
std::atomic<int> g_signal{0};

void on_signal(int signo) {
  if (g_signal.load() != 0) _exit(128 + signo);  // second signal: the user insists
  g_signal.store(signo);
}
}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool interrupt_requested() {
  return g_signal.load() != 0;
}
int interrupt_signal() {
  return g_signal.load();
}
void clear_interrupt() {
  g_signal.store(0);
}

}  // namespace pix2pix
